"""Answer the pings of idle connections, so a server does not drop them while we train.

Servers ping their clients and close a connection that does not answer in time (official
``openenv`` servers under uvicorn: a ping every 20 s, 20 s to answer; ours accept settings
down to 1 s, ``serve --ping-interval 1 --ping-timeout 1``). A
:class:`~openenv_gym.client.blocking.BlockingConnection` reads, and so answers, only while it
waits for a reply; a learner that trains for a minute between rollouts would lose its
sessions. One daemon thread per process looks at the open connections (anything
:class:`Keepable`; this module imports no connection class) every
:data:`KEEPALIVE_PERIOD` seconds; for each idle longer than :data:`KEEPALIVE_IDLE` seconds it
*tries* the connection's lock (never waits for it: a step in progress reads for itself) and
lets the connection read what came without waiting, which answers the pings. The step path
pays one uncontended lock per send and receive.

A ping reaches a client at least one ping interval after its last send, so a connection idle
for :data:`KEEPALIVE_IDLE` (less than the shortest interval a server accepts) is read within
:data:`KEEPALIVE_PERIOD` of the ping's arrival, well inside the shortest ping timeout. (It was
10 s idle, looked at every 2 s: ``--ping-interval 5 --ping-timeout 5`` dropped a client idle
for 25 s.) A look at a connection whose lock is free and socket empty is one ``recv`` that
finds nothing.

Example:
    >>> KEEPALIVE_IDLE + KEEPALIVE_PERIOD < 1.0  # answers within a 1 s ping timeout
    True
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from typing import Final, Protocol

#: Seconds without a send or receive after which the thread reads for a connection.
KEEPALIVE_IDLE: Final = 0.5
#: Seconds between the thread's looks at the connections.
KEEPALIVE_PERIOD: Final = 0.25


class Keepable(Protocol):
    """What the thread needs of a connection (a
    :class:`~openenv_gym.client.blocking.BlockingConnection` is one)."""

    @property
    def closed(self) -> bool:
        """Whether the connection is closed (then it is skipped)."""
        ...

    @property
    def last_active(self) -> float:
        """``time.monotonic()`` of its last send or receive."""
        ...

    @property
    def lock(self) -> threading.Lock:
        """Held while a thread uses the connection; the keeper only tries it."""
        ...

    def answer_pings(self) -> None:
        """Read what came without waiting (the protocol answers pings). Never raises."""
        ...


class _Keeper:
    """The thread and the connections it watches (weakly: a forgotten one is not kept)."""

    def __init__(self, idle: float, period: float) -> None:
        self.idle = idle
        self.period = period
        self.connections: weakref.WeakSet[Keepable] = weakref.WeakSet()
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.thread = threading.Thread(target=self._run, name="openenv-gym-keepalive", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            self.wake.wait(self.period)
            self.wake.clear()
            self._tick()

    def _tick(self) -> None:
        """Read for every idle connection whose lock is free (no reference is kept)."""
        with self.lock:
            connections = list(self.connections)
        now = time.monotonic()
        for connection in connections:
            if connection.closed or now - connection.last_active < self.idle:
                continue
            if connection.lock.acquire(blocking=False):
                try:
                    connection.answer_pings()
                finally:
                    connection.lock.release()


_keeper: _Keeper | None = None
_keeper_lock = threading.Lock()


def _the_keeper() -> _Keeper:
    global _keeper
    with _keeper_lock:
        if _keeper is None:
            _keeper = _Keeper(KEEPALIVE_IDLE, KEEPALIVE_PERIOD)
        return _keeper


def watch(connection: Keepable) -> None:
    """Answer the pings of ``connection`` while it is idle (starts the thread on first use)."""
    keeper = _the_keeper()
    with keeper.lock:
        keeper.connections.add(connection)


def forget(connection: Keepable) -> None:
    """Stop watching ``connection`` (it closed). Never raises."""
    keeper = _keeper
    if keeper is not None:
        with keeper.lock:
            keeper.connections.discard(connection)


def configure(*, idle: float = KEEPALIVE_IDLE, period: float = KEEPALIVE_PERIOD) -> None:
    """Change when the thread reads for idle connections (tests use short times)."""
    keeper = _the_keeper()
    keeper.idle = idle
    keeper.period = period
    keeper.wake.set()


def _forget_keeper_after_fork() -> None:
    global _keeper, _keeper_lock
    _keeper = None  # the parent's thread does not survive a fork
    _keeper_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_keeper_after_fork)


__all__ = ["KEEPALIVE_IDLE", "KEEPALIVE_PERIOD", "Keepable", "configure", "forget", "watch"]
