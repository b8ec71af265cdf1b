"""Sessions for synchronous code (a single env): one request at a time, in the calling thread.

Example:
    >>> session = SyncSession.connect("http://127.0.0.1:8000")  # doctest: +SKIP
    >>> reply = session.request(reset_message(seed=0))           # doctest: +SKIP
    >>> session.close()                                           # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from typing import Any, Final

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
from openenv_gym.wire.compressed import COMPRESS_KEY, compression_offer, measured_offer
from openenv_gym.wire.compression_policy import WARMUP_STEPS, CompressionPolicy
from openenv_gym.wire.encoding import Encoding
from openenv_gym.wire.messages import (
    MessageType,
    ObservationReply,
    StateReply,
    close_message,
    encode_message,
    expect_observation,
)

_DEFAULT_OPTIONS = ConnectOptions()
_STEP: Final = MessageType.STEP.value
#: The requests answered by an observation (the ones that may carry ``"compress"``).
_OBSERVED: Final = frozenset({MessageType.RESET.value, _STEP})


class SyncSession:
    """A session for synchronous code (a single env): one request at a time, in the calling
    thread, with no hop to another thread.

    It is a :class:`~openenv_gym.client.blocking.BlockingConnection` (a ``send`` and a
    ``recv`` system call per request, no event loop; ``ws://`` or ``wss://``, directly or
    through an ``http://`` proxy); through a SOCKS proxy configured for the host, a
    :class:`~openenv_gym.client.async_session.AsyncSession` on its own
    :class:`~openenv_gym.client.loop.CallerLoop`.

    With ``compression="auto"`` a blocking session offers the measured subprotocol
    (:data:`~openenv_gym.wire.compressed.MEASURED_SUBPROTOCOL`); where our server agrees,
    :attr:`compression_policy` decides per request whether to ask for a packed observation
    frame, from the cost of each step (request built to reply parsed) it measures for each
    choice, the rule of a vector env's batch connections
    (:mod:`openenv_gym.wire.compression_policy`). A request carries ``"compress"`` while
    observations come as binary frames (a few numbers as JSON: nothing to pack).

    Attributes:
        compression_policy: The policy, ``None`` where the measured subprotocol was not
            agreed (an official server, ``compression="zstd"`` or ``"off"``, JSON).
    """

    def __init__(
        self, transport: BlockingConnection | AsyncSession, loop: CallerLoop | None = None
    ) -> None:
        self._transport = transport
        self._connection = transport if isinstance(transport, BlockingConnection) else None
        self._session = transport if isinstance(transport, AsyncSession) else None
        self._loop = loop
        #: The session's ``ws://`` URL.
        self.url: str = transport.url
        #: The encoding the server agreed to (:mod:`openenv_gym.wire.encoding`).
        self.encoding: Encoding = transport.encoding
        self.compression_policy = (
            CompressionPolicy(WARMUP_STEPS) if self.encoding.measured else None
        )
        self._binary_replies = True  # whether the last observation came as a binary frame

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
        unix_path: str | None = None,
    ) -> SyncSession:
        """Open a session at ``{base_url}/ws`` as ``options`` say (the errors of
        :meth:`AsyncSession.open <openenv_gym.client.async_session.AsyncSession.open>`).
        ``subprotocols`` are offered after those of ``options.encoding``; ``unix_path``: go
        through that Unix socket of the same server (``openenv-gym serve --unix-socket``)."""
        choice = options.encoding_choice
        url = ws_url_or_raise(base_url)
        if unix_path is not None or is_loopback_url(url) or not _needs_asyncio_proxy(url):
            offered = choice.subprotocols(
                compressed=compression_offer(options.compression, is_loopback_url(url)) is not None,
                measured=measured_offer(options.compression),
                extra=subprotocols,
            )
            connection = BlockingConnection.open(
                url, options, subprotocols=offered, unix_path=unix_path
            )
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
        return cls(opened, loop)

    @property
    def closed(self) -> bool:
        """Whether the session is closed."""
        return self._transport.closed

    @property
    def unix_path(self) -> str | None:
        """The Unix socket the session goes through (``None``: TCP)."""
        return None if self._connection is None else self._connection.unix_path

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
        policy = self.compression_policy
        if policy is not None and self._binary_replies and message["type"] in _OBSERVED:
            return self._measured_request(connection, policy, message)
        # A refused session sends an error frame, then closes: read what is queued.
        with contextlib.suppress(ConnectionLostError):
            connection.send(encode_message(message))
        raw = connection.receive()
        reply = self.encoding.parse_reply(raw, url=self.url)
        if policy is not None and message["type"] in _OBSERVED:
            self._binary_replies = not isinstance(raw, str)  # binary again: ask again
        return reply

    def _measured_request(
        self, connection: BlockingConnection, policy: CompressionPolicy, message: dict[str, Any]
    ) -> ObservationReply | StateReply:
        """:meth:`request` asking for the frame ``policy`` chooses; a step's cost (request
        built to reply parsed) goes back to ``policy`` when the reply was a binary frame."""
        asked = policy.choice()
        start = time.perf_counter()
        with contextlib.suppress(ConnectionLostError):
            connection.send(encode_message({**message, COMPRESS_KEY: asked}))
        raw = connection.receive()
        reply = self.encoding.parse_reply(raw, url=self.url)
        self._binary_replies = not isinstance(raw, str)
        if self._binary_replies and message["type"] == _STEP:
            policy.record(asked, time.perf_counter() - start)
        return reply

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
