"""The Atari training row: SB3 PPO on preprocessed Pong, remote against the local anchors.

``python -m benchmarks.atari_training`` trains SB3's PPO (RL-Zoo's Atari hyperparameters,
``CnnPolicy``) for a fixed number of steps on N Pong envs with the same preprocessing (SB3's
``AtariWrapper`` settings and 4 stacked frames) behind each of:

* ``remote``: ``openenv_gym.integrations.sb3.make_vec_env("openenv/Atari-v0", ...)``, the
  preprocessing done on our server (envpool's options), one batched ``VecEnv``;
* ``local-dummy`` / ``local-subproc``: SB3's ``make_atari_env`` on local ale-py in a
  ``DummyVecEnv`` / ``SubprocVecEnv``, with ``VecFrameStack``;
* ``envpool``: ``envpool.make("Pong-v5")`` with the same options behind a small SB3 adapter
  (skipped when envpool is not installed);

and reports wall time and steps/s of each. Then the env alone (random actions, no learner):
preprocessed Pong at N sub-envs, ours (``gym.make_vec``) against envpool with the same
options, each with the CPU time per sub-env step of every process involved (ours: this one
and the embedded server's workers; a load-independent cost, where steps/s on a busy machine
mostly measure the scheduler), and the bytes one step of one sub-env puts on the wire (counted by a
:class:`~openenv_gym.bench.link_proxy.LinkProxy` between the vector env and the server).

Example:
    >>> PPO_SETTINGS["n_epochs"], ATARI_OPTIONS["stack_num"]
    (4, 4)
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

from openenv_gym.argument_types import positive_int
from openenv_gym.bench.targets import MET, NOT_MET
from openenv_gym.envs.atari.preprocessing import ATARI_WRAPPER_OPTIONS

#: SB3's AtariWrapper settings and a 4-frame stack, as our server's (envpool's) options,
#: with ALE v5's sticky actions as the local anchors have them.
ATARI_OPTIONS: Final[dict[str, Any]] = {
    **ATARI_WRAPPER_OPTIONS,
    "repeat_action_probability": 0.25,
}
#: RL-Zoo's PPO hyperparameters for Atari (schedules are linear from these values).
PPO_SETTINGS: Final[dict[str, Any]] = {
    "n_steps": 128,
    "n_epochs": 4,
    "batch_size": 256,
    "learning_rate": 2.5e-4,
    "clip_range": 0.1,
    "vf_coef": 0.5,
    "ent_coef": 0.01,
}
CONTENDERS: Final = ("remote", "local-dummy", "local-subproc", "envpool")


@dataclass(frozen=True)
class Row:
    """One measured line: what, wall seconds, steps/s, and a note."""

    name: str
    seconds: float
    steps_per_s: float
    note: str = ""


def _linear(initial: float) -> Callable[[float], float]:
    return lambda progress_remaining: progress_remaining * initial


def remote_vec(n_envs: int, seed: int) -> Any:
    """Our batched SB3 ``VecEnv`` of preprocessed Pong (an embedded server)."""
    from openenv_gym.integrations.sb3 import make_vec_env

    kwargs = {"game": "pong", **ATARI_OPTIONS}
    return make_vec_env("openenv/Atari-v0", n_envs=n_envs, seed=seed, env_kwargs=kwargs)


def local_pong_env(**kwargs: Any) -> Any:
    """``gym.make("ALE/Pong-v5", **kwargs)``, registering ale-py's ids first (in any process)."""
    import ale_py
    import gymnasium as gym

    gym.register_envs(ale_py)
    return gym.make("ALE/Pong-v5", **kwargs)


def local_vec(n_envs: int, seed: int, *, subproc: bool) -> Any:
    """SB3's ``make_atari_env`` on local ale-py, with ``VecFrameStack``."""
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecFrameStack

    venv = make_atari_env(
        local_pong_env,  # a callable: SubprocVecEnv's workers register ALE's ids themselves
        n_envs=n_envs,
        seed=seed,
        env_kwargs={"frameskip": 1},
        vec_env_cls=SubprocVecEnv if subproc else DummyVecEnv,
    )
    return VecFrameStack(venv, n_stack=4)


def envpool_make(n_envs: int, seed: int) -> Any:
    """envpool's Pong with the same options (its Gymnasium API)."""
    import envpool

    return envpool.make(
        "Pong-v5", env_type="gymnasium", num_envs=n_envs, seed=seed, **ATARI_OPTIONS
    )


def envpool_vec(n_envs: int, seed: int) -> Any:
    """envpool behind a minimal SB3 ``VecEnv`` adapter (same-step resets, as SB3 expects)."""
    from stable_baselines3.common.vec_env import VecEnv

    pool = envpool_make(n_envs, seed)

    class EnvpoolVecEnv(VecEnv):
        def __init__(self) -> None:
            super().__init__(n_envs, pool.observation_space, pool.action_space)
            self._actions = np.zeros(n_envs, np.int32)

        def reset(self) -> Any:
            obs, _ = pool.reset()
            return obs

        def step_async(self, actions: np.ndarray) -> None:
            self._actions = np.asarray(actions, np.int32)

        def step_wait(self) -> Any:
            obs, rewards, terminated, truncated, _ = pool.step(self._actions)
            dones = terminated | truncated
            infos: list[dict[str, Any]] = [{} for _ in range(n_envs)]
            ended = np.flatnonzero(dones)
            if ended.size:
                for i in ended.tolist():
                    infos[i]["terminal_observation"] = obs[i].copy()
                    infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
                obs[ended], _ = pool.reset(ended)
            return obs, rewards.astype(np.float32), dones, infos

        def close(self) -> None:
            pool.close()

        def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
            return [getattr(self, attr_name, None)] * n_envs

        def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
            setattr(self, attr_name, value)

        def env_method(self, method_name: str, *args: Any, indices: Any = None, **kw: Any) -> Any:
            return [None] * n_envs

        def env_is_wrapped(self, wrapper_class: Any, indices: Any = None) -> list[bool]:
            return [False] * n_envs

    return EnvpoolVecEnv()


def make_contender(name: str, n_envs: int, seed: int) -> Any:
    """The SB3 ``VecEnv`` of one contender (see :data:`CONTENDERS`)."""
    if name == "remote":
        return remote_vec(n_envs, seed)
    if name in ("local-dummy", "local-subproc"):
        return local_vec(n_envs, seed, subproc=name == "local-subproc")
    if name == "envpool":
        return envpool_vec(n_envs, seed)
    raise ValueError(f"expected a contender of {CONTENDERS}, got {name!r}")


def train(name: str, n_envs: int, timesteps: int, seed: int = 0) -> Row:
    """Train PPO for ``timesteps`` on one contender; the wall time of ``learn``."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor

    venv = make_contender(name, n_envs, seed)
    if not name.startswith("local"):  # make_atari_env has its Monitor already
        venv = VecMonitor(venv)
    try:
        s = PPO_SETTINGS
        settings = {
            **s,
            "batch_size": min(s["batch_size"], s["n_steps"] * n_envs),
            "learning_rate": _linear(s["learning_rate"]),
            "clip_range": _linear(s["clip_range"]),
        }
        model = PPO("CnnPolicy", venv, seed=seed, device="cpu", verbose=0, **settings)
        start = time.perf_counter()
        model.learn(total_timesteps=timesteps)
        seconds = time.perf_counter() - start
        return Row(f"PPO {name}", seconds, model.num_timesteps / seconds)
    finally:
        venv.close()


def tree_cpu_seconds() -> float | None:
    """User + system CPU seconds of this process and every process below it (an embedded
    server's workers) so far, from ``/proc``; ``None`` where there is no ``/proc``."""
    from openenv_gym.bench.ray_cluster import descendants

    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = 0
    try:
        for pid in (os.getpid(), *descendants(os.getpid())):
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # ended in between
            total += int(fields[11]) + int(fields[12])  # utime, stime
    except OSError:
        return None
    return total / ticks


def _random_steps(envs: Any, n_envs: int, steps: int, n_actions: int) -> tuple[float, str]:
    """Wall seconds of ``steps`` random steps, and a note with their CPU µs per sub-env step."""
    rng = np.random.default_rng(0)
    envs.reset()
    cpu_start = tree_cpu_seconds()
    start = time.perf_counter()
    for _ in range(steps):
        envs.step(rng.integers(n_actions, size=n_envs))
    seconds = time.perf_counter() - start
    cpu_end = tree_cpu_seconds()
    if cpu_start is None or cpu_end is None:
        return seconds, ""
    return seconds, f"{(cpu_end - cpu_start) / (steps * n_envs) * 1e6:.0f} CPU µs/step"


#: The env-only target of issue 36: ours >= this times envpool's steps/s, at the median of
#: the pairs (preprocessed Pong, N=8, the same options).
ENV_ONLY_TARGET: Final = 0.9


def pair_orders(pairs: int) -> list[tuple[str, str]]:
    """The order of each env-only pair: ours first, then envpool first, in turn, so neither
    always runs first (on a fresh machine state, or after the other's servers stopped).

    Example:
        >>> pair_orders(3)
        [('ours', 'envpool'), ('envpool', 'ours'), ('ours', 'envpool')]
    """
    return [("ours", "envpool") if k % 2 == 0 else ("envpool", "ours") for k in range(pairs)]


def ratio_verdict(ratios: Sequence[float], target: float = ENV_ONLY_TARGET) -> str:
    """The median of the pairs' ours/envpool ratios against ``target``, with the range.

    Example:
        >>> ratio_verdict([0.93, 0.85, 0.88])
        'median 0.88x of 3 pairs (0.85-0.93x); target >= 0.9x: not met'
        >>> ratio_verdict([0.95])
        'median 0.95x of 1 pair (0.95-0.95x); target >= 0.9x: met'
    """
    median = statistics.median(ratios)
    pairs = f"{len(ratios)} pair" + ("s" if len(ratios) != 1 else "")
    verdict = MET if median >= target else NOT_MET
    return (
        f"median {median:.2f}x of {pairs} ({min(ratios):.2f}-{max(ratios):.2f}x); "
        f"target >= {target:g}x: {verdict}"
    )


def _ours_steps(n_envs: int, steps: int) -> tuple[float, str]:
    import gymnasium as gym

    import openenv_gym  # noqa: F401  (registers the ids)

    envs = gym.make_vec("openenv/Atari-v0", num_envs=n_envs, game="pong", **ATARI_OPTIONS)
    try:
        return _random_steps(envs, n_envs, steps, 6)
    finally:
        envs.close()


def _envpool_steps(n_envs: int, steps: int) -> tuple[float, str]:
    pool = envpool_make(n_envs, 0)
    try:
        return _random_steps(pool, n_envs, steps, 6)
    finally:
        pool.close()


def env_only(n_envs: int, steps: int, pairs: int = 1) -> list[Row]:
    """Random-action steps/s of preprocessed Pong, ours (``gym.make_vec``) and envpool,
    ``pairs`` times, in the orders of :func:`pair_orders`. The second row of each pair notes
    ours/envpool; a last row gives the median ratio against the target (:func:`ratio_verdict`).
    Without envpool, ours runs once and the envpool row says why it was skipped."""
    runners = {"ours": _ours_steps, "envpool": _envpool_steps}
    rows: list[Row] = []
    ratios: list[float] = []
    for order in pair_orders(pairs):
        speeds: dict[str, float] = {}
        for name in order:
            label = f"env only, {name} N={n_envs}"
            try:
                seconds, cpu = runners[name](n_envs, steps)
            except ImportError as exc:  # envpool not installed (the first pair runs ours first)
                rows.append(Row(label, float("nan"), float("nan"), f"skipped: {exc}"))
                return rows
            speeds[name] = n_envs * steps / seconds
            note = cpu
            if len(speeds) == 2:
                ratio = speeds["ours"] / speeds["envpool"]
                ratios.append(ratio)
                note = f"{cpu}; ours {ratio:.2f}x" if cpu else f"ours {ratio:.2f}x"
            rows.append(Row(label, seconds, speeds[name], note))
    rows.append(
        Row(
            f"env only, ours / envpool N={n_envs}",
            float("nan"),
            float("nan"),
            ratio_verdict(ratios),
        )
    )
    return rows


def wire_bytes(n_envs: int, steps: int) -> list[Row]:
    """Bytes per sub-env step from the server to the client, through a counting proxy: the
    batched vector env (shared memory on this host) and one binary session (as off-host)."""
    import gymnasium as gym

    import openenv_gym  # noqa: F401
    from openenv_gym.bench.link_proxy import LinkProxy
    from openenv_gym.envs.atari import atari_server
    from openenv_gym.server import ServerThread

    frame = ATARI_OPTIONS["stack_num"] * ATARI_OPTIONS["img_height"] * ATARI_OPTIONS["img_width"]
    rows = []
    with ServerThread(atari_server("pong", max_sessions=n_envs + 1, **ATARI_OPTIONS)) as server:
        host, port = server.url.removeprefix("http://").split(":")
        for label, count in ((f"vector env N={n_envs}", n_envs), ("one binary session", 1)):
            proxy = LinkProxy((host, int(port)))
            url = "http://{}:{}".format(*proxy.address)
            if count > 1:
                envs: Any = gym.make_vec("openenv/Atari-v0", num_envs=count, base_url=url)
            else:
                envs = gym.make("openenv/Atari-v0", base_url=url, encoding="binary")
            try:
                envs.reset(seed=0)
                before = proxy.bytes_down
                start = time.perf_counter()
                for _ in range(steps):
                    envs.step(envs.action_space.sample())
                seconds = time.perf_counter() - start
                per_step = (proxy.bytes_down - before) / (steps * count)
            finally:
                envs.close()
                proxy.close()
            rows.append(
                Row(
                    f"wire bytes, {label}",
                    seconds,
                    count * steps / seconds,
                    f"{per_step:.0f} B down per sub-env step (frames: {frame} B)",
                )
            )
    return rows


def render(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table (ratios against the first PPO row that is local)."""
    lines = ["| what | wall s | steps/s | note |", "| --- | ---: | ---: | --- |"]
    for row in rows:
        seconds = "" if math.isnan(row.seconds) else f"{row.seconds:.1f}"
        speed = "" if math.isnan(row.steps_per_s) else f"{row.steps_per_s:.0f}"
        lines.append(f"| {row.name} | {seconds} | {speed} | {row.note} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--timesteps", type=int, default=4096, help="PPO steps per contender")
    parser.add_argument("--n-envs", type=int, default=8)
    parser.add_argument("--env-steps", type=int, default=500, help="env-only steps per env")
    parser.add_argument(
        "--contenders", nargs="*", default=list(CONTENDERS), choices=CONTENDERS, metavar="NAME"
    )
    parser.add_argument(
        "--env-pairs",
        type=positive_int,
        default=1,
        help="env-only pairs of ours and envpool (each pair in the other order; a last row "
        "gives the median ratio against the 0.9x target)",
    )
    parser.add_argument("--no-train", action="store_true", help="only the env-only rows")
    args = parser.parse_args(argv)
    rows: list[Row] = []
    if not args.no_train:
        for name in args.contenders:
            try:
                rows.append(train(name, args.n_envs, args.timesteps))
            except ImportError as exc:
                rows.append(Row(f"PPO {name}", float("nan"), float("nan"), f"skipped: {exc}"))
            print(render(rows[-1:]).splitlines()[-1], flush=True)
    rows += env_only(args.n_envs, args.env_steps, args.env_pairs)
    rows += wire_bytes(args.n_envs, min(args.env_steps, 200))
    print(render(rows))
    return 0


__all__ = [
    "ATARI_OPTIONS",
    "CONTENDERS",
    "ENV_ONLY_TARGET",
    "PPO_SETTINGS",
    "Row",
    "env_only",
    "main",
    "pair_orders",
    "ratio_verdict",
    "train",
    "tree_cpu_seconds",
]
