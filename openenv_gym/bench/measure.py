"""The measurement core: the action stream, timed loops and one cell's result.

A *cell* is one contender (e.g. gymnasium ``AsyncVectorEnv``) at one env and one number of
sub-envs N. Every cell is measured the same way: open the contender, run a short warm-up,
then step for a fixed wall time with the same seeded random actions and record

* env steps per wall second (N per vector step),
* the wall time of every ``step()`` call (its p50 / p90 / p99: one env step at N=1, one
  vector step of N env steps above),
* the CPU time of this (the client) process per env step, from :func:`time.process_time`:
  every thread of the process counts (envpool's C++ pool, an event-loop thread), other
  processes (``AsyncVectorEnv``'s workers, the servers) do not.

Nothing in here prints; :mod:`openenv_gym.bench.report` does.

Example:
    >>> stream = ActionStream.discrete(n_actions=2, num_envs=4, seed=0)
    >>> stream.next().shape
    (4,)
    >>> window = timed_loop(lambda row: None, stream, seconds=0.01)
    >>> window.calls == len(window.latencies) > 0
    True
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import numpy as np

from openenv_gym.errors import PicklableError

#: Statuses a cell can end with.
STATUS_OK: Final = "ok"
STATUS_SKIPPED: Final = "skipped"
STATUS_ERROR: Final = "error"

#: Rows of pre-drawn actions an :class:`ActionStream` cycles through.
ACTION_BLOCK: Final = 4096
#: The percentiles reported for the per-call latency.
PERCENTILES: Final = (50, 90, 99)


class ActionStream:
    """The same seeded random actions for every contender, drawn before the clock starts.

    Args:
        rows: The actions to cycle through, one entry per ``step()`` call (for a vector
            contender a row holds N actions).
    """

    def __init__(self, rows: Sequence[Any] | np.ndarray) -> None:
        if len(rows) == 0:
            raise ValueError("an ActionStream needs at least one row of actions, got none")
        self._rows = rows
        self._index = 0

    @classmethod
    def discrete(cls, n_actions: int, num_envs: int, seed: int = 0) -> ActionStream:
        """Rows of ``num_envs`` actions drawn from ``0 .. n_actions - 1``."""
        rng = np.random.default_rng(seed)
        return cls(rng.integers(0, n_actions, size=(ACTION_BLOCK, num_envs), dtype=np.int64))

    @classmethod
    def sampled(cls, sample: Callable[[], Any], count: int = 256) -> ActionStream:
        """``count`` rows from ``sample()`` (e.g. a seeded ``action_space.sample``)."""
        return cls([sample() for _ in range(count)])

    def next(self) -> Any:
        """The next row (cycling through the fixed block)."""
        row = self._rows[self._index]
        self._index = (self._index + 1) % len(self._rows)
        return row


@dataclass
class Window:
    """One timed window.

    Attributes:
        calls: ``step()`` calls made (vector steps for a vector contender).
        seconds: Wall time of the window.
        cpu_seconds: CPU time of this process during the window.
        latencies: Wall time of each ``step()`` call, in seconds.
        env_steps: Env steps in the window when a call is not N of them (a pool's batch);
            ``None``: ``calls`` x N.
    """

    calls: int
    seconds: float
    cpu_seconds: float
    latencies: list[float]
    env_steps: int | None = None


class Driver(Protocol):
    """An opened contender: steps N envs for a wall time, then closes."""

    def run(self, actions: ActionStream, seconds: float) -> Window:
        """Step for about ``seconds``."""
        ...

    def close(self) -> None:
        """Release envs, sessions and worker processes."""
        ...


class WindowTimer:
    """The bookkeeping of one timed window: its start, deadline, CPU start and latencies.

    Example:
        >>> timer = WindowTimer(0.0)
        >>> now = timer.lap(timer.start)
        >>> window = timer.window(now)
        >>> window.calls, window.latencies == [now - timer.start]
        (1, True)
    """

    def __init__(self, seconds: float) -> None:
        self.latencies: list[float] = []
        self._cpu_start = time.process_time()
        self.start = time.perf_counter()
        self.deadline = self.start + seconds

    def lap(self, before: float) -> float:
        """Record one call that started at ``before``; the ``time.perf_counter()`` reading
        that ended it."""
        now = time.perf_counter()
        self.latencies.append(now - before)
        return now

    def window(self, now: float) -> Window:
        """The window that ended at ``now`` (a ``time.perf_counter()`` reading)."""
        cpu_seconds = time.process_time() - self._cpu_start
        return Window(len(self.latencies), now - self.start, cpu_seconds, self.latencies)


def timed_loop(
    step: Callable[[Any], object],
    actions: ActionStream,
    seconds: float,
    reset: Callable[[], object] | None = None,
) -> Window:
    """Call ``step(row)`` until ``seconds`` have passed.

    With ``reset``, ``step`` returns whether the episode ended and ``reset()`` is then called
    outside the per-call latency (its time still counts in the window, as in training).
    """
    clock = time.perf_counter
    timer = WindowTimer(seconds)
    while True:
        row = actions.next()
        before = clock()
        done = step(row)
        now = timer.lap(before)
        if reset is not None and done:
            reset()
            now = clock()
        if now >= timer.deadline:
            return timer.window(now)


class LoopDriver:
    """A :class:`Driver` over a synchronous ``step(row)`` function.

    Args:
        step: Performs one step for a row of actions (with ``reset``: returns episode end).
        close: Releases what ``step`` uses.
        reset: Starts a new episode (single envs; vector envs reset themselves).
    """

    def __init__(
        self,
        step: Callable[[Any], object],
        close: Callable[[], object],
        reset: Callable[[], object] | None = None,
    ) -> None:
        self._step = step
        self._close = close
        self._reset = reset

    def run(self, actions: ActionStream, seconds: float) -> Window:
        return timed_loop(self._step, actions, seconds, self._reset)

    def close(self) -> None:
        self._close()


class ContenderUnavailableError(PicklableError):
    """A contender cannot run here (a missing package, server or feature); carries why."""


@dataclass
class CellResult:
    """One measured (or skipped) cell.

    Attributes:
        env: The env name (``CartPole``).
        contender: The contender key (``async``).
        label: Its human name (``gymnasium AsyncVectorEnv``).
        num_envs: N, or 0 for a contender skipped at every N.
        status: ``ok``, ``skipped`` or ``error``.
        steps_per_s: Env steps per wall second (``ok`` only).
        env_steps: Env steps counted in the timed window.
        seconds: Length of the timed window.
        latency_us: p50, p90, p99 of one ``step()`` call, in microseconds.
        cpu_us_per_step: Client-process CPU microseconds per env step.
        reason: Why a cell was skipped or failed.
        setup_seconds: Time to open the contender (servers excluded), not part of the rate.
        bound: The physical bound of the row in steps/s, ``N / (RTT + server time)``
            (:mod:`openenv_gym.bench.bounds`; remote rows of a linked run only).
        bounds: The row's bounds as text (``""``: none).
    """

    env: str
    contender: str
    label: str
    num_envs: int
    status: str
    steps_per_s: float | None = None
    env_steps: int = 0
    seconds: float = 0.0
    latency_us: tuple[float, float, float] | None = None
    cpu_us_per_step: float | None = None
    reason: str = ""
    setup_seconds: float = 0.0
    bound: float | None = None
    bounds: str = ""

    @property
    def ok(self) -> bool:
        """Whether the cell was measured."""
        return self.status == STATUS_OK and self.steps_per_s is not None


def measure(
    driver: Driver, actions: ActionStream, num_envs: int, seconds: float, warmup: float
) -> CellResult:
    """Warm up, then time ``driver``; an ``ok`` result without env / contender names."""
    if warmup > 0:
        driver.run(actions, warmup)
    window = driver.run(actions, seconds)
    env_steps = window.calls * num_envs if window.env_steps is None else window.env_steps
    p50, p90, p99 = (float(v) * 1e6 for v in np.percentile(window.latencies, PERCENTILES))
    return CellResult(
        env="",
        contender="",
        label="",
        num_envs=num_envs,
        status=STATUS_OK,
        steps_per_s=env_steps / window.seconds if window.seconds > 0 else None,
        env_steps=env_steps,
        seconds=window.seconds,
        latency_us=(p50, p90, p99),
        cpu_us_per_step=window.cpu_seconds / env_steps * 1e6 if env_steps else None,
    )
