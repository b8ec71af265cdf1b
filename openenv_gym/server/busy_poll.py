"""Busy-polling after a reply: wait for the next request awake instead of asleep.

On virtual machines waking a sleeping process on another vCPU is expensive: a loopback
write that wakes its reader costs the writer tens of µs (an inter-processor interrupt the
hypervisor must deliver to a halted vCPU), and the woken side pays as much again before it
runs. A client that steps in a tight loop sends its next request a few tens of µs after it
got the reply, so a server that spins that long on its sockets (``poll`` with a zero
timeout) is awake when the request lands: neither side pays for a wake-up.
``python -m benchmarks.ws_stack`` and the throughput benchmark show the effect.

The spin is adaptive and bounded. After each reply the server polls its connections for at
most ``budget`` seconds; it stops spinning once requests come later than the budget
(a learner busy with a gradient update, a human at a prompt) and starts again after a
request arrives quickly. So an idle or slow client costs one budget of CPU per miss at
worst, and a fast client gets replies with no wake-up in between.

Example:
    >>> poller = BusyPoller(budget=50e-6)
    >>> poller.spin()   # no sockets registered: returns at once
    False
"""

from __future__ import annotations

import select
import time
from typing import Final

#: The default spin after a reply, in seconds (``--busy-poll-us``): off.
DEFAULT_BUSY_POLL: Final = 0.0
#: After this many misses in a row (no request within the budget) the spin pauses until a
#: request arrives within the budget of the last reply again.
MAX_MISSES: Final = 3


class BusyPoller:
    """Spins on a set of file descriptors for a bounded time; see the module docstring.

    Args:
        budget: The longest spin after a reply, in seconds; ``0`` disables spinning.
    """

    def __init__(self, budget: float = DEFAULT_BUSY_POLL) -> None:
        if budget < 0:
            raise ValueError(f"expected a busy-poll budget >= 0 seconds, got {budget}")
        self.budget = budget
        self._poll = select.poll()
        self._fds: set[int] = set()
        self._misses = 0
        self._replied_at = 0.0

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

    def request_arrived(self) -> None:
        """Note a request: one that came within the budget of the last reply re-arms the
        spin."""
        if self._misses >= MAX_MISSES and time.perf_counter() - self._replied_at <= self.budget:
            self._misses = 0

    def spin(self) -> bool:
        """Poll the registered descriptors until one is readable or the budget is spent.

        Returns whether one became readable (the loop will find it without sleeping).
        """
        now = time.perf_counter()
        self._replied_at = now
        if not self._fds or self.budget <= 0 or self._misses >= MAX_MISSES:
            return False
        deadline = now + self.budget
        poll = self._poll.poll
        while True:
            if poll(0):
                self._misses = 0
                return True
            if time.perf_counter() >= deadline:
                self._misses += 1
                return False


__all__ = ["DEFAULT_BUSY_POLL", "MAX_MISSES", "BusyPoller"]
