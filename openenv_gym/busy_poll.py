"""Busy-polling: wait for the peer's next frame awake instead of asleep, on both ends.

On virtual machines waking a sleeping process on another vCPU is expensive: a loopback
write that wakes its reader costs the writer tens of µs (an inter-processor interrupt the
hypervisor must deliver to a halted vCPU), and the woken side pays as much again before it
runs. In a tight stepping loop the two ends answer each other within tens or hundreds of
µs, so each spins that long on its sockets (``poll`` with a zero timeout) and is awake when
the frame lands: neither side pays for a wake-up. Both ends use it by default:

* the server after each event-loop turn's replies, waiting for the next request
  (``--busy-poll-us``), while the measured gaps between requests say it pays
  (:mod:`openenv_gym.server.turn_end`);
* the client after each request, waiting for the reply (``busy_poll=`` of the envs).

The spin is adaptive, bounded and polite:

* **bounded**: at most ``budget`` seconds per wait, then the caller sleeps as before;
* **adaptive**: after :data:`MAX_MISSES` spins in a row that found nothing (a learner busy
  with a gradient update, an environment slower than the budget, a human at a prompt) it
  stops spinning, and starts again once a frame comes within the budget;
* **polite**: each turn of the spin yields the core (``sched_yield``), so a spinning
  process never keeps a runnable one (a server worker stepping its envs, the learner) off
  its core: spinning uses only a core that would otherwise idle;
* **hybrid** (the client's): like the Linux block layer's hybrid polling, it first sleeps
  through part of the usual wait (:data:`NAP_SHARE` of a moving average of the waits its
  spins ended, less the timer's overshoot), then spins until ``budget`` is spent. A reply that
  takes 250 µs costs the client one short sleep and about 100 µs of spinning instead of
  250 µs of spinning, and still finds it awake. A nap that overshoots a reply makes the
  next ones shorter (the measured wait feeds the average), so it settles below the reply
  time. (The server does not nap: a nap cannot end early, and a request that lands during
  one waits for it; measured, it cost a third of the steps/s.)

So an idle or slow peer costs :data:`MAX_MISSES` budgets of CPU at worst, and a fast one
gets its frames without wake-ups. ``python -m benchmarks.ws_stack`` and the throughput
benchmark show the effect.

Example:
    >>> poller = BusyPoller(budget=50e-6)
    >>> poller.spin()   # no sockets registered: returns at once
    False
"""

from __future__ import annotations

import math
import os
import select
import time
from typing import Any, Final

from openenv_gym.errors import EnvConfigError

#: The server's spin after a reply, in seconds (``--busy-poll-us``): long enough for a
#: client to decode eight Atari screens (300 µs missed it: Pong N=8 ran 9% slower).
DEFAULT_BUSY_POLL: Final = 500e-6
#: The client's spin after a request, in seconds (``busy_poll=`` of the envs).
DEFAULT_CLIENT_BUSY_POLL: Final = 300e-6
#: After this many misses in a row (nothing within the budget) the spin pauses until a frame
#: arrives within the budget of the wait's start again.
MAX_MISSES: Final = 3
#: The longest spin ``busy_poll=`` accepts, in seconds (as ``--busy-poll-us``'s 100000).
MAX_BUSY_POLL: Final = 0.1
#: What a sleep overshoots by (Linux's default 50 µs timer slack, and the wake-up), seconds:
#: a hybrid spin sleeps this much less than its share of the usual wait.
NAP_OVERSHOOT: Final = 75e-6
#: The share of the usual wait a hybrid spin sleeps through (less the overshoot): 0.75
#: cut a client's CPU per CartPole step by a third at N=16 for 4% fewer steps/s; 0.9 lost
#: a fifth of the steps/s at N=8 (2-core VM, ``openenv-gym bench``).
NAP_SHARE: Final = 0.75
#: Shorter naps are not taken (a sleep itself costs about 20 µs of CPU on a VM).
MIN_NAP: Final = 30e-6
#: Weight of a new wait in the moving average of a hybrid spin.
WAIT_SMOOTHING: Final = 0.1

_yield = getattr(os, "sched_yield", lambda: None)  # not on Windows: spin without yielding


def check_busy_poll(busy_poll: Any) -> float:
    """``busy_poll`` (seconds) as a float, if it is a number in ``0..MAX_BUSY_POLL``.

    Raises:
        EnvConfigError: It is not.

    Example:
        >>> check_busy_poll(0)
        0.0
    """
    valid = isinstance(busy_poll, int | float) and not isinstance(busy_poll, bool)
    if not valid or not math.isfinite(busy_poll) or not 0 <= busy_poll <= MAX_BUSY_POLL:
        raise EnvConfigError(
            f"expected busy_poll in seconds, 0..{MAX_BUSY_POLL:g} (e.g. busy_poll=300e-6; "
            f"busy_poll=0 sleeps at once), got {busy_poll!r}"
        )
    return float(busy_poll)


class BusyPoller:
    """Spins on a set of file descriptors for a bounded time; see the module docstring.

    Call :meth:`spin` when a wait starts (after a reply, or after a request) and
    :meth:`arrived` when a frame came in by the sleeping path, so the spin re-arms.

    Args:
        budget: The longest spin per wait, in seconds; ``0`` disables spinning.
        hybrid: Sleep through part of the usual wait before spinning (see the module
            docstring).

    Raises:
        ValueError: ``budget`` is negative.
    """

    def __init__(self, budget: float = DEFAULT_BUSY_POLL, *, hybrid: bool = False) -> None:
        if budget < 0:
            raise ValueError(f"expected a busy-poll budget >= 0 seconds, got {budget}")
        self.budget = budget
        self.hybrid = hybrid
        #: Moving average of the waits a hybrid spin has seen, in seconds.
        self.usual_wait: float | None = None
        self._poll = select.poll()
        self._fds: set[int] = set()
        self._misses = 0
        self._started_at = time.perf_counter()

    def register(self, fd: int) -> None:
        """Watch ``fd`` (a connection's socket) for readability."""
        if fd >= 0 and fd not in self._fds:
            self._fds.add(fd)
            self._poll.register(fd, select.POLLIN)

    def unregister(self, fd: int) -> None:
        """Stop watching ``fd``. Unknown descriptors are ignored."""
        if fd in self._fds:
            self._fds.discard(fd)
            self._poll.unregister(fd)

    @property
    def spinning(self) -> bool:
        """Whether the next :meth:`spin` spins (it is armed and has something to watch)."""
        return self.budget > 0 and self._misses < MAX_MISSES and bool(self._fds)

    def _nap(self) -> float:
        """How long a hybrid spin sleeps first (``0``: it spins at once)."""
        usual = self.usual_wait
        if not self.hybrid or usual is None:
            return 0.0
        nap = usual * NAP_SHARE - NAP_OVERSHOOT
        return nap if nap >= MIN_NAP else 0.0

    def _note_wait(self, waited: float) -> None:
        usual = self.usual_wait
        self.usual_wait = waited if usual is None else usual + WAIT_SMOOTHING * (waited - usual)

    def arrived(self) -> None:
        """Note a frame that came while not spinning: one within the budget of the wait's
        start re-arms a paused spin."""
        if self._misses >= MAX_MISSES and time.perf_counter() - self._started_at <= self.budget:
            self._misses = 0

    def spin(self) -> bool:
        """Poll the registered descriptors until one is readable or the budget is spent
        (a hybrid spin naps through the first part of it).

        Returns whether one became readable (the caller reads it without sleeping).
        """
        now = time.perf_counter()
        self._started_at = now
        if not self.spinning:
            return False
        nap = self._nap()
        if nap:
            time.sleep(nap)
        deadline = now + self.budget  # the nap counts: a spin never outlasts the budget
        poll = self._poll.poll
        clock = time.perf_counter
        while True:
            if poll(0):
                if self.hybrid:
                    self._note_wait(clock() - now)
                self._misses = 0
                return True
            if clock() >= deadline:
                self._misses += 1
                return False
            _yield()


__all__ = [
    "DEFAULT_BUSY_POLL",
    "DEFAULT_CLIENT_BUSY_POLL",
    "MAX_BUSY_POLL",
    "MAX_MISSES",
    "MIN_NAP",
    "NAP_OVERSHOOT",
    "NAP_SHARE",
    "WAIT_SMOOTHING",
    "BusyPoller",
    "check_busy_poll",
]
