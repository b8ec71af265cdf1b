"""Sessions for synchronous code (a single env): one request at a time, in the calling thread.

Example:
    >>> session = SyncSession.connect("http://127.0.0.1:8000")  # doctest: +SKIP
    >>> reply = session.request(reset_message(seed=0))           # doctest: +SKIP
    >>> session.close()                                           # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from websockets.exceptions import InvalidURI
from websockets.proxy import get_proxy
from websockets.uri import parse_uri

from openenv_gym.client.async_session import AsyncSession
from openenv_gym.client.blocking import BlockingConnection, ws_url_or_raise
from openenv_gym.client.http import is_loopback_url
from openenv_gym.client.loop import CallerLoop
from openenv_gym.client.options import ConnectOptions
from openenv_gym.errors import (
    ConnectionLostError,
    SessionClosedError,
)
from openenv_gym.wire.compressed import compression_offer
from openenv_gym.wire.encoding import Encoding
from openenv_gym.wire.messages import (
    ObservationReply,
    StateReply,
    close_message,
    encode_message,
    expect_observation,
)

_DEFAULT_OPTIONS = ConnectOptions()


class SyncSession:
    """A session for synchronous code (a single env): one request at a time, in the calling
    thread, with no hop to another thread.

    It is a :class:`~openenv_gym.client.blocking.BlockingConnection` (a ``send`` and a
    ``recv`` system call per request, no event loop; ``ws://`` or ``wss://``, directly or
    through an ``http://`` proxy); through a SOCKS proxy configured for the host, a
    :class:`~openenv_gym.client.async_session.AsyncSession` on its own
    :class:`~openenv_gym.client.loop.CallerLoop`.
    """

    def __init__(
        self,
        connection: BlockingConnection | None = None,
        *,
        session: AsyncSession | None = None,
        loop: CallerLoop | None = None,
    ) -> None:
        self._connection = connection
        self._session = session
        self._loop = loop
        agreed = connection.encoding if connection is not None else None
        if session is not None:
            agreed = session.encoding
        assert agreed is not None  # one of the two is set
        #: The encoding the server agreed to (:mod:`openenv_gym.wire.encoding`).
        self.encoding: Encoding = agreed

    @property
    def binary(self) -> bool:
        """Whether observation replies may come as binary frames."""
        return self.encoding.binary_frames

    @property
    def form(self) -> str:
        """The form of the protocol agreed: ``"websocket"`` (plain OpenEnv JSON frames), or
        ``"websocket+<encoding>"`` (e.g. ``"websocket+binary"``)."""
        name = self.encoding.name
        return "websocket" if name == "json" else f"websocket+{name}"

    @classmethod
    def connect(
        cls,
        base_url: str,
        options: ConnectOptions = _DEFAULT_OPTIONS,
        *,
        subprotocols: Sequence[str] = (),
    ) -> SyncSession:
        """Open a session at ``{base_url}/ws`` as ``options`` say (the errors of
        :meth:`AsyncSession.open <openenv_gym.client.async_session.AsyncSession.open>`).
        ``subprotocols`` are offered after those of ``options.encoding``."""
        choice = options.encoding_choice
        url = ws_url_or_raise(base_url)
        if is_loopback_url(url) or not _needs_asyncio_proxy(url):
            compressed = compression_offer(options.compression, is_loopback_url(url))
            offered = choice.subprotocols(compressed=compressed is not None, extra=subprotocols)
            connection = BlockingConnection.open(url, options, subprotocols=offered)
            try:
                choice.check_agreed(connection.encoding, url)
            except BaseException:
                connection.abort()
                raise
            return cls(connection)
        loop = CallerLoop()
        try:
            opened = loop.run(AsyncSession.open(base_url, options, subprotocols=subprotocols))
        except BaseException:
            loop.close()
            raise
        return cls(session=opened, loop=loop)

    @property
    def url(self) -> str:
        """The session's ``ws://`` URL."""
        if self._connection is not None:
            return self._connection.url
        assert self._session is not None  # one of the two is set
        return self._session.url

    @property
    def closed(self) -> bool:
        """Whether the session is closed."""
        if self._connection is not None:
            return self._connection.closed
        assert self._session is not None  # one of the two is set
        return self._session.closed

    def request(self, message: dict[str, Any]) -> ObservationReply | StateReply:
        """Send one message and return the parsed reply (see :meth:`AsyncSession.request
        <openenv_gym.client.async_session.AsyncSession.request>`)."""
        connection = self._connection
        if connection is None:
            assert self._session is not None
            assert self._loop is not None
            return self._loop.run(self._session.request(message))
        if connection.closed:
            raise SessionClosedError(
                f"the session to {connection.url} is closed; create a new env (or call reset "
                "on a reconnecting env) to go on"
            )
        # A refused session sends an error frame, then closes: read what is queued.
        with contextlib.suppress(ConnectionLostError):
            connection.send(encode_message(message))
        raw = connection.receive()
        return self.encoding.parse_reply(raw, url=self.url)

    def request_observation(self, message: dict[str, Any]) -> ObservationReply:
        """A request whose reply must be an observation (reset, step).

        Raises:
            ProtocolError: A ``state`` reply came instead.
        """
        reply = self.request(message)
        if isinstance(reply, ObservationReply):  # the common case: no URL built
            return reply
        return expect_observation(reply, message, self.url)

    def close(self) -> None:
        """Say ``close`` to the server and close the connection. Idempotent, never raises."""
        if self._connection is not None:
            self._connection.close(encode_message(close_message()))
            return
        assert self._session is not None
        assert self._loop is not None
        if self._loop.closed:
            return
        try:
            if not self._session.closed:
                self._loop.run(self._session.close())
        except RuntimeError:  # the loop cannot run here (e.g. during interpreter exit)
            self._session.abort()
        finally:
            self._loop.close()


def _needs_asyncio_proxy(url: str) -> bool:
    """Whether ``url`` is reached through a proxy only ``websockets``' asyncio client speaks
    (SOCKS, or TLS to the proxy); the blocking connection tunnels through ``http://`` ones."""
    try:
        proxy = get_proxy(parse_uri(url))
    except InvalidURI:
        return False  # the blocking connection reports it
    return proxy is not None and not proxy.startswith("http://")


__all__ = ["SyncSession"]
