"""The readiness probe the Docker provider polls: docker-proxy accepts connections before the
server in the container listens, then resets them or closes them without a reply. Those must
read as "not ready yet", never as an error, and a real answer as ready."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from openenv_gym.client import is_healthy

HEALTHY = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 20\r\n"
    b"Connection: close\r\n\r\n"
    b'{"status":"healthy"}'
)


class FlakyListener:
    """Accepts on 127.0.0.1; resets the first ``resets`` connections, closes the next
    ``silent`` ones without a byte, and answers the rest like a healthy server."""

    def __init__(self, resets: int, silent: int) -> None:
        self.plan = ["reset"] * resets + ["silent"] * silent
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            what = self.plan.pop(0) if self.plan else "healthy"
            if what == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            elif what == "healthy":
                conn.recv(65536)
                conn.sendall(HEALTHY)
            conn.close()

    def __enter__(self) -> FlakyListener:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[FlakyListener]:
    with FlakyListener(resets=2, silent=2) as running:
        yield running


def test_resets_and_empty_replies_are_not_ready_then_ready(listener: FlakyListener) -> None:
    answers = [is_healthy(listener.url, timeout=2.0) for _ in range(5)]
    assert answers == [False, False, False, False, True]
