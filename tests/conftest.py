"""Shared fixtures: real servers on 127.0.0.1, started in this process or as children."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import http.server
import importlib.util
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from websockets.asyncio.server import Server, ServerConnection, serve

from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.errors import DockerUnavailableError
from openenv_gym.images.env_images import IMAGES, build_images
from openenv_gym.providers.docker import docker_client
from openenv_gym.server import ServerThread


@pytest.fixture(scope="session")
def cartpole_url() -> Iterator[str]:
    """Our gymnasium CartPole-v1 server, in a thread of this process."""
    with ServerThread(gymnasium_server("CartPole-v1", max_sessions=256)) as server:
        yield server.url


@contextlib.contextmanager
def plain_http_server(answer: Callable[[], tuple[int, bytes]]) -> Iterator[str]:
    """A plain HTTP server on 127.0.0.1 (not OpenEnv) that answers every ``GET`` with
    ``answer()``'s status and ``text/plain`` body; yields its URL."""

    class Answer(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # as every real web server speaks; 1.0 is no handshake

        def do_GET(self) -> None:
            status, body = answer()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    """A port that was free a moment ago on 127.0.0.1 (for servers that must not be there)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RawWebSocketServer:
    """A bare websockets server on 127.0.0.1 with a handler written by the test.

    It stands in for a misbehaving remote (a server that never answers, answers garbage,
    or drops the connection), so the client's handling of each can be checked for real.
    """

    def __init__(self, handler: Callable[[ServerConnection], Awaitable[None]]) -> None:
        self._handler = handler
        self._loop = asyncio.new_event_loop()
        self._server: Server | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._ready.set()
        self._loop.run_forever()

    async def _start(self) -> None:
        self._server = await serve(self._handler, "127.0.0.1", 0, compression=None)
        self.port = next(iter(self._server.sockets)).getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> RawWebSocketServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: Any) -> None:
        async def stop() -> None:
            if self._server is not None:
                self._server.close()
                await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``condition()`` until it is true or ``timeout`` passes (no timing assertion)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())


def process_running(pid: int) -> bool:
    """Alive and not a zombie (a killed child stays a zombie until its parent reaps it)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone (ESRCH while reading: gone now)
        return False


def raw_websocket_session(url: str) -> socket.socket:
    """A WebSocket session opened by hand on a plain socket, which the caller then leaves
    alone: it neither reads nor writes (a stopped or partitioned client)."""
    parts = urlsplit(url)
    assert parts.hostname is not None
    assert parts.port is not None
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET /ws HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


# --------------------------------------------------------------------------- Docker


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[Any]:
    """A client of a running Docker engine; the test is skipped (reason shown) without one."""
    try:
        client = docker_client()
    except DockerUnavailableError as exc:
        pytest.skip(f"no Docker engine: {str(exc).splitlines()[0]}")
    yield client
    client.close()


def image(client: Any, name: str) -> str:
    """The tag of our image ``name``, built first if missing (skipped until its server exists)."""
    spec = IMAGES[name]
    if importlib.util.find_spec(spec.module) is None:
        pytest.skip(f"{spec.module} is not in this tree yet, so the {name} image has no server")
    try:
        client.images.get(spec.tag)
    except Exception:
        build_images([name], client=client, progress=lambda line: None)
    return spec.tag


@pytest.fixture(scope="session")
def gymnasium_image(docker_engine: Any) -> str:
    """``openenv-gym/gymnasium:latest``, built if missing."""
    return image(docker_engine, "gymnasium")


@pytest.fixture
def two_cores() -> Iterator[None]:
    """At most two of this process's cores (and its embedded servers'), so an embedded
    server's workers fill them: its replies are read at once, as on the 2-core CI machine."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, sorted(before)[:2])
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)
