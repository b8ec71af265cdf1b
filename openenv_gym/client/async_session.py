"""WebSocket sessions on an asyncio event loop (:mod:`.loop`), for the rare paths that need one.

Envs talk over blocking connections (:mod:`.blocking`); an :class:`AsyncSession` serves a
single env whose server is reached through a SOCKS proxy (``websockets``' asyncio client
speaks HTTP and SOCKS proxies), and code that already runs an event loop.

Every network call has a timeout: opening a connection (``connect_timeout``) and waiting
for each reply (``reply_timeout``), both from the :class:`~.options.ConnectOptions`. A
reply that does not come in time closes the session: a late reply would otherwise be
paired with the next request.

Observation encoding (``encoding=``, resolved by :mod:`openenv_gym.wire.encoding`): ``"auto"``
(the default) offers the WebSocket subprotocol ``openenv-gym.binary.v1`` and uses it when
the server accepts it (our servers do; official ones ignore the offer and speak plain
JSON); ``"json"`` offers nothing; ``"binary"`` requires it and raises
:class:`~openenv_gym.errors.BinaryEncodingRefusedError` when the server does not accept it.

Per-message compression (permessage-deflate) is turned off: on a 100 KB observation frame
it costs 4-5x the time of sending it uncompressed over loopback.

Example:
    >>> loop = CallerLoop()                                                # doctest: +SKIP
    >>> session = loop.run(AsyncSession.open("http://127.0.0.1:8000"))  # doctest: +SKIP
    >>> reply = loop.run(session.request(reset_message(seed=0)))        # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import weakref
from collections.abc import Sequence
from typing import Any

from websockets.asyncio.client import ClientConnection, connect, unix_connect
from websockets.exceptions import (
    ConnectionClosed,
    InvalidHandshake,
    InvalidStatus,
    InvalidURI,
)
from websockets.typing import Subprotocol

from openenv_gym.client.blocking import ws_url_or_raise
from openenv_gym.client.http import auth_headers, is_loopback_url, resolve_token, upgrade_refusal
from openenv_gym.client.options import ConnectOptions
from openenv_gym.errors import (
    ConnectionLostError,
    NotAnOpenEnvServerError,
    ReplyTimeoutError,
    ServerConnectionError,
    SessionClosedError,
)
from openenv_gym.wire.compressed import compression_offer
from openenv_gym.wire.encoding import EncodedLink, Encoding, encoding_of
from openenv_gym.wire.messages import (
    WORKER_HEADER,
    ObservationReply,
    StateReply,
    close_message,
    encode_message,
)

_DEFAULT_OPTIONS = ConnectOptions()


def _drop_socket(transport: asyncio.BaseTransport | None) -> None:
    """Shut a connection's socket down now, without its event loop (which may never run
    again). The peer sees the connection end at once. Never raises (runs from finalizers)."""
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class AsyncSession(EncodedLink):
    """One OpenEnv WebSocket session (one env instance on the server), used on the loop.

    Create it with :meth:`open`. Requests are strictly one at a time: send, then await
    the reply.
    """

    def __init__(
        self,
        connection: ClientConnection,
        *,
        url: str,
        reply_timeout: float,
        unix_path: str | None = None,
    ) -> None:
        self._connection = connection
        self.url = url
        #: The Unix socket the connection goes through, or ``None`` (TCP).
        self.unix_path = unix_path
        self.reply_timeout = reply_timeout
        self.closed = False
        #: The encoding the server agreed to (:mod:`openenv_gym.wire.encoding`).
        self.encoding: Encoding = encoding_of(connection.subprotocol)
        # A session nobody closed (interpreter exit, Ctrl-C, a forgotten env) is dropped at
        # once: its loop may never run again, and a server told to stop would otherwise
        # wait for a closing handshake it cannot get.
        self._drop_when_forgotten = weakref.finalize(self, _drop_socket, connection.transport)

    @property
    def worker(self) -> str | None:
        """The server process that took the connection (our servers name it in the
        ``X-OpenEnv-Gym-Worker`` handshake header), ``None`` when not named."""
        response = self._connection.response
        return response.headers.get(WORKER_HEADER) if response is not None else None

    @property
    def subprotocol(self) -> str | None:
        """The WebSocket subprotocol the server agreed to, if any."""
        return self._connection.subprotocol

    @classmethod
    async def open(
        cls,
        base_url: str,
        options: ConnectOptions = _DEFAULT_OPTIONS,
        *,
        subprotocols: Sequence[str] = (),
        unix_path: str | None = None,
        batch: bool = False,
    ) -> AsyncSession:
        """Open a session at ``{base_url}/ws``, as ``options`` say.

        ``options.token`` (default: ``$OPENENV_TOKEN``) is sent as ``Authorization: Bearer``.
        With ``unix_path`` the connection goes to that Unix socket of the same server
        (``openenv-gym serve --unix-socket``); ``base_url`` still names the session.

        Args:
            subprotocols: Offered after those of ``options.encoding`` (see the module
                docstring).
            batch: Also offer ``openenv-gym.batch.v1`` (several sessions on this connection,
                see :mod:`openenv_gym.wire.batch`); :attr:`batch` says whether it was agreed.

        Raises:
            AuthenticationError: The server refused the token (HTTP 401/403).
            ServerConnectionError: Nothing accepts connections there, or not in time.
            NotAnOpenEnvServerError: Something answered, but refused the WebSocket at ``/ws``.
            BinaryEncodingRefusedError: ``encoding="binary"`` and the server refused it.
        """
        choice = options.encoding_choice
        connect_timeout = options.connect_timeout
        url = ws_url_or_raise(base_url)
        compressed = compression_offer(options.compression, is_loopback_url(url)) is not None
        offered = choice.subprotocols(batch=batch, compressed=compressed, extra=subprotocols)
        token = resolve_token(options.token)
        keywords: dict[str, Any] = {
            "compression": None,
            "open_timeout": connect_timeout,
            "max_size": options.max_message_size,
            "additional_headers": {**auth_headers(token), **options.headers},
            "subprotocols": [Subprotocol(p) for p in offered] if offered else None,
            "ping_interval": None,
            "close_timeout": 2,
        }
        try:
            if unix_path is not None:
                connection = await unix_connect(unix_path, uri=url, **keywords)
            elif is_loopback_url(url):
                connection = await connect(url, proxy=None, **keywords)
            else:
                connection = await connect(url, proxy=True, **keywords)
        except InvalidStatus as exc:
            response = exc.response
            raise upgrade_refusal(url, response.status_code, response.headers, token) from exc
        except InvalidURI as exc:
            raise ServerConnectionError(
                f"{base_url!r} is not a valid server URL ({exc}); expected e.g. "
                "'http://127.0.0.1:8000'",
                url=url,
            ) from exc
        except InvalidHandshake as exc:
            if isinstance(exc.__cause__, EOFError | OSError):
                # The peer closed or reset the connection mid-handshake: a server stopping or
                # restarting (or docker-proxy with nothing behind it), not a wrong server.
                raise ServerConnectionError(
                    f"the connection to {url} closed during the WebSocket handshake "
                    f"({exc.__cause__ or exc}); the server may be stopping or restarting.",
                    url=url,
                ) from exc
            raise NotAnOpenEnvServerError(
                f"{url} did not complete a WebSocket handshake ({exc}): this is not an "
                "OpenEnv server, or base_url is wrong.",
                url=url,
            ) from exc
        except TimeoutError as exc:
            raise ServerConnectionError(
                f"could not open {url} within {connect_timeout:g}s. Check that the server is "
                "up and reachable, or raise connect_timeout.",
                url=url,
            ) from exc
        except OSError as exc:
            raise ServerConnectionError(
                f"could not connect to {url}: {exc.strerror or exc}. Is an OpenEnv server "
                "running there? Start one with `openenv-gym serve ...`, or leave base_url "
                "unset to let openenv-gym start an embedded server.",
                url=url,
            ) from exc
        session = cls(connection, url=url, reply_timeout=options.reply_timeout, unix_path=unix_path)
        try:
            choice.check_agreed(session.encoding, url)
        except BaseException:
            await session.close()
            raise
        return session

    async def request(self, message: dict[str, Any]) -> ObservationReply | StateReply:
        """Send one message and return the parsed reply.

        Raises:
            ServerReplyError: The server answered with an error (the session lives on).
            ReplyTimeoutError: No reply within ``reply_timeout`` (the session is closed).
            ConnectionLostError: The connection closed (the session is closed).
            ProtocolError: The reply is not an OpenEnv message.
            SessionClosedError: The session was closed before.
        """
        raw = await self.request_raw(encode_message(message))
        return self.encoding.parse_reply(raw, url=self.url)

    async def request_raw(self, frame: str | bytes) -> str | bytes:
        """Send one frame and return the raw reply frame (see :meth:`request`)."""
        if self.closed:
            raise SessionClosedError(
                f"the session to {self.url} is closed; create a new env (or call reset on a "
                "reconnecting env) to go on"
            )
        # A refused session sends an error frame, then closes: read what is queued.
        with contextlib.suppress(ConnectionClosed):
            await self._connection.send(frame, text=True)
        try:
            # asyncio.timeout, not wait_for: no task per reply (it costs ~10% of a CartPole step).
            async with asyncio.timeout(self.reply_timeout):
                return await self._connection.recv()
        except TimeoutError as exc:
            await self._abort()
            raise ReplyTimeoutError(
                f"no reply from {self.url} within {self.reply_timeout:g}s; the session was "
                "closed (a late reply would be paired with the wrong request). Raise "
                "reply_timeout if the environment is slow.",
                url=self.url,
                timeout=self.reply_timeout,
            ) from exc
        except ConnectionClosed as exc:
            await self._abort()
            rcvd = exc.rcvd
            why = f"code {rcvd.code}, reason {rcvd.reason!r}" if rcvd else "no close frame"
            raise ConnectionLostError(
                f"the connection to {self.url} closed while waiting for a reply ({why}). "
                "The server may have stopped or dropped the session.",
                url=self.url,
            ) from exc

    async def _abort(self) -> None:
        # No closing handshake: a server that did not answer in time would not answer the
        # close frame either, and waiting for it (close_timeout) doubled reply_timeout.
        self.abort()

    def abort(self) -> None:
        """Drop the connection at once (no closing handshake). Idempotent, never raises."""
        self.closed = True
        self._drop_when_forgotten.detach()
        transport = self._connection.transport
        if transport is not None:
            transport.abort()

    async def close(self) -> None:
        """Say ``close`` to the server and close the connection. Idempotent, never raises."""
        if self.closed:
            return
        self.closed = True
        self._drop_when_forgotten.detach()
        with contextlib.suppress(ConnectionClosed, OSError):
            await self._connection.send(encode_message(close_message()))
        with contextlib.suppress(TimeoutError, OSError):
            await asyncio.wait_for(self._connection.close(), 2.0)


__all__ = ["AsyncSession"]
