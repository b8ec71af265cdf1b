"""Plain HTTP requests with a body (``POST /reset``, ``POST /step``) on the WebSocket port.

``websockets``' HTTP parser takes only ``GET`` (the WebSocket handshake and our ``GET``
routes). :class:`BodyRequestConnection` is the ``ServerConnection`` the server is built with
(``websockets``' documented ``create_connection`` hook): it looks at the request line of
each new connection; a ``GET`` goes on to ``websockets`` unchanged, any other method is read
here (headers, then a ``Content-Length`` body) and answered by
:meth:`~openenv_gym.server.routes.HttpRoutes.answer_with_body`, then the connection closes
(no keep-alive, like every route of this server).

Example:
    >>> connection_class = body_request_connection(routes)  # doctest: +SKIP
    >>> serve(handler, host, port, create_connection=connection_class)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, ClassVar, Final

from websockets.datastructures import Headers

from openenv_gym.server.flow_control import BoundedServerConnection
from openenv_gym.server.routes import HttpRoutes, json_response

logger = logging.getLogger("openenv_gym.server")

#: The longest request head (request line and headers) read, in bytes.
MAX_HEAD_BYTES: Final = 64 * 1024
#: The largest body read, in bytes.
MAX_BODY_BYTES: Final = 16 * 1024 * 1024
_GET: Final = b"GET "


class BodyRequestConnection(BoundedServerConnection):
    """A ``ServerConnection`` (with flow control, :mod:`.flow_control`) that answers requests
    other than ``GET`` itself."""

    routes: ClassVar[HttpRoutes]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head: bytes | None = b""  # None once the request went to websockets
        self._answering = False

    def data_received(self, data: bytes) -> None:
        head = self._head
        if head is None:
            super().data_received(data)
            return
        head += data
        if len(head) < len(_GET) and _GET.startswith(head):
            self._head = head  # not enough to tell yet
            return
        if head.startswith(_GET):
            self._head = None
            super().data_received(head)
            return
        self._head = head
        if not self._answering:
            self._read_request(head)

    def _read_request(self, data: bytes) -> None:
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
        body = data[end + 4 : end + 4 + length]
        if len(body) < length:
            return  # wait for the rest
        self._answering = True
        method, target = parts[0], parts[1]
        task = self.loop.create_task(self._answer(method, target, headers, body))
        _tasks.add(task)
        task.add_done_callback(_tasks.discard)

    async def _answer(self, method: str, target: str, headers: Headers, body: bytes) -> None:
        response = await self.routes.answer_with_body(method, target, headers, body)
        self._write(response.serialize())

    def _reply(self, status: int, body: Any) -> None:
        self._answering = True
        self._write(json_response(status, body).serialize())

    def _write(self, data: bytes) -> None:
        with contextlib.suppress(Exception):
            self.transport.write(data)
            self.transport.close()


_tasks: set[asyncio.Task[None]] = set()


def body_request_connection(routes: HttpRoutes) -> type[BodyRequestConnection]:
    """The connection class of a server whose routes are ``routes``."""
    return type("BodyRequestConnection", (BodyRequestConnection,), {"routes": routes})


__all__ = ["BodyRequestConnection", "body_request_connection"]
