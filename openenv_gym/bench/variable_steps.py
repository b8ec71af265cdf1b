"""The ``Variable`` env of the benchmark suite: an official-package server whose steps take
a variable time.

The official ``openenv`` package (the protocol's reference peer) serves a counter env whose
steps sleep an exponential time (mean :data:`MEAN_MS`; each session steps in a thread of its
own, so sessions wait concurrently), under uvicorn on 127.0.0.1 in a child process. The
suite's ``variable-vector`` and ``variable-pool`` contenders
(:mod:`openenv_gym.bench.pool_contenders`) drive it: a synchronous vector step waits for the
slowest of N, the pool returns the first ``batch_size`` that are ready. Needs the official
``openenv`` package (the ``[dev]`` extra).

Run::

    openenv-gym bench --envs Variable --n 16 --seconds 10

Example:
    >>> exponential_sleep(0.0)  # a mean of 0 ms: no sleep
    0.0
"""

from __future__ import annotations

import contextlib
import importlib.util
import multiprocessing
import random
import time
from collections.abc import Iterator
from typing import Any, Final

import httpx

from openenv_gym.bench.ray_cluster import free_ports, poll_until

#: The mean step time of the ``Variable`` env (issue 25's workload).
MEAN_MS: Final = 5.0


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
    remote server never shares the learner's interpreter); yield its URL.

    Raises:
        ModuleNotFoundError: The official ``openenv`` package is not installed.
        RuntimeError: The server did not answer ``GET /health`` within 60 s.
    """
    if importlib.util.find_spec("openenv") is None:
        raise ModuleNotFoundError(
            "the Variable env's server is the official openenv package's: pip install openenv"
        )
    (port,) = free_ports(1)
    process = multiprocessing.get_context("spawn").Process(
        target=_run_server, args=(port, mean_seconds, max_sessions), daemon=True
    )
    process.start()
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return True
        if not process.is_alive():
            raise RuntimeError(f"the official openenv server at {url} exited before it started")
        return False

    try:
        if not poll_until(healthy, 60, 0.1):
            raise RuntimeError(f"the official openenv server at {url} did not start in 60 s")
        yield url
    finally:
        process.terminate()
        process.join(10)


__all__ = ["MEAN_MS", "exponential_sleep", "make_app", "serve"]
