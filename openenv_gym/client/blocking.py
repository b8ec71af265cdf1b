"""A blocking WebSocket connection: ``websockets``' sans-I/O protocol over a plain socket.

A single env steps one request at a time, so it needs no event loop at all: a ``step`` is a
``send`` and a ``recv`` system call in the caller's thread, framed by ``websockets``'
sans-I/O :class:`~websockets.client.ClientProtocol` (its public API: ``connect``,
``send_request``, ``send_text``, ``receive_data``, ``events_received``,
``data_to_send``). No thread hop, no task, no future per step.

Timeouts: ``connect_timeout`` bounds connecting and the handshake; ``reply_timeout`` each
reply. A reply that does not come in time closes the connection (a late reply would be
paired with the next request).

Example:
    >>> connection = BlockingConnection.open("http://127.0.0.1:8000")  # doctest: +SKIP
    >>> connection.send('{"type":"reset","data":{}}')                  # doctest: +SKIP
    >>> connection.receive()                                             # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Mapping, Sequence
from typing import Final, NoReturn

from websockets.client import ClientProtocol
from websockets.exceptions import InvalidHandshake, InvalidStatus, InvalidURI
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.protocol import State
from websockets.typing import Subprotocol
from websockets.uri import parse_uri

from openenv_gym.client.http import auth_error, auth_headers, resolve_token
from openenv_gym.errors import (
    ConnectionLostError,
    NotAnOpenEnvServerError,
    ReplyTimeoutError,
    ServerConnectionError,
    SessionClosedError,
)

_CHUNK: Final = 256 * 1024


class BlockingConnection:
    """One WebSocket connection used from one thread at a time; see the module docstring.

    Create it with :meth:`open`.
    """

    def __init__(
        self,
        sock: socket.socket,
        protocol: ClientProtocol,
        response: Response,
        *,
        url: str,
        reply_timeout: float,
    ) -> None:
        self._sock = sock
        self._protocol = protocol
        self._response = response
        self._pending: list[str | bytes] = []
        self._fragments: list[bytes] = []
        self._fragment_text = False
        self.url = url
        self.reply_timeout = reply_timeout
        self.closed = False

    @property
    def subprotocol(self) -> str | None:
        """The WebSocket subprotocol the server agreed to, if any."""
        return self._protocol.subprotocol

    @property
    def headers(self) -> Mapping[str, str]:
        """The headers of the server's handshake response."""
        return self._response.headers

    @classmethod
    def open(
        cls,
        url: str,
        *,
        connect_timeout: float,
        reply_timeout: float,
        max_message_size: int,
        headers: Mapping[str, str] | None = None,
        subprotocols: Sequence[str] = (),
        token: str | None = None,
        unix_path: str | None = None,
    ) -> BlockingConnection:
        """Connect to the ``ws://`` URL ``url`` (through ``unix_path`` when given).

        Raises:
            AuthenticationError: The server refused the token (HTTP 401/403).
            ServerConnectionError: Nothing accepts connections there, or not in time.
            NotAnOpenEnvServerError: Something answered, but refused the WebSocket.
        """
        try:
            uri = parse_uri(url)
        except InvalidURI as exc:
            raise ServerConnectionError(
                f"{url!r} is not a valid server URL ({exc}); expected e.g. 'http://127.0.0.1:8000'",
                url=url,
            ) from exc
        if uri.secure:
            raise ServerConnectionError(
                f"{url}: wss:// is served by the asyncio client, not the blocking one", url=url
            )
        protocol = ClientProtocol(
            uri,
            subprotocols=[Subprotocol(p) for p in subprotocols] or None,
            max_size=max_message_size,
        )
        request = protocol.connect()
        for name, value in {**auth_headers(resolve_token(token)), **dict(headers or {})}.items():
            request.headers[name] = value
        protocol.send_request(request)
        deadline = time.monotonic() + connect_timeout
        sock = _connect_socket(uri.host, uri.port, unix_path, connect_timeout, url)
        try:
            sock.sendall(b"".join(protocol.data_to_send()))
            response, frames = _read_handshake(sock, protocol, deadline, url, connect_timeout)
        except BaseException:
            sock.close()
            raise
        if protocol.handshake_exc is not None or response is None:
            sock.close()
            _raise_handshake_error(protocol.handshake_exc, url, token)
        connection = cls(sock, protocol, response, url=url, reply_timeout=reply_timeout)
        for frame in frames:
            connection._take_frame(frame)
        connection._take_events()
        return connection

    def send(self, frame: str | bytes) -> None:
        """Send ``frame`` as one text frame (``bytes`` must be UTF-8).

        Raises:
            SessionClosedError: The connection was closed before.
            ConnectionLostError: The connection broke (it is closed).
        """
        if self.closed:
            raise SessionClosedError(
                f"the session to {self.url} is closed; create a new env to go on"
            )
        # On failure the socket stays open: a refused session sends an error frame, then
        # closes, and :meth:`receive` still reads what is queued.
        if self._protocol.state is not State.OPEN:
            raise ConnectionLostError(
                f"the connection to {self.url} is closing; the server ended the session",
                url=self.url,
            )
        self._protocol.send_text(frame.encode() if isinstance(frame, str) else frame)
        try:
            self._sock.sendall(b"".join(self._protocol.data_to_send()))
        except OSError as exc:
            raise ConnectionLostError(
                f"the connection to {self.url} broke while sending ({exc})", url=self.url
            ) from exc

    def receive(self) -> str | bytes:
        """The next message (``str`` for text, ``bytes`` for binary frames).

        Raises:
            ReplyTimeoutError: None within ``reply_timeout`` (the connection is closed).
            ConnectionLostError: The connection closed (it is closed).
        """
        deadline = time.monotonic() + self.reply_timeout
        while not self._pending:
            if self.closed:
                raise SessionClosedError(f"the session to {self.url} is closed")
            self._sock.settimeout(max(0.0, deadline - time.monotonic()))
            try:
                data = self._sock.recv(_CHUNK)
            except TimeoutError as exc:
                self.abort()
                raise ReplyTimeoutError(
                    f"no reply from {self.url} within {self.reply_timeout:g}s; the session "
                    "was closed (a late reply would be paired with the wrong request). Raise "
                    "reply_timeout if the environment is slow.",
                    url=self.url,
                    timeout=self.reply_timeout,
                ) from exc
            except OSError as exc:
                self.abort()
                raise self._lost(f"it broke ({exc})") from exc
            if data:
                self._protocol.receive_data(data)
            else:
                self._protocol.receive_eof()
            self._take_events()
            if not self._pending and self._protocol.state is State.CLOSED:
                close = self._protocol.close_rcvd
                self.abort()
                why = f"code {close.code}, reason {close.reason!r}" if close else "no close frame"
                raise self._lost(f"it closed ({why})")
        return self._pending.pop(0)

    def _lost(self, how: str) -> ConnectionLostError:
        return ConnectionLostError(
            f"the connection to {self.url} {how} while waiting for a reply. The server may "
            "have stopped or dropped the session.",
            url=self.url,
        )

    def _take_events(self) -> None:
        """Queue the complete messages received, and send what the protocol must answer
        (pongs, the closing handshake)."""
        for event in self._protocol.events_received():
            if isinstance(event, Frame):
                self._take_frame(event)
        outgoing = self._protocol.data_to_send()
        if outgoing:
            with contextlib.suppress(OSError):
                self._sock.sendall(b"".join(outgoing))

    def _take_frame(self, frame: Frame) -> None:
        if frame.opcode in (Opcode.TEXT, Opcode.BINARY):
            self._fragments = [bytes(frame.data)]
            self._fragment_text = frame.opcode is Opcode.TEXT
        elif frame.opcode is Opcode.CONT:
            self._fragments.append(bytes(frame.data))
        else:
            return  # ping, pong, close: the protocol handles them
        if frame.fin:
            data = b"".join(self._fragments)
            self._fragments = []
            self._pending.append(data.decode() if self._fragment_text else data)

    def abort(self) -> None:
        """Drop the connection at once. Idempotent, never raises."""
        self.closed = True
        with contextlib.suppress(OSError):
            self._sock.close()

    def close(self, farewell: str | None = None) -> None:
        """Send ``farewell`` (e.g. the OpenEnv ``close`` message), then close the
        WebSocket and the socket. Idempotent, never raises."""
        if self.closed:
            return
        with contextlib.suppress(OSError):
            if farewell is not None and self._protocol.state is State.OPEN:
                self._protocol.send_text(farewell.encode())
            if self._protocol.state is State.OPEN:
                self._protocol.send_close(1000)
            self._sock.sendall(b"".join(self._protocol.data_to_send()))
        self.abort()


def _connect_socket(
    host: str, port: int, unix_path: str | None, timeout: float, url: str
) -> socket.socket:
    try:
        if unix_path is not None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            try:
                sock.connect(unix_path)
            except BaseException:
                sock.close()
                raise
        else:
            sock = socket.create_connection((host, port), timeout=timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except TimeoutError as exc:
        raise ServerConnectionError(
            f"could not open {url} within {timeout:g}s. Check that the server is up and "
            "reachable, or raise connect_timeout.",
            url=url,
        ) from exc
    except OSError as exc:
        raise ServerConnectionError(
            f"could not connect to {url}: {exc.strerror or exc}. Is an OpenEnv server running "
            "there? Start one with `openenv-gym serve ...`, or leave base_url unset to let "
            "openenv-gym start an embedded server.",
            url=url,
        ) from exc
    return sock


def _read_handshake(
    sock: socket.socket, protocol: ClientProtocol, deadline: float, url: str, timeout: float
) -> tuple[Response | None, list[Frame]]:
    """The server's handshake response (``None`` when it was not valid HTTP: then
    ``protocol.handshake_exc`` says why) and the frames that came right behind it."""
    while True:
        events = protocol.events_received()
        for k, event in enumerate(events):
            if isinstance(event, Response):
                return event, [e for e in events[k + 1 :] if isinstance(e, Frame)]
        if protocol.handshake_exc is not None:
            return None, []
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            data = sock.recv(_CHUNK)
        except TimeoutError as exc:
            raise ServerConnectionError(
                f"{url} did not complete the WebSocket handshake within {timeout:g}s",
                url=url,
            ) from exc
        except OSError as exc:
            raise ServerConnectionError(
                f"the connection to {url} broke during the WebSocket handshake ({exc}); the "
                "server may be starting or restarting",
                url=url,
            ) from exc
        if data:
            protocol.receive_data(data)
            continue
        protocol.receive_eof()
        events = protocol.events_received()
        for k, event in enumerate(events):
            if isinstance(event, Response):
                return event, [e for e in events[k + 1 :] if isinstance(e, Frame)]
        if protocol.handshake_exc is not None:
            return None, []
        raise ServerConnectionError(
            f"{url} closed the connection during the WebSocket handshake; the server may "
            "be starting or restarting",
            url=url,
        )


def _raise_handshake_error(exc: Exception | None, url: str, token: str | None) -> NoReturn:
    if isinstance(exc, InvalidStatus):
        status = exc.response.status_code
        if status in (401, 403):
            raise auth_error(url, status, resolve_token(token)) from exc
        raise NotAnOpenEnvServerError(
            f"{url} answered HTTP {status} instead of opening a WebSocket: this is not an "
            "OpenEnv server, or base_url is wrong. Expected an OpenEnv server whose WebSocket "
            "endpoint is {base_url}/ws.",
            url=url,
        ) from exc
    if isinstance(exc, InvalidHandshake):
        raise NotAnOpenEnvServerError(
            f"{url} did not complete a WebSocket handshake ({exc}): this is not an OpenEnv "
            "server, or base_url is wrong.",
            url=url,
        ) from exc
    raise ServerConnectionError(f"the WebSocket handshake with {url} failed: {exc}", url=url)


__all__ = ["BlockingConnection"]
