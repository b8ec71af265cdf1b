"""Silent clients lose their sessions; clients that read keep them (issue 27, case 4).

The server once stopped pinging, and with no default idle timeout a frozen or partitioned
client held its sessions forever. Now silent connections are pinged and dropped when the ping
goes unanswered. A frozen client here is a real socket that completed the WebSocket handshake
and then reads and writes nothing; a live one is our own client, idle between steps.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from openenv_gym import OpenEnvEnv
from openenv_gym.client import keepalive
from openenv_gym.server.heartbeat import DEFAULT_PING_INTERVAL, DEFAULT_PING_TIMEOUT, Heartbeat
from tests.conftest import raw_websocket_session, wait_for


def _closed_by_server(sock: socket.socket, timeout: float = 10.0) -> bool:
    sock.settimeout(timeout)
    try:
        while sock.recv(4096):
            pass  # the ping(s) the server sent
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def test_a_frozen_clients_session_is_freed(start_probe: Callable[..., Any]) -> None:
    url, registry, thread = start_probe(ping_interval=0.2, ping_timeout=0.2)
    sock = raw_websocket_session(url)
    try:
        assert wait_for(lambda: thread.server.active_sessions == 1)
        # Read nothing yet: the socket buffers the pings, the client answers none.
        assert wait_for(lambda: thread.server.active_sessions == 0, timeout=10), (
            "a client that answers no ping kept its session"
        )
        assert len(registry.closed) == 1  # its environment was closed
        assert _closed_by_server(sock)
    finally:
        sock.close()


def test_without_pings_a_frozen_client_keeps_its_session(start_probe: Callable[..., Any]) -> None:
    url, _registry, thread = start_probe(ping_interval=None)
    sock = raw_websocket_session(url)
    try:
        assert wait_for(lambda: thread.server.active_sessions == 1)
        time.sleep(1.0)
        assert thread.server.active_sessions == 1
    finally:
        sock.close()


@pytest.fixture
def quick_keeper() -> Iterator[None]:
    """Our clients read for idle connections after 0.1 s (instead of 10 s)."""
    keepalive.configure(idle=0.1, period=0.05)
    yield
    keepalive.configure()


@pytest.mark.usefixtures("quick_keeper")
def test_our_client_idle_between_steps_keeps_its_session(start_probe: Callable[..., Any]) -> None:
    url, _registry, thread = start_probe(ping_interval=0.2, ping_timeout=0.3)
    with OpenEnvEnv(url) as env:
        env.reset(seed=1)
        time.sleep(2.0)  # ten ping intervals without a step: the keeper answers the pings
        assert thread.server.active_sessions == 1
        assert thread.server.heartbeat is not None
        assert thread.server.heartbeat.dropped == 0
        env.step(env.action_space.sample())


def test_defaults_free_a_silent_client_within_a_minute() -> None:
    heartbeat = Heartbeat()
    assert heartbeat.ping_interval == DEFAULT_PING_INTERVAL
    assert 2 * DEFAULT_PING_INTERVAL + DEFAULT_PING_TIMEOUT <= 60
    assert keepalive.KEEPALIVE_IDLE + keepalive.KEEPALIVE_PERIOD < DEFAULT_PING_INTERVAL


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"ping_interval": 0}, "ping_interval > 0"), ({"ping_timeout": -1}, "ping_timeout > 0")],
)
def test_times_must_be_positive(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Heartbeat(**kwargs)
