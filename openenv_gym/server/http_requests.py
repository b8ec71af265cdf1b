"""Plain HTTP requests with a body (``POST /reset``, ``POST /step``) on the WebSocket port.

``websockets``' HTTP parser takes only ``GET`` (the WebSocket handshake and our ``GET``
routes). A :class:`~openenv_gym.server.connection.ServerConnection` looks at the request line
of each new connection; a ``GET`` goes on to ``websockets``, any other method is read by a
:class:`BodyRequestReader` (headers, then a ``Content-Length`` body) and answered by
:meth:`~openenv_gym.server.routes.HttpRoutes.answer_with_body`, then the connection closes
(no keep-alive, like every route of this server).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

from websockets.datastructures import Headers
from websockets.http11 import Response

from openenv_gym.server.routes import json_response

logger = logging.getLogger("openenv_gym.server")

#: The longest request head (request line and headers) read, in bytes.
MAX_HEAD_BYTES: Final = 64 * 1024
#: The largest body read, in bytes.
MAX_BODY_BYTES: Final = 16 * 1024 * 1024


class BodyRequestReader:
    """Reads one request with a body from a connection's first bytes, then answers it.

    Args:
        transport: The connection's transport; closed after the response.
        answer: ``answer(method, target, headers, body)``, awaited for the response.
        on_request: Called once, when the request has fully arrived (or was refused).
    """

    def __init__(
        self,
        transport: asyncio.WriteTransport,
        answer: Callable[[str, str, Headers, bytes], Awaitable[Response]],
        on_request: Callable[[], None] | None = None,
    ) -> None:
        self._transport = transport
        self._answer = answer
        self._on_request = on_request
        self._data = bytearray()  # grows in place: a big body arrives in many reads
        self._answering = False

    def feed(self, data: bytes) -> None:
        """Take the next bytes of the connection (ignored once the request is complete)."""
        if self._answering:
            return
        self._data += data
        self._read_request(self._data)

    def _read_request(self, data: bytearray) -> None:
        end = data.find(b"\r\n\r\n")
        if end < 0:
            if len(data) > MAX_HEAD_BYTES:
                self._reply(431, {"detail": "Request Header Fields Too Large"})
            return
        lines = data[:end].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            self._reply(400, {"detail": "Bad Request: not an HTTP/1.1 request line"})
            return
        headers = Headers()
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                self._reply(400, {"detail": f"Bad Request: malformed header {line[:80]!r}"})
                return
            headers[name.strip()] = value.strip()
        if "chunked" in headers.get("Transfer-Encoding", "").lower():
            self._reply(411, {"detail": "Length Required: send the body with Content-Length"})
            return
        try:
            length = int(headers.get("Content-Length", "0"))
        except ValueError:
            self._reply(400, {"detail": "Bad Request: Content-Length is not a number"})
            return
        if length < 0 or length > MAX_BODY_BYTES:
            self._reply(413, {"detail": f"Content Too Large: at most {MAX_BODY_BYTES} bytes"})
            return
        if len(data) - (end + 4) < length:
            return  # wait for the rest
        body = bytes(data[end + 4 : end + 4 + length])
        self._answering = True
        self._data = bytearray()
        self._request_done()
        task = asyncio.get_running_loop().create_task(
            self._answer_and_close(parts[0], parts[1], headers, body)
        )
        _tasks.add(task)
        task.add_done_callback(_tasks.discard)

    async def _answer_and_close(
        self, method: str, target: str, headers: Headers, body: bytes
    ) -> None:
        try:
            response = await self._answer(method, target, headers, body)
        except Exception as exc:
            logger.warning("%s %s failed", method, target, exc_info=True)
            response = json_response(500, {"detail": f"{type(exc).__name__}: {exc}"})
        self._write(response.serialize())

    def _request_done(self) -> None:
        on_request, self._on_request = self._on_request, None
        if on_request is not None:
            on_request()

    def _reply(self, status: int, body: Any) -> None:
        self._answering = True
        self._data = bytearray()
        self._request_done()
        self._write(json_response(status, body).serialize())

    def _write(self, data: bytes) -> None:
        with contextlib.suppress(Exception):
            self._transport.write(data)
            self._transport.close()


_tasks: set[asyncio.Task[None]] = set()


__all__ = ["MAX_BODY_BYTES", "MAX_HEAD_BYTES", "BodyRequestReader"]
