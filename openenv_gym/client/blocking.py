"""A blocking WebSocket connection: ``websockets``' sans-I/O protocol over a plain socket.

Envs step one request at a time per connection, so they need no event loop at all: a
``step`` is a ``send`` and a ``recv`` system call in the caller's thread, framed by
``websockets``' sans-I/O :class:`~websockets.client.ClientProtocol` (its public API:
``connect``, ``send_request``, ``send_text``, ``receive_data``, ``events_received``,
``data_to_send``). No thread hop, no task, no future per step. A vector env sends on all
its connections first, then reads each reply (:mod:`openenv_gym.client.exchange`).
``wss://`` URLs go over TLS (:mod:`ssl`, the system's trusted certificates).

Timeouts: ``connect_timeout`` bounds connecting and the handshake; ``reply_timeout`` each
reply. A reply that does not come in time closes the connection (a late reply would be
paired with the next request).

Keepalive: servers ping (official ones every ~20 s) and drop a connection that does not
answer. A connection reads, and so answers pings, only while it waits for a reply; while
a learner trains for a minute the :mod:`openenv_gym.client.keepalive` thread answers for it
(:meth:`BlockingConnection.answer_pings`, under :attr:`BlockingConnection.lock`).

Example:
    >>> url = "ws://127.0.0.1:8000/ws"
    >>> connection = BlockingConnection.open(url, ConnectOptions())  # doctest: +SKIP
    >>> connection.send('{"type":"reset","data":{}}')                # doctest: +SKIP
    >>> connection.receive()                                           # doctest: +SKIP
"""

from __future__ import annotations

import collections
import contextlib
import ipaddress
import math
import select
import socket
import ssl
import threading
import time
from collections.abc import Mapping, Sequence

from websockets.client import ClientProtocol
from websockets.exceptions import InvalidURI
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.protocol import State
from websockets.typing import Subprotocol
from websockets.uri import parse_uri

from openenv_gym.busy_poll import DEFAULT_CLIENT_BUSY_POLL, BusyPoller
from openenv_gym.client.handshake import RECV_CHUNK, raise_handshake_error, read_handshake
from openenv_gym.client.http import auth_headers, resolve_token
from openenv_gym.client.keepalive import forget, watch
from openenv_gym.client.options import ConnectOptions
from openenv_gym.client.sockets import open_socket
from openenv_gym.errors import (
    ConnectionLostError,
    ReplyTimeoutError,
    ServerConnectionError,
    SessionClosedError,
)
from openenv_gym.wire.data_frames import DataFrameReader, data_frame
from openenv_gym.wire.encoding import EncodedLink, Encoding, encoding_of
from openenv_gym.wire.messages import CLIENT_INBOUND_LIMIT, WORKER_HEADER, http_to_ws_url


def _on_loopback(sock: socket.socket) -> bool:
    """Whether ``sock`` is connected to a loopback address (an IPv4-mapped one included)."""
    try:
        peer = sock.getpeername()
    except OSError:
        return False
    if not isinstance(peer, tuple):
        return True  # a Unix socket's path
    try:
        address = ipaddress.ip_address(peer[0].split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))


class BlockingConnection(EncodedLink):
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
        unix_path: str | None = None,
        busy_poll: float = DEFAULT_CLIENT_BUSY_POLL,
        poller: BusyPoller | None = None,
        max_message_size: int = CLIENT_INBOUND_LIMIT,
        at_frame_boundary: bool = False,
    ) -> None:
        self._sock = sock
        self._fd = sock.fileno()
        #: Spins after a request, waiting for the reply awake (:mod:`openenv_gym.busy_poll`).
        self._poller = poller if poller is not None else BusyPoller(busy_poll, hybrid=True)
        self._poller.register(self._fd)
        self._protocol = protocol
        #: Reads whole data frames before the protocol does (:mod:`~openenv_gym.wire.data_frames`);
        #: ``None`` when the handshake's bytes ran into a frame (the protocol reads all).
        self._reader = (
            DataFrameReader(protocol, masked=False, max_size=max_message_size)
            if at_frame_boundary
            else None
        )
        self._response = response
        self._pending: collections.deque[str | bytes] = collections.deque()
        self._fragments: list[bytes] = []
        self._fragment_text = False
        self.url = url
        #: The Unix socket the connection goes through, or ``None`` (TCP).
        self.unix_path = unix_path
        self.reply_timeout = reply_timeout
        self.closed = False
        #: Held while a thread uses the connection (the keepalive thread only tries it).
        self.lock = threading.Lock()
        #: ``time.monotonic()`` of the last send or receive.
        self.last_active = time.monotonic()
        #: The encoding the server agreed to (:mod:`openenv_gym.wire.encoding`).
        self.encoding: Encoding = encoding_of(protocol.subprotocol)
        #: The largest frame accepted from the server, raw or once unpacked (bytes).
        self.max_message_size = max_message_size
        #: Whether the server is on this host by address: a Unix socket or a loopback IP
        #: (a proxy or a container port published on 127.0.0.1 counts as loopback).
        self.peer_on_loopback = unix_path is not None or _on_loopback(sock)

    def fileno(self) -> int:
        """The socket's file descriptor (to wait on several connections with ``select``)."""
        return self._fd

    @property
    def has_message(self) -> bool:
        """Whether a complete message is already read and waits for :meth:`receive`."""
        return bool(self._pending)

    @property
    def subprotocol(self) -> str | None:
        """The WebSocket subprotocol the server agreed to, if any."""
        return self._protocol.subprotocol

    @property
    def headers(self) -> Mapping[str, str]:
        """The headers of the server's handshake response."""
        return self._response.headers

    @property
    def worker(self) -> str | None:
        """The server process that took the connection (our servers name it in the
        ``X-OpenEnv-Gym-Worker`` handshake header), ``None`` when not named."""
        return self._response.headers.get(WORKER_HEADER)

    @classmethod
    def open(
        cls,
        url: str,
        options: ConnectOptions,
        *,
        subprotocols: Sequence[str] = (),
        unix_path: str | None = None,
        poller: BusyPoller | None = None,
    ) -> BlockingConnection:
        """Connect to the ``ws://`` or ``wss://`` URL ``url`` (through ``unix_path`` when
        given), and have :mod:`~openenv_gym.client.keepalive` answer its pings while idle.

        ``options`` gives the timeouts, the message-size limit, the headers, the token and
        ``busy_poll``, the longest spin waiting awake for a reply before sleeping
        (:mod:`openenv_gym.busy_poll`). ``subprotocols`` are offered as they are (see
        :meth:`~openenv_gym.wire.encoding.EncodingChoice.subprotocols`). A vector env
        passes one ``poller`` for all its connections instead: a round trip's wait is one
        spin, which ends when the first reply lands.

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
        connect_timeout, token = options.connect_timeout, options.token
        protocol = ClientProtocol(
            uri,
            subprotocols=[Subprotocol(p) for p in subprotocols] or None,
            max_size=options.max_message_size,
        )
        request = protocol.connect()
        for name, value in {**auth_headers(resolve_token(token)), **options.headers}.items():
            request.headers[name] = value
        protocol.send_request(request)
        deadline = time.monotonic() + connect_timeout
        sock = open_socket(uri, url, unix_path=unix_path, timeout=connect_timeout)
        try:
            sock.sendall(b"".join(protocol.data_to_send()))
            response, frames, at_boundary = read_handshake(
                sock, protocol, deadline, url, connect_timeout
            )
        except BaseException:
            sock.close()
            raise
        if protocol.handshake_exc is not None or response is None:
            sock.close()
            raise_handshake_error(protocol.handshake_exc, url, token)
        connection = cls(
            sock,
            protocol,
            response,
            url=url,
            reply_timeout=options.reply_timeout,
            unix_path=unix_path,
            busy_poll=options.busy_poll,
            poller=poller,
            max_message_size=options.max_message_size,
            at_frame_boundary=at_boundary,
        )
        for frame in frames:
            connection._take_frame(frame)
        connection._take_events([])
        watch(connection)
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
        with self.lock:
            self.last_active = time.monotonic()
            # The protocol's queued answers (pongs) first, then the frame, built here.
            queued = self._protocol.data_to_send()
            data = data_frame(
                frame.encode() if isinstance(frame, str) else frame, text=True, masked=True
            )
            try:
                self._sock.sendall(b"".join([*queued, data]) if queued else data)
            except OSError as exc:
                raise ConnectionLostError(
                    f"the connection to {self.url} broke while sending ({exc})", url=self.url
                ) from exc

    def receive(self, deadline: float | None = None, *, spin: bool = True) -> str | bytes:
        """The next message (``str`` for text, ``bytes`` for binary frames).

        Args:
            deadline: ``time.monotonic()`` by which it must have come; default: now plus
                ``reply_timeout``. A vector env gives all its connections one deadline.
            spin: Busy-poll before sleeping (:mod:`openenv_gym.busy_poll`). A round trip
                on many connections spins for its first reply only: the others come
                about as late, and a round trip whose first reply came late is not one to
                spin for.

        Raises:
            ReplyTimeoutError: None by the deadline (the connection is closed).
            ConnectionLostError: The connection closed (it is closed).
            SessionClosedError: The connection was closed before.
        """
        with self.lock:
            if deadline is None:
                deadline = time.monotonic() + self.reply_timeout
            while not self._pending:
                if self.closed:
                    raise SessionClosedError(f"the session to {self.url} is closed")
                self._read(max(0.001, deadline - time.monotonic()), spin)
                spin = False  # the rest of a frame is on its way
            self.last_active = time.monotonic()
            return self._pending.popleft()

    def _read(self, timeout: float, spin: bool = False) -> None:
        """One ``recv`` (waiting up to ``timeout``), fed to the protocol.

        Raises:
            ReplyTimeoutError, ConnectionLostError: As :meth:`receive` (the connection is
                closed).
        """
        sock = self._sock
        poller = self._poller
        if spin and not (isinstance(sock, ssl.SSLSocket) and sock.pending()):
            poller.spin()  # awake until the reply lands, or the budget is spent
        sock.settimeout(timeout)
        try:
            data = sock.recv(RECV_CHUNK)
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
            raise self._lost("broke", str(exc)) from exc
        if spin:
            poller.arrived()
        self._feed(data)
        if not self._pending and self._protocol.state is State.CLOSED:
            close = self._protocol.close_rcvd
            self.abort()
            why = f"code {close.code}, reason {close.reason!r}" if close else "no close frame"
            raise self._lost("closed", why)

    def answer_pings(self) -> None:
        """Read what the server sent without waiting, so the protocol answers its pings.

        Called by the keepalive thread with :attr:`lock` held, on an idle connection.
        A message that arrives is kept for :meth:`receive`; a connection that closed is
        left for :meth:`receive` to report. Never raises.
        """
        if self.closed or self._protocol.state is State.CLOSED:
            return
        try:
            while self._readable():
                data = self._sock.recv(RECV_CHUNK)
                self._feed(data)
                if not data:
                    return
        except (OSError, ValueError):  # broken, or closed meanwhile: receive() reports it
            return

    def wait_readable(self, deadline: float) -> None:
        """Sleep until a reply can be read (a frame already parsed, or bytes in the socket)
        or until ``deadline`` (``time.monotonic()``), without busy-polling; reads nothing,
        raises nothing (the :meth:`receive` after it reports a timeout or a broken
        connection)."""
        with self.lock:
            if not (self._pending or self.closed):
                self._readable(max(0.0, deadline - time.monotonic()))

    def _readable(self, timeout: float = 0.0) -> bool:
        """Whether bytes can be read from the socket, waiting up to ``timeout`` seconds."""
        sock = self._sock
        if isinstance(sock, ssl.SSLSocket) and sock.pending():
            return True
        poller = select.poll()  # not select(): any descriptor number
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(math.ceil(timeout * 1000)))

    def _lost(self, how: str, why: str) -> ConnectionLostError:
        return ConnectionLostError(
            f"the connection to {self.url} {how} while waiting for a reply ({why}). The "
            "server may have stopped or dropped the session.",
            url=self.url,
        )

    def _feed(self, data: bytes) -> None:
        """Read ``data`` from the socket (``b""``: the end of the stream) and take its events."""
        reader = self._reader
        if reader is not None:
            events = reader.receive_data(data) if data else reader.receive_eof()
        else:
            if data:
                self._protocol.receive_data(data)
            else:
                self._protocol.receive_eof()
            events = self._protocol.events_received()
        self._take_events(events)

    def _take_events(self, events: Sequence[object]) -> None:
        """Queue the complete messages of ``events``, and send what the protocol must answer
        (pongs, the closing handshake)."""
        for event in events:
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
        self._poller.unregister(self._fd)
        forget(self)
        with contextlib.suppress(OSError):
            self._sock.close()

    def close(self, farewell: str | None = None) -> None:
        """Send ``farewell`` (e.g. the OpenEnv ``close`` message), then close the
        WebSocket and the socket. Idempotent, never raises."""
        if self.closed:
            return
        with self.lock, contextlib.suppress(OSError):
            if farewell is not None and self._protocol.state is State.OPEN:
                self._protocol.send_text(farewell.encode())
            if self._protocol.state is State.OPEN:
                self._protocol.send_close(1000)
            self._sock.sendall(b"".join(self._protocol.data_to_send()))
        self.abort()


def ws_url_or_raise(base_url: str) -> str:
    """The ``ws://`` (``wss://``) URL of the session endpoint of ``base_url``.

    Raises:
        ServerConnectionError: ``base_url`` is not an http(s)/ws(s) URL.
    """
    try:
        return http_to_ws_url(base_url)
    except ValueError as exc:
        raise ServerConnectionError(str(exc), url=str(base_url)) from exc


__all__ = ["BlockingConnection", "ws_url_or_raise"]
