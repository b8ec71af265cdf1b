"""Connections that never finish their request cannot exhaust a server (issue 27, case 1).

Idle TCP connections and half-sent headers used to be kept forever, even by a server with a
token: ~21,000 of them ran it out of descriptors and ``/health`` failed with no log line. Now a
deadline drops them, a cap bounds how many may wait at once, and a server at its descriptor
limit logs it, sheds them and keeps answering. Real sockets on 127.0.0.1; the descriptor case
runs a real ``openenv-gym serve`` child with a lowered ``RLIMIT_NOFILE``.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from openenv_gym import OpenEnvEnv
from openenv_gym.server.admission import Admission
from tests.server.conftest import ServedProcess

TOKEN = "admission-token"


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname is not None
    assert parts.port is not None
    return parts.hostname, parts.port


def _connect(url: str, first_bytes: bytes = b"") -> socket.socket:
    sock = socket.create_connection(_address(url), timeout=10)
    if first_bytes:
        sock.sendall(first_bytes)
    return sock


def _closed_by_server(sock: socket.socket, timeout: float = 10.0) -> bool:
    """Whether the server closed ``sock`` within ``timeout`` (EOF or reset)."""
    sock.settimeout(timeout)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


@pytest.mark.parametrize(
    "first_bytes",
    [
        b"",
        b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n",
        b"GE",
        b"POST /reset HTTP/1.1\r\nContent-Length: 2\r\n",
        b"POST /reset HTTP/1.1\r\nContent-Length: 10\r\n\r\n{",
    ],
    ids=["idle", "half-a-handshake", "half-a-method", "half-a-post-head", "half-a-body"],
)
def test_a_connection_without_a_whole_request_is_dropped_at_the_deadline(
    start_probe: Callable[..., Any], first_bytes: bytes
) -> None:
    url, _registry, _thread = start_probe(token=TOKEN, handshake_timeout=0.5)
    sock = _connect(url, first_bytes)
    try:
        assert _closed_by_server(sock), "the server kept a connection with no whole request"
    finally:
        sock.close()
    assert httpx.get(url + "/health", timeout=10).json()["status"] == "healthy"


def test_a_session_opened_before_the_deadline_outlives_it(
    start_probe: Callable[..., Any], wire: Any
) -> None:
    url, _registry, _thread = start_probe(token=TOKEN, handshake_timeout=0.3)
    with wire.open(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}) as ws:
        time.sleep(0.6)  # past the deadline: an established session is not pending
        wire.assert_session_works(ws)


def test_beyond_the_pending_cap_the_oldest_waiting_connection_is_dropped(
    start_probe: Callable[..., Any], wire: Any
) -> None:
    url, _registry, thread = start_probe(token=TOKEN, handshake_timeout=60.0, max_pending=8)
    idle = [_connect(url) for _ in range(24)]
    try:
        # The first 16 made room for later ones; the server holds at most 8 waiting.
        assert all(_closed_by_server(sock) for sock in idle[:16])
        assert thread.server.admission.pending <= 8
        assert httpx.get(url + "/health", timeout=10).json()["status"] == "healthy"
        with wire.open(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}) as ws:
            wire.assert_session_works(ws)
    finally:
        for sock in idle:
            sock.close()


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="handshake_timeout > 0"):
        Admission(handshake_timeout=0)
    with pytest.raises(ValueError, match="max_pending >= 1"):
        Admission(max_pending=0)


@pytest.fixture
def low_descriptor_server(serve_process: Callable[..., ServedProcess]) -> ServedProcess:
    """``openenv-gym serve`` (one process, with a token) limited to 200 descriptors."""
    return serve_process("--token", TOKEN, nofile=200)


@pytest.mark.timeout(120)
def test_a_server_out_of_descriptors_logs_it_keeps_answering_and_recovers(
    low_descriptor_server: ServedProcess,
) -> None:
    url = low_descriptor_server.url
    idle = [_connect(url) for _ in range(400)]  # twice the server's descriptor limit
    try:
        for _ in range(3):  # every one of them answered while the flood is held open
            assert httpx.get(url + "/health", timeout=10).json()["status"] == "healthy"
    finally:
        for sock in idle:
            sock.close()
    with OpenEnvEnv(url, token=TOKEN) as env:
        env.reset(seed=0)
        env.step(env.action_space.sample())
    err = low_descriptor_server.stop()
    assert "file descriptors nearly exhausted" in err, err[-2000:]
    assert "RLIMIT_NOFILE soft 200" in err
    assert err.count("file descriptors nearly exhausted") < 10, "the warning is rate-limited"
