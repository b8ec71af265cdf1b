"""``openenv-gym record``: record episodes of a policy into a Parquet trajectory directory.

Usage::

    openenv-gym record --env-id openenv/CartPole-v1 --episodes 20 --out runs/cartpole
    openenv-gym record --base-url http://127.0.0.1:8000 --episodes 5 --out runs/remote \\
                       [--policy random | package.module:function] [--seed 0] \\
                       [--info-key lives ...] [--max-episode-steps N] [--chunk-size N] \\
                       [--push-to-hub USER/REPO] [--no-progress]
    openenv-gym record --config experiment.yaml --episodes 20 --out runs/x

With ``--config`` the env, the number of envs and the wrappers come from an experiment config
(:mod:`openenv_gym.config`); a ``record`` wrapper is appended when the config has none. Either
way the resolved config is saved as ``experiment.yaml`` beside the data. With ``num_envs > 1``
the recording stops once N episodes ended over all sub-envs (more may end in the same step; the
others' open episodes are kept, unfinished); the summary line counts what the data holds: the
episodes that ended, all steps (rows), and how many of those are of unfinished episodes.

The policy is random by default; ``--policy package.module:function`` names a function
``(observation, action_space) -> action``. Progress goes to stderr (a tqdm bar when tqdm is
installed, else one line per episode); the last stdout line sums up the recording. Read it
back with ``datasets.load_dataset("parquet", data_dir=DIR)``,
:func:`openenv_gym.trajectories.trajectory_arrays` or :func:`openenv_gym.trajectories.to_minari`.

Example:
    >>> from openenv_gym.cli.program import build_parser
    >>> args = build_parser().parse_args(["record", "--episodes", "3", "--out", "runs/x"])
    >>> args.env_id, args.episodes, args.policy
    (None, 3, 'random')
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any, Final

import numpy as np

from openenv_gym.argument_types import json_object, positive_int
from openenv_gym.cli.command import EXIT_OK, Command, UsageError

DEFAULT_ENV_ID = "openenv/CartPole-v1"
REMOTE_ENV_ID = "openenv/Remote-v0"

Policy = Callable[[Any, Any], Any]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``record`` options."""
    parser.add_argument(
        "--env-id",
        default=None,
        metavar="ID",
        help=f"a Gymnasium id (default: {DEFAULT_ENV_ID}, or {REMOTE_ENV_ID} with --base-url)",
    )
    parser.add_argument(
        "--base-url",
        default=None,
        metavar="URL",
        help="a running OpenEnv server to record from (default: an embedded server)",
    )
    parser.add_argument(
        "--env-kwargs",
        type=json_object,
        default=None,
        metavar="JSON",
        help='gym.make keyword arguments as a JSON object, e.g. \'{"game": "breakout"}\'',
    )
    parser.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="an experiment config (YAML or JSON: env, num_envs, wrappers; see "
        "openenv_gym.config); not combined with --env-id, --base-url, --env-kwargs, "
        "--max-episode-steps",
    )
    parser.add_argument(
        "--episodes",
        type=positive_int,
        required=True,
        metavar="N",
        help="number of episodes to play and record (required)",
    )
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="a new output directory (required)"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the first reset (default: the config's seed, or 0)",
    )
    parser.add_argument(
        "--policy",
        default="random",
        metavar="SPEC",
        help="'random' or package.module:function taking (observation, action_space) "
        "(default: random)",
    )
    parser.add_argument(
        "--info-key",
        action="append",
        default=[],
        metavar="KEY",
        help="an info field to record (float64); repeat for more (with --config: for the "
        "record wrapper appended when the config has none)",
    )
    parser.add_argument(
        "--max-episode-steps",
        type=positive_int,
        default=None,
        metavar="N",
        help="truncate each episode after N steps (default: the env's own limit)",
    )
    parser.add_argument(
        "--chunk-size",
        type=positive_int,
        default=10_000,
        metavar="N",
        help="steps per Parquet file; bounds the memory used while recording (default: 10000)",
    )
    parser.add_argument(
        "--push-to-hub",
        default=None,
        metavar="REPO",
        help="then push the recording to this Hugging Face dataset repo (USER/NAME)",
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="no progress bar or per-episode lines"
    )


def load_policy(spec: str) -> Policy | None:
    """``None`` for ``"random"``, else the function ``package.module:function`` names."""
    from openenv_gym.errors import WrapperConfigError
    from openenv_gym.wrappers.shaping import import_callable

    if spec == "random":
        return None
    try:
        return import_callable(spec, "--policy")
    except WrapperConfigError as exc:
        raise UsageError(f"{exc}; expected 'random' or package.module:function") from None


class _Progress:
    """A tqdm bar over episodes when tqdm is installed, else one plain line per episode."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.enabled, self.total, self.done = enabled, total, 0
        self._bar: Any = None
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self._bar = tqdm(total=total, unit="episode", file=sys.stderr, dynamic_ncols=True)

    def update(self, episode_return: float, steps: int) -> None:
        self.done += 1
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.set_postfix(ret=f"{episode_return:.1f}", steps=steps)
            self._bar.update(1)
        else:
            print(
                f"episode {self.done}/{self.total}: return {episode_return:.2f}, {steps} steps",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _experiment(args: argparse.Namespace) -> Any:
    """The experiment to record: the ``--config`` file, or one made of the flags."""
    from openenv_gym.config import load_experiment

    env_flags = {
        "--env-id": args.env_id,
        "--base-url": args.base_url,
        "--env-kwargs": args.env_kwargs,
        "--max-episode-steps": args.max_episode_steps,
    }
    record = {"type": "record", "info_keys": list(args.info_key), "chunk_size": args.chunk_size}
    if args.config is None:
        env: dict[str, Any] = {
            "id": args.env_id or (REMOTE_ENV_ID if args.base_url else DEFAULT_ENV_ID),
            "base_url": args.base_url,
            "kwargs": dict(args.env_kwargs or {}),
            "max_episode_steps": args.max_episode_steps,
        }
        return load_experiment({"env": env, "seed": args.seed, "wrappers": [record]})
    given = [flag for flag, value in env_flags.items() if value is not None]
    if given:
        raise UsageError(
            f"{', '.join(given)} cannot be combined with --config; set them in the config's "
            "env: section"
        )
    cfg = load_experiment(args.config)
    updates: dict[str, Any] = {}
    if args.seed is not None:
        updates["seed"] = args.seed
    if not any(spec.type == "record" for spec in cfg.wrappers):
        data = cfg.model_dump(mode="json")
        data["wrappers"].append(record)
        cfg = load_experiment(data)
    return cfg.model_copy(update=updates)


def _recorder(env: Any) -> Any:
    """The trajectory recorder in a wrapper chain."""
    from openenv_gym.wrappers import RecordTrajectories, VectorRecordTrajectories

    while not isinstance(env, RecordTrajectories | VectorRecordTrajectories):
        env = env.env
    return env


def _act(policy: Policy | None, env: Any, observation: Any, vector: bool) -> Any:
    if policy is None:
        return env.action_space.sample()
    if not vector:
        return policy(observation, env.action_space)
    from openenv_gym.wrappers.episodes import index_observation

    space = env.single_action_space
    return np.stack([policy(index_observation(observation, i), space) for i in range(env.num_envs)])


def _summary(
    episodes: int, rows: int, open_lengths: np.ndarray, chunks: int, out: str, elapsed: float
) -> str:
    """The last stdout line: the episodes that ended and the steps (rows) the data holds;
    with ``num_envs > 1``, how many of those rows belong to episodes left unfinished.

    Example:
        >>> _summary(4, 377, np.array([3, 0, 22, 0]), 1, "runs/x", 1.25)
        'recorded 4 episodes, 377 steps, 1 chunk(s) to runs/x in 1.2s (25 of the steps are \
of 2 unfinished episodes)'
    """
    line = (
        f"recorded {episodes} episodes, {rows} steps, {chunks} chunk(s) to {out} in {elapsed:.1f}s"
    )
    unfinished = int(np.count_nonzero(open_lengths))
    if unfinished:
        line += (
            f" ({int(open_lengths.sum())} of the steps are of {unfinished} unfinished "
            f"episode{'s' if unfinished > 1 else ''})"
        )
    return line


def run(args: argparse.Namespace) -> int:
    """``openenv-gym record``: play, record, report; 0 on success."""
    from gymnasium.vector import AutoresetMode, VectorEnv

    from openenv_gym.config import make_from_config
    from openenv_gym.trajectories import trajectory_files

    policy = load_policy(args.policy)
    cfg = _experiment(args)
    seed = cfg.seed if cfg.seed is not None else 0
    env = make_from_config(cfg, record_to=args.out)
    vector = isinstance(env, VectorEnv)
    writer = _recorder(env).writer
    writer.metadata.update({"policy": args.policy, "episodes": args.episodes})
    progress = _Progress(args.episodes, enabled=not args.no_progress)
    env.action_space.seed(seed)
    num_envs = env.num_envs if isinstance(env, VectorEnv) else 1
    returns, lengths = np.zeros(num_envs), np.zeros(num_envs, dtype=np.int64)
    resetting = np.zeros(num_envs, dtype=bool)
    next_step_reset = vector and env.metadata.get("autoreset_mode") in (
        AutoresetMode.NEXT_STEP,
        None,
    )
    ended = 0
    start = time.perf_counter()
    try:
        observation, _ = env.reset(seed=seed)
        while ended < args.episodes:
            observation, reward, terminated, truncated, _ = env.step(
                _act(policy, env, observation, vector)
            )
            # With next-step autoreset, the step after an end is a reset: no transition.
            stepped = ~resetting
            returns[stepped] += np.asarray(reward, dtype=np.float64).reshape(num_envs)[stepped]
            lengths[stepped] += 1
            done = np.logical_or(terminated, truncated).reshape(num_envs) & stepped
            if next_step_reset:
                resetting = done
            for i in np.flatnonzero(done):
                if ended < args.episodes:
                    progress.update(float(returns[i]), int(lengths[i]))
                ended += 1
                returns[i], lengths[i] = 0.0, 0
            if not vector and done[0] and ended < args.episodes:
                observation, _ = env.reset()
    finally:
        progress.close()
        env.close()
    elapsed = time.perf_counter() - start
    chunks = len(trajectory_files(args.out))
    print(_summary(writer.episodes_ended, writer.steps_written, lengths, chunks, args.out, elapsed))
    if args.push_to_hub:
        from openenv_gym.trajectories import push_to_hub

        print(f"pushed to {push_to_hub(args.out, args.push_to_hub)}")
    return EXIT_OK


COMMAND: Final = Command(
    name="record",
    help="record episodes of a policy to Parquet (loadable with datasets)",
    add_arguments=add_arguments,
    run=run,
)
