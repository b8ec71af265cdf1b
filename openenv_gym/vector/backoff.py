"""Retry delays for reconnecting: exponential backoff with jitter, within a time budget.

A vector env with ``reconnect=True`` reopens a broken session at once, then after 0.1 s,
0.2 s, 0.4 s, ... (doubling, at most :data:`RECONNECT_MAX_DELAY`, each ±20 % at random so
that many clients of one restarted server do not retry in lockstep), until
:data:`RECONNECT_BUDGET` seconds have passed since the first attempt. So a server that comes
back within the budget (a restarted worker, a container restarting) is found again; one
that does not fails with the last attempt's error, after at most the budget.

Example:
    >>> from itertools import islice
    >>> backoff = Backoff(budget=1.0, first=0.1, maximum=0.4, jitter=0.0)
    >>> [round(d, 2) for d in islice(backoff.delays(start=0.0, clock=lambda: 0.0), 5)]
    [0.1, 0.2, 0.4, 0.4, 0.4]
    >>> list(backoff.delays(start=0.0, clock=lambda: 1.0))  # the budget is spent
    []
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

#: Seconds a vector env keeps retrying to reopen a broken session (from its first attempt).
RECONNECT_BUDGET: Final = 30.0
#: The first delay between attempts (doubled after each failure).
RECONNECT_FIRST_DELAY: Final = 0.1
#: The longest delay between attempts.
RECONNECT_MAX_DELAY: Final = 2.0


@dataclass(frozen=True)
class Backoff:
    """Delays between attempts: ``first``, doubling up to ``maximum``, within ``budget``.

    Attributes:
        budget: Seconds from the first attempt after which no attempt starts.
        first: The first delay.
        maximum: The longest delay.
        jitter: Each delay is multiplied by a random factor in ``[1 - jitter, 1 + jitter]``.
    """

    budget: float = RECONNECT_BUDGET
    first: float = RECONNECT_FIRST_DELAY
    maximum: float = RECONNECT_MAX_DELAY
    jitter: float = 0.2

    def delays(
        self, start: float | None = None, clock: Callable[[], float] = time.monotonic
    ) -> Iterator[float]:
        """The delay before each further attempt; ends when the next attempt would start
        after ``start + budget`` (``start``: now by default)."""
        begin = clock() if start is None else start
        delay = self.first
        while True:
            wait = delay * random.uniform(1 - self.jitter, 1 + self.jitter)
            remaining = begin + self.budget - clock()
            if remaining <= 0:
                return
            yield min(wait, remaining)
            delay = min(self.maximum, delay * 2)


__all__ = ["RECONNECT_BUDGET", "RECONNECT_FIRST_DELAY", "RECONNECT_MAX_DELAY", "Backoff"]
