"""Admission: which new connections a server keeps while they have not made a request yet.

A connection costs the server a file descriptor and a few KiB before its peer has said
anything, and a peer that never finishes its request head (an idle TCP connection, half an
HTTP header) would hold both forever. :class:`Admission` bounds them three ways:

* a **deadline**: a connection whose request head (the WebSocket handshake, a route, or a
  request with a body) has not fully arrived ``handshake_timeout`` seconds after it was
  accepted is dropped (:data:`DEFAULT_HANDSHAKE_TIMEOUT`, the previous server's 10 s);
* a **cap on pending connections** (not yet past their request, so not yet authenticated
  either): when a new one would exceed ``max_pending``, the oldest pending one is dropped,
  so an arriving client always gets its chance and a flood only pushes out its own kind;
* a **descriptor budget**: the soft ``RLIMIT_NOFILE`` minus what the process had open when
  it started listening, minus :data:`DESCRIPTOR_RESERVE` for environments, logs and
  shared-memory files. When open connections reach it, a warning naming the limit and the
  fix is logged (at most once per :data:`WARNING_INTERVAL` seconds), the oldest pending
  connection is dropped, and when none is pending the new connection is closed: ``/health``
  and established sessions keep being served, and the server recovers by itself as soon as
  connections go away.

Example:
    >>> admission = Admission(handshake_timeout=10.0, max_pending=2)
    >>> admission.max_pending
    2
"""

from __future__ import annotations

import logging
import os
import resource
import time
from collections.abc import Callable
from typing import Final, Protocol

logger = logging.getLogger("openenv_gym.server")

#: Seconds a new connection has to send its whole request head.
DEFAULT_HANDSHAKE_TIMEOUT: Final = 10.0
#: Connections per server process that may be waiting for their request head at once.
DEFAULT_MAX_PENDING: Final = 1024
#: Descriptors kept free for what is not a connection (environments, logs, files).
DESCRIPTOR_RESERVE: Final = 64
#: The fewest connections the descriptor budget allows, however low the limit.
MIN_CONNECTION_BUDGET: Final = 16
#: Seconds between two warnings about exhausted descriptors.
WARNING_INTERVAL: Final = 10.0


class Droppable(Protocol):
    """A connection :class:`Admission` can drop."""

    def abort(self) -> None:
        """Drop the socket now."""


def open_descriptors() -> int:
    """The number of file descriptors this process has open (``/proc/self/fd``; ``0`` where
    there is no ``/proc``)."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def connection_budget(reserve: int = DESCRIPTOR_RESERVE) -> int:
    """How many connections the soft ``RLIMIT_NOFILE`` leaves room for, after the
    descriptors open now and ``reserve`` more (at least :data:`MIN_CONNECTION_BUDGET`)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1 << 30
    return max(MIN_CONNECTION_BUDGET, int(soft) - open_descriptors() - reserve)


class Admission:
    """Tracks a server process's connections and sheds the ones that hold it hostage.

    Args:
        handshake_timeout: Seconds a connection has to send its request head.
        max_pending: Connections that may be waiting for their request head at once.
        clock: Seconds, monotonic (for the rate limit of the warning).

    Raises:
        ValueError: A limit is not positive.
    """

    def __init__(
        self,
        *,
        handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
        max_pending: int = DEFAULT_MAX_PENDING,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if handshake_timeout <= 0:
            raise ValueError(f"expected handshake_timeout > 0 seconds, got {handshake_timeout}")
        if max_pending < 1:
            raise ValueError(f"expected max_pending >= 1 connection, got {max_pending}")
        self.handshake_timeout = handshake_timeout
        self.max_pending = max_pending
        self.budget = 1 << 30
        self._clock = clock
        self._pending: dict[Droppable, None] = {}  # insertion order: oldest first
        self._open = 0
        self._last_warning = -WARNING_INTERVAL
        self.dropped = 0

    def start(self) -> None:
        """Measure the descriptor budget (call when the server starts listening)."""
        self.budget = connection_budget()

    @property
    def pending(self) -> int:
        """Connections waiting for their request head."""
        return len(self._pending)

    def opened(self, connection: Droppable) -> bool:
        """Admit a new connection; ``False``: it must be closed at once (no room)."""
        self._open += 1
        if self._open > self.budget:
            self._warn_exhausted()
            if not self._drop_oldest():
                return False
        elif len(self._pending) >= self.max_pending:
            self._drop_oldest()
        self._pending[connection] = None
        return True

    def request_received(self, connection: Droppable) -> None:
        """``connection`` sent its whole request head: no deadline, no longer pending."""
        self._pending.pop(connection, None)

    def closed(self, connection: Droppable) -> None:
        """``connection`` is gone."""
        self._pending.pop(connection, None)
        self._open -= 1

    def _drop_oldest(self) -> bool:
        for oldest in self._pending:
            del self._pending[oldest]
            self.dropped += 1
            oldest.abort()
            return True
        return False

    def _warn_exhausted(self) -> None:
        now = self._clock()
        if now - self._last_warning < WARNING_INTERVAL:
            return
        self._last_warning = now
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        logger.warning(
            "file descriptors nearly exhausted: %d connections open, room for %d "
            "(RLIMIT_NOFILE soft %d, hard %d); dropping the oldest of %d connections that "
            "have not sent a request yet. Raise the limit with `ulimit -n %d` before "
            "starting the server, or spread clients over more servers",
            self._open,
            self.budget,
            soft,
            hard,
            len(self._pending),
            hard if hard != resource.RLIM_INFINITY else 1 << 20,
        )


__all__ = [
    "DEFAULT_HANDSHAKE_TIMEOUT",
    "DEFAULT_MAX_PENDING",
    "DESCRIPTOR_RESERVE",
    "Admission",
    "connection_budget",
    "open_descriptors",
]
