"""Heartbeat: free the sessions of clients that went silent (frozen, partitioned, gone).

A WebSocket peer that stops reading and sending without closing (a process stopped with
``SIGSTOP``, a laptop closed, a link cut without a reset) would hold its sessions, and their
budget slots, forever. Every ``ping_interval`` seconds :class:`Heartbeat` looks at the open
WebSocket connections of its server process:

* a connection that sent anything since the last look is fine;
* a silent one is sent a ping;
* a silent one whose ping is older than ``ping_timeout`` seconds is dropped, and its
  sessions closed.

Defaults (:data:`DEFAULT_PING_INTERVAL`, :data:`DEFAULT_PING_TIMEOUT`) follow the official
``openenv`` server under uvicorn (a ping every 20 s, 20 s to answer): a silent client is freed
after 40 to 60 s. Any WebSocket client that reads answers pings: ``websockets``' asyncio client
(the official one) does so itself, and ours do it from a keeper thread while they are idle
between steps (:mod:`openenv_gym.client.keepalive`). The cost on the step path is one
attribute store per read.

Example:
    >>> heartbeat = Heartbeat(ping_interval=20.0, ping_timeout=20.0)
    >>> heartbeat.ping_timeout
    20.0
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from typing import Final, Protocol

logger = logging.getLogger("openenv_gym.server")

#: Seconds between two looks at the connections (a silent one is pinged at the next look).
DEFAULT_PING_INTERVAL: Final = 20.0
#: Seconds a pinged connection has to send anything before it is dropped.
DEFAULT_PING_TIMEOUT: Final = 20.0
#: The shortest ping interval and timeout ``openenv-gym serve`` accepts: our clients read an
#: idle connection within 0.75 s (:mod:`openenv_gym.client.keepalive`), so shorter settings
#: would drop healthy clients that merely pause between steps.
MIN_PING_SECONDS: Final = 1.0


class Pingable(Protocol):
    """What :class:`Heartbeat` needs of a connection (a
    :class:`~openenv_gym.server.connection.ServerConnection` is one)."""

    #: Set by the connection whenever bytes arrive; cleared by the heartbeat.
    heard: bool
    #: ``time.monotonic()`` of the unanswered ping, or ``None``.
    pinged_at: float | None

    @property
    def open(self) -> bool:
        """Whether the WebSocket is open (handshake done, not closing)."""
        ...

    def ping(self) -> None:
        """Send a ping frame."""

    def abort(self) -> None:
        """Drop the socket now."""


class Heartbeat:
    """Pings silent WebSocket connections and drops the ones that do not answer.

    Args:
        ping_interval: Seconds between looks at the connections.
        ping_timeout: Seconds a ping may go unanswered.
        clock: Seconds, monotonic.

    Raises:
        ValueError: A time is not positive.
    """

    def __init__(
        self,
        *,
        ping_interval: float = DEFAULT_PING_INTERVAL,
        ping_timeout: float = DEFAULT_PING_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ping_interval <= 0:
            raise ValueError(f"expected ping_interval > 0 seconds or None, got {ping_interval}")
        if ping_timeout <= 0:
            raise ValueError(f"expected ping_timeout > 0 seconds, got {ping_timeout}")
        self.ping_interval = ping_interval
        self.ping_timeout = ping_timeout
        self._clock = clock
        self._task: asyncio.Task[None] | None = None
        #: Connections dropped for not answering, since the start.
        self.dropped = 0

    def start(self, connections: Callable[[], Iterable[Pingable]]) -> None:
        """Look at ``connections()`` every ``ping_interval`` seconds (needs a running loop)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(connections))

    async def stop(self) -> None:
        """Stop looking. Idempotent."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self, connections: Callable[[], Iterable[Pingable]]) -> None:
        while True:
            await asyncio.sleep(self.ping_interval)
            self.look(connections())

    def look(self, connections: Iterable[Pingable]) -> None:
        """One look: ping the silent connections, drop those silent past their ping."""
        now = self._clock()
        for connection in list(connections):
            if not connection.open:
                continue
            if connection.heard:
                connection.heard = False
                connection.pinged_at = None
            elif connection.pinged_at is None:
                connection.pinged_at = now
                connection.ping()
            elif now - connection.pinged_at >= self.ping_timeout:
                self.dropped += 1
                logger.info(
                    "dropping a connection silent for %.0f s after a ping: its sessions are "
                    "freed (a client that reads answers pings by itself)",
                    now - connection.pinged_at,
                )
                connection.abort()


__all__ = ["DEFAULT_PING_INTERVAL", "DEFAULT_PING_TIMEOUT", "Heartbeat", "Pingable"]
