"""The admission and heartbeat limits as ``openenv-gym serve`` flags, against real served
processes: ``--handshake-timeout``, ``--max-pending``, ``--ping-interval``, ``--ping-timeout``.
Bad values are usage errors naming the flag and the value."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
import pytest

from openenv_gym import OpenEnvEnv
from tests.conftest import raw_websocket_session
from tests.server.conftest import ServedProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
PING_OPCODE = 0x9


def _idle_connection(url: str) -> socket.socket:
    parts = urlsplit(url)
    assert parts.hostname is not None
    assert parts.port is not None
    return socket.create_connection((parts.hostname, parts.port), timeout=10)


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closed ``sock`` (EOF or reset) within ``seconds``, skipping
    whatever it sent first."""
    deadline = time.monotonic() + seconds
    try:
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            if not sock.recv(4096):
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        pass
    return False


def test_handshake_timeout_drops_a_silent_connection_at_the_flag_s_deadline(
    serve_process: Callable[..., ServedProcess],
) -> None:
    served = serve_process("--handshake-timeout", "0.5")
    with _idle_connection(served.url) as idle:
        # The default deadline is 10 s: closed within 5 s, it was the flag's 0.5 s.
        assert _closed_within(idle, 5.0)
    assert httpx.get(served.url + "/health", timeout=10).json()["status"] == "healthy"


def test_max_pending_drops_the_oldest_waiting_connections_beyond_the_flag(
    serve_process: Callable[..., ServedProcess],
) -> None:
    served = serve_process("--max-pending", "4", "--handshake-timeout", "60")
    idle = [_idle_connection(served.url) for _ in range(12)]
    try:
        time.sleep(0.5)  # let the server accept them all
        assert all(_closed_within(sock, 10.0) for sock in idle[:8]), "the oldest 8 dropped"
        assert not any(_closed_within(sock, 0.2) for sock in idle[8:]), "the newest 4 wait"
        with OpenEnvEnv(served.url) as env:  # a new client still gets its turn
            env.reset(seed=0)
    finally:
        for sock in idle:
            sock.close()


def _pinged_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        data = sock.recv(2)
    except TimeoutError:
        return False
    return bool(data) and data[0] & 0x0F == PING_OPCODE


def test_ping_interval_and_timeout_free_the_session_of_a_client_that_does_not_answer(
    serve_process: Callable[..., ServedProcess],
) -> None:
    served = serve_process("--ping-interval", "1", "--ping-timeout", "1")
    sock = raw_websocket_session(served.url)
    try:
        assert _pinged_within(sock, 5.0)  # the default interval is 20 s
        assert _closed_within(sock, 5.0)  # never answered: dropped after 1 s more
    finally:
        sock.close()


def test_ping_interval_0_never_pings(serve_process: Callable[..., ServedProcess]) -> None:
    served = serve_process("--ping-interval", "0", "--ping-timeout", "1")
    sock = raw_websocket_session(served.url)
    try:
        assert not _pinged_within(sock, 2.0)
    finally:
        sock.close()


#: Why ``serve`` refuses pings under 1 s (issue 34, item 3).
TOO_SHORT = (
    "expected at least 1 s (openenv-gym clients answer the pings of an idle connection within "
    "0.75 s; shorter settings drop healthy clients that pause between steps)"
)


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [
        ("--handshake-timeout", "0", "expected a positive number of seconds, got '0'"),
        ("--handshake-timeout", "soon", "expected a number of seconds, got 'soon'"),
        ("--max-pending", "0", "expected a positive integer, got '0'"),
        ("--max-pending", "1.5", "expected a positive integer, got '1.5'"),
        ("--ping-interval", "-1", f"{TOO_SHORT} or 0 (off), got '-1': use --ping-interval 1"),
        ("--ping-interval", "nan", f"{TOO_SHORT} or 0 (off), got 'nan': use --ping-interval 1"),
        ("--ping-interval", "soon", "expected at least 1 s or 0 (off), got 'soon'"),
        ("--ping-timeout", "0", f"{TOO_SHORT}, got '0': use --ping-timeout 1"),
    ],
)
def test_a_bad_value_is_a_usage_error_naming_the_flag_and_the_value(
    flag: str, value: str, expected: str
) -> None:
    command = [sys.executable, "-m", "openenv_gym.cli", "serve", "gymnasium"]
    command += ["--env-id", "CartPole-v1", "--port", "0", f"{flag}={value}"]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert f"argument {flag}: {expected}" in done.stderr, done.stderr


def test_the_flags_are_in_the_help() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "openenv_gym.cli", "serve", "gymnasium", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    for flag in ("--handshake-timeout S", "--max-pending N", "--ping-interval S"):
        assert flag in done.stdout
    assert "--ping-timeout S" in done.stdout
    assert "(default: 10)" in done.stdout  # the handshake deadline
