"""The variable-step-time measurement: the pool against the synchronous vector env.

An official-package server (``openenv``, the protocol's reference peer, under uvicorn on
127.0.0.1, in a child process) whose steps sleep an exponential time (mean ``--mean-ms``;
each session steps in a thread of its own, so sessions wait concurrently). A learner that
spends ``--learner-ms`` per batch drives ``--num-envs`` sub-envs two ways:

* ``vector``: :class:`~openenv_gym.vector.OpenEnvVectorEnv`, every step waits for the slowest;
* ``pool``: :func:`~openenv_gym.vector.pool.make_pool` with ``--batch-size``, the learner
  works on one batch while the others step.

It prints env steps/s of each, their ratio (issue 25's target: the pool at least 1.6x with
N=16, ``batch_size=8``, mean 5 ms, learner 2 ms) and how many steps each sub-env got in the
pool (every one must be served). Needs the official ``openenv`` package (the ``[dev]`` extra).

Run::

    python -m openenv_gym.bench.variable_steps --seconds 10

Example:
    >>> exponential_sleep(0.0)  # a mean of 0 ms: no sleep
    0.0
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import random
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np

from openenv_gym.vector import OpenEnvVectorEnv
from openenv_gym.vector.pool import make_pool


def exponential_sleep(mean_seconds: float) -> float:
    """Sleep an exponential time of mean ``mean_seconds``; returns the time slept."""
    seconds = random.expovariate(1.0 / mean_seconds) if mean_seconds > 0 else 0.0
    if seconds:
        time.sleep(seconds)
    return seconds


def make_app(mean_seconds: float, max_sessions: int) -> Any:
    """The official package's app of a counter env whose steps sleep exponentially."""
    from openenv.core.env_server import create_fastapi_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State
    from pydantic import Field

    class TickAction(Action):
        action: int = Field(default=0, ge=0, lt=2)

    class TickObservation(Observation):
        ticks: int = 0

    class TickEnvironment(Environment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self._state = State(step_count=0)

        def reset(
            self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
        ) -> TickObservation:
            self._state = State(episode_id=episode_id, step_count=0)
            return TickObservation(ticks=0)

        def step(self, action: TickAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
            exponential_sleep(mean_seconds)
            self._state.step_count += 1
            return TickObservation(ticks=self._state.step_count, reward=1.0, done=False)

        @property
        def state(self) -> State:
            return self._state

    return create_fastapi_app(
        TickEnvironment, TickAction, TickObservation, max_concurrent_envs=max_sessions
    )


def _run_server(port: int, mean_seconds: float, max_sessions: int) -> None:
    import uvicorn

    app = make_app(mean_seconds, max_sessions)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error")


@contextlib.contextmanager
def serve(mean_seconds: float, max_sessions: int) -> Iterator[str]:
    """Run the app of :func:`make_app` under uvicorn on 127.0.0.1 in a child process (a
    remote server never shares the learner's interpreter); yield its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = multiprocessing.get_context("spawn").Process(
        target=_run_server, args=(port, mean_seconds, max_sessions), daemon=True
    )
    process.start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or not process.is_alive():
                raise RuntimeError(f"the official openenv server at {url} did not start")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.join(10)


def run_vector(url: str, num_envs: int, seconds: float, learner: float) -> float:
    """Env steps/s of the synchronous vector env (the learner works on all N per step)."""
    envs = OpenEnvVectorEnv(None, num_envs, base_url=url)
    try:
        envs.reset(seed=0)
        actions = np.zeros(num_envs, dtype=np.int64)
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            time.sleep(learner)
            envs.step(actions)
            steps += num_envs
        return steps / (time.perf_counter() - start)
    finally:
        envs.close()


def run_pool(
    url: str, num_envs: int, batch_size: int, seconds: float, learner: float
) -> tuple[float, np.ndarray]:
    """Env steps/s of the pool, and the steps each sub-env got."""
    pool = make_pool(None, num_envs, batch_size, base_url=url)
    served = np.zeros(num_envs, dtype=np.int64)
    try:
        pool.async_reset(seed=0)
        actions = np.zeros(batch_size, dtype=np.int64)
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            *_, info = pool.recv()
            time.sleep(learner)
            pool.send(actions, info["env_id"])
            served[info["env_id"]] += 1
            steps += batch_size
        return steps / (time.perf_counter() - start), served
    finally:
        pool.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--mean-ms", type=float, default=5.0, help="mean step time")
    parser.add_argument("--learner-ms", type=float, default=2.0, help="learner time per batch")
    parser.add_argument("--seconds", type=float, default=10.0, help="per contender")
    args = parser.parse_args(argv)
    with serve(args.mean_ms / 1000, args.num_envs * 2) as url:
        learner = args.learner_ms / 1000
        vector = run_vector(url, args.num_envs, args.seconds, learner)
        pool, served = run_pool(url, args.num_envs, args.batch_size, args.seconds, learner)
    print(
        f"variable step time (exponential, mean {args.mean_ms:g} ms), N={args.num_envs}, "
        f"learner {args.learner_ms:g} ms per batch"
    )
    print(f"  vector env (sync):           {vector:8.0f} env steps/s")
    print(f"  pool (batch_size={args.batch_size:>2}):        {pool:8.0f} env steps/s")
    print(f"  ratio pool / vector:         {pool / vector:8.2f}x (target >= 1.6x)")
    print(f"  steps per sub-env in the pool: min {served.min()}, max {served.max()}")


if __name__ == "__main__":
    main()
