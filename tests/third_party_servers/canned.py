"""A server that answers every request with one canned HTTP response: a stand-in for servers
whose answer (to the WebSocket upgrade, to ``/health``, to ``/reset``) is the point of a test.

Example:
    >>> import httpx
    >>> with CannedHttpServer("200 OK", body=b"{}") as server:
    ...     httpx.get(server.url + "/health").status_code
    200
"""

from __future__ import annotations

import socket
import threading
from typing import Any


class CannedHttpServer:
    """Answers every request with one canned HTTP response (a stand-in for servers whose
    answer to the upgrade is the point of the test)."""

    def __init__(self, status: str, headers: str = "", body: bytes = b"") -> None:
        self.reply = (
            f"HTTP/1.1 {status}\r\n{headers}Content-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode() + body
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            with client:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = client.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                client.sendall(self.reply)

    def __enter__(self) -> CannedHttpServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)  # wakes accept()
        self.sock.close()
        self.thread.join(5)
