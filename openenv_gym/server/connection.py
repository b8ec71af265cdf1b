"""One server connection: an :class:`asyncio.Protocol` framed by ``websockets``' sans-I/O API.

The server's hot path is a frame in, a reply out. :class:`ServerConnection` handles it inside
the event loop's ``data_received`` callback: it feeds the bytes to ``websockets``'
:class:`~websockets.server.ServerProtocol` (public sans-I/O API: ``receive_data``,
``events_received``, ``accept``, ``send_response``, ``send_text``, ``data_to_send``), hands
each complete message to its :class:`MessageHandler`, which answers synchronously, and writes
the reply before the callback returns: one loop iteration per step, no task, no future, no
queue. ``python -m benchmarks.ws_stack`` measured this design against ``websockets``'
asyncio server, ``aiohttp`` and ``picows`` (see the README's table): ``picows`` echoes a few
µs faster, but it refuses requests with a body before its listener sees them (``POST
/reset``, ``POST /step`` must be served on the same port) and has no public way to adopt a
connection after reading its request head.

What happens to a new connection:

* a request other than ``GET`` (``POST /reset``, ``POST /step``) is read and answered by
  :mod:`.http_requests`, then the connection closes;
* a ``GET`` is parsed by ``websockets``; :class:`ConnectionHooks` answers routes (``/health``,
  ``/schema``, ...) with a response, or accepts the WebSocket handshake on ``/ws`` and opens a
  handler (one session, or K sessions on a batch connection);
* pings are answered by the protocol as frames are parsed; fragmented messages are joined.

Memory stays bounded whatever the peer does: while the transport holds more than its write
limit (asyncio's ``pause_writing``) nothing more is read from the peer; a frame larger than
``max_size`` fails the connection with code 1009 before it is buffered in full.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Protocol

from websockets.frames import Frame, Opcode
from websockets.http11 import Request, Response
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.typing import Subprotocol

from openenv_gym.server.fault_replies import ErrorLog
from openenv_gym.server.http_requests import BodyRequestReader
from openenv_gym.server.turn_end import TurnEnd
from openenv_gym.wire.data_frames import DataFrameReader, ends_at_handshake

logger = logging.getLogger("openenv_gym.server")

#: Seconds a closing connection waits for the peer's close frame before dropping the socket.
CLOSE_TIMEOUT: Final = 5.0
_GET: Final = b"GET "


class MessageHandler(Protocol):
    """What a :class:`ServerConnection` hands its messages to, once the handshake is done."""

    def on_message(self, message: bytes) -> None:
        """Answer one complete message (text or binary, as bytes)."""

    def on_close(self) -> None:
        """The connection is gone: release what the handler holds. Called once."""


class ConnectionHooks(Protocol):
    """The server's side of a connection: routes, handshake and handlers."""

    def process_request(
        self, connection: ServerConnection, request: Request
    ) -> Response | Awaitable[Response] | None:
        """A response for ``request``, or ``None`` to accept the WebSocket handshake."""

    def process_response(self, connection: ServerConnection, response: Response) -> None:
        """Edit the handshake response (headers) before it is sent."""

    def select_subprotocol(self, offered: Sequence[Subprotocol]) -> Subprotocol | None:
        """The subprotocol to accept from ``offered``, if any."""

    def open_handler(self, connection: ServerConnection) -> MessageHandler | None:
        """The handler of an accepted connection; ``None`` when it was refused (the hooks
        replied and closed it)."""

    def answer_body_request(
        self, method: str, target: str, headers: Any, body: bytes
    ) -> Awaitable[Response]:
        """The response to a request with a body."""

    def connection_opened(self, connection: ServerConnection) -> bool:
        """Remember ``connection`` (it was just accepted); ``False``: close it at once
        (the server has no room for it)."""

    def request_received(self, connection: ServerConnection) -> None:
        """``connection`` sent its whole request head (it is no longer pending)."""

    @property
    def handshake_timeout(self) -> float:
        """Seconds a new connection has to send its whole request head."""

    def connection_closed(self, connection: ServerConnection) -> None:
        """Forget ``connection`` (it is gone)."""

    @property
    def turn_end(self) -> TurnEnd:
        """Flushes deferred replies and spins (or not) at the end of each loop turn."""


class ServerConnection(asyncio.Protocol):
    """One accepted connection of an :class:`~openenv_gym.server.OpenEnvServer`.

    Args:
        hooks: The server's routes, handshake and handlers.
        max_size: The largest frame (and message) read; larger ones close with 1009.
    """

    def __init__(self, hooks: ConnectionHooks, *, max_size: int) -> None:
        self.hooks = hooks
        # websockets binds this function to the protocol (its first argument).
        self.protocol = ServerProtocol(
            select_subprotocol=lambda _protocol, offered: hooks.select_subprotocol(offered),
            max_size=max_size,
        )
        self._max_size = max_size
        #: Reads whole data frames before the protocol (:mod:`openenv_gym.wire.data_frames`)
        #: once the handshake is done, if its bytes ended with the request.
        self._reader: DataFrameReader | None = None
        #: The bytes fed until the handshake ends (``None`` past :data:`_HANDSHAKE_BYTES`).
        self._handshake: bytearray | None = bytearray()
        self.transport: asyncio.Transport | None = None
        self.handler: MessageHandler | None = None
        self._head: bytes | None = b""  # None once the request went to websockets
        self._body_reader: BodyRequestReader | None = None
        self._fragments: list[bytes] | None = None
        self._writes_paused = False
        self._flush_scheduled = False
        self._lost = False
        self._close_timer: asyncio.TimerHandle | None = None
        self._turn_end = hooks.turn_end
        self._poller = self._turn_end.poller
        self._fd = -1
        self._delivered = False
        self._deadline: asyncio.TimerHandle | None = None
        #: Bytes arrived since the heartbeat last looked (:mod:`.heartbeat`).
        self.heard = True
        #: ``time.monotonic()`` of the heartbeat's unanswered ping, or ``None``.
        self.pinged_at: float | None = None
        self.closed = asyncio.get_running_loop().create_future()

    # ----------------------------------------------------------------- properties

    @property
    def subprotocol(self) -> str | None:
        """The accepted WebSocket subprotocol, if any."""
        return self.protocol.subprotocol

    @property
    def open(self) -> bool:
        """Whether messages can be sent."""
        return self.protocol.state is State.OPEN and not self._lost

    # ----------------------------------------------------------------- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream server's transport
        if not self.hooks.connection_opened(self):
            transport.abort()  # type: ignore[attr-defined]  # a stream server's transport
            return
        self._deadline = asyncio.get_running_loop().call_later(
            self.hooks.handshake_timeout, self._handshake_expired
        )
        if self._poller is not None:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                self._fd = sock.fileno()
                self._poller.register(self._fd)

    def data_received(self, data: bytes) -> None:
        self.heard = True
        self._turn_end.heard()
        if self._body_reader is not None:
            self._body_reader.feed(data)
            return
        if self._head is not None:
            data = self._sniff(data)
            if not data:
                return
        poller = self._poller
        if poller is not None:
            poller.arrived()
        protocol = self.protocol
        reader = self._reader
        if reader is not None:
            events = reader.receive_data(data)
        else:
            handshake = self._handshake
            if handshake is not None:
                handshake += data
                if len(handshake) > _HANDSHAKE_BYTES:
                    self._handshake = None  # no reader for this connection
            protocol.receive_data(data)
            events = protocol.events_received()
        for event in events:
            if isinstance(event, Frame):
                self._take_frame(event)
            elif isinstance(event, Request):
                self._take_request(event)
        self._flush()
        if protocol.state is State.CLOSED and self.transport is not None:
            self.transport.close()
        elif self._delivered:
            self._delivered = False
            self._turn_end.replied()  # spin (if it pays) once the turn's replies are out

    def eof_received(self) -> bool | None:
        if self._body_reader is not None or self._head is not None:
            return None
        if self._reader is not None:
            self._reader.receive_eof()  # what it kept goes to the protocol first
        else:
            self.protocol.receive_eof()
        self._flush()
        return None  # the transport closes itself

    def pause_writing(self) -> None:
        # The peer does not read what it is sent: read nothing more from it until it does.
        self._writes_paused = True
        if self.transport is not None:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        self._writes_paused = False
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        if self._poller is not None:
            self._poller.unregister(self._fd)
        if self._close_timer is not None:
            self._close_timer.cancel()
        if self._deadline is not None:
            self._deadline.cancel()
        handler, self.handler = self.handler, None
        if handler is not None:
            try:
                handler.on_close()
            except Exception:
                logger.exception("closing a connection's sessions failed")
        self.hooks.connection_closed(self)
        if not self.closed.done():
            self.closed.set_result(None)

    # ----------------------------------------------------------------- sending

    def send(self, message: bytes, *, text: bool, defer: bool = False) -> None:
        """Send one message (``bytes``: UTF-8 when ``text``); dropped when not open.

        ``defer=True`` writes it at the end of this loop turn, with every other reply
        computed in the same turn: a client stepping many sessions is woken once
        (:mod:`.turn_end`).
        """
        if not self.open:
            return
        if text:
            self.protocol.send_text(message)
        else:
            self.protocol.send_binary(message)
        if not defer:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self._turn_end.defer(self)

    def ping(self) -> None:
        """Send a ping frame (the peer's pong, or anything it sends, shows it is alive)."""
        if self.open:
            self.protocol.send_ping(b"")
            self._flush()

    def flush_deferred(self) -> None:
        """Write the replies deferred by :meth:`send` (called by :class:`.TurnEnd`)."""
        self._flush_scheduled = False
        self._flush()

    def close(self, code: int = 1000, reason: str = "") -> None:
        """Start the closing handshake; the socket is dropped if the peer does not answer
        within :data:`CLOSE_TIMEOUT` seconds. Idempotent."""
        if self._lost or self.transport is None:
            return
        if self.protocol.state is State.OPEN:
            self.protocol.send_close(code, reason)
            self._flush()
        elif self.protocol.state is State.CONNECTING:
            self.transport.close()
            return
        if self._close_timer is None and not self._lost:
            loop = asyncio.get_running_loop()
            self._close_timer = loop.call_later(CLOSE_TIMEOUT, self.abort)

    def abort(self) -> None:
        """Drop the socket now."""
        if self.transport is not None and not self._lost:
            self.transport.abort()

    def _flush(self) -> None:
        transport = self.transport
        if transport is None or self._lost:
            return
        for data in self.protocol.data_to_send():
            if data:
                transport.write(data)
            elif not transport.is_closing():
                transport.close()  # end of stream: after the buffered bytes

    # ----------------------------------------------------------------- requests

    def _handshake_expired(self) -> None:
        self._deadline = None
        logger.debug(
            "dropped a connection that sent no complete request within %.1f s",
            self.hooks.handshake_timeout,
        )
        self.abort()

    def _request_received(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
            self.hooks.request_received(self)

    def _sniff(self, data: bytes) -> bytes:
        """Route the first bytes of a connection: ``GET`` goes on to ``websockets``, other
        methods to the body-request reader. Returns what ``websockets`` should parse."""
        assert self._head is not None  # only called before the request is routed
        head = self._head + data
        if len(head) < len(_GET) and _GET.startswith(head):
            self._head = head  # not enough to tell yet
            return b""
        self._head = None
        if head.startswith(_GET):
            return head
        assert self.transport is not None  # data comes after connection_made
        self._body_reader = BodyRequestReader(
            self.transport, self.hooks.answer_body_request, self._request_received
        )
        self._body_reader.feed(head)
        return b""

    def _take_request(self, request: Request) -> None:
        self._request_received()
        try:
            answer = self.hooks.process_request(self, request)
        except Exception as exc:
            _request_failures.warn(logger, "processing a request failed: %r", exc)
            answer = self.protocol.reject(500, f"Internal Server Error: {exc}")
        if answer is None:
            self._accept(request)
        elif isinstance(answer, Response):
            self.protocol.send_response(answer)
        else:
            task = asyncio.get_running_loop().create_task(self._answer_later(answer))
            _background.add(task)
            task.add_done_callback(_background.discard)

    async def _answer_later(self, answer: Awaitable[Response]) -> None:
        try:
            response = await answer
        except Exception as exc:
            _request_failures.warn(logger, "processing a request failed: %r", exc)
            response = self.protocol.reject(500, f"Internal Server Error: {exc}")
        if not self._lost:
            self.protocol.send_response(response)
            self._flush()

    def _accept(self, request: Request) -> None:
        response = self.protocol.accept(request)
        if response.status_code == 101:
            self.hooks.process_response(self, response)
        self.protocol.send_response(response)
        self._flush()
        if response.status_code == 101 and self.protocol.state is State.OPEN:
            received, self._handshake = self._handshake, None
            if received is not None and ends_at_handshake(bytes(received)):
                self._reader = DataFrameReader(self.protocol, masked=True, max_size=self._max_size)
            self.handler = self.hooks.open_handler(self)

    # ----------------------------------------------------------------- frames

    def _take_frame(self, frame: Frame) -> None:
        opcode = frame.opcode
        data = frame.data if type(frame.data) is bytes else bytes(frame.data)
        if opcode is Opcode.TEXT or opcode is Opcode.BINARY:
            if frame.fin:
                self._deliver(data)
            else:
                self._fragments = [data]
        elif opcode is Opcode.CONT and self._fragments is not None:
            self._fragments.append(data)
            if frame.fin:
                message, self._fragments = b"".join(self._fragments), None
                self._deliver(message)

    def _deliver(self, message: bytes) -> None:
        handler = self.handler
        if handler is None or self.protocol.state is not State.OPEN:
            return
        self._delivered = True
        try:
            handler.on_message(message)
        except Exception:
            logger.exception("answering a message failed; closing the connection")
            self.close(1011, "internal error")


#: At most this many bytes of a handshake are kept to see whether it ends at a frame
#: boundary; a longer one (websockets refuses most) gets no :class:`DataFrameReader`.
_HANDSHAKE_BYTES: Final = 64 * 1024

#: Server-wide: failed requests come before authentication, so a flood must not flood the
#: log (one line each, tracebacks at DEBUG, rate-limited).
_request_failures = ErrorLog()

#: Tasks answering slow routes; kept referenced until they finish.
_background: set[asyncio.Task[None]] = set()


def connection_factory(hooks: ConnectionHooks, *, max_size: int) -> Callable[[], ServerConnection]:
    """The protocol factory for ``loop.create_server`` / ``create_unix_server``."""
    return lambda: ServerConnection(hooks, max_size=max_size)


async def wait_closed(connections: Sequence[ServerConnection], timeout: float) -> None:
    """Wait until every connection in ``connections`` is gone, aborting any left after
    ``timeout`` seconds."""
    waiters = [c.closed for c in connections if not c.closed.done()]
    if not waiters:
        return
    _done, pending = await asyncio.wait(waiters, timeout=timeout)
    if pending:
        for connection in connections:
            connection.abort()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.gather(*pending), 1.0)


__all__ = [
    "CLOSE_TIMEOUT",
    "ConnectionHooks",
    "MessageHandler",
    "ServerConnection",
    "connection_factory",
    "wait_closed",
]
