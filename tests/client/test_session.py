"""Sessions and HTTP calls against real sockets: every failure is a typed, explanatory error."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator

import pytest
from websockets.asyncio.server import ServerConnection

from openenv_gym.client import ConnectOptions, SyncSession, fetch_schema, get_json, is_healthy
from openenv_gym.errors import (
    ConnectionLostError,
    NotAnOpenEnvServerError,
    ProtocolError,
    ReplyTimeoutError,
    ServerConnectionError,
    ServerReplyError,
    SessionClosedError,
)
from openenv_gym.wire.messages import ObservationReply, reset_message, state_message, step_message
from tests.conftest import RawWebSocketServer, free_port, plain_http_server


@pytest.fixture
def http_404_url() -> Iterator[str]:
    """A plain HTTP server (not OpenEnv) that answers 404 to everything."""
    with plain_http_server(lambda: (404, b"no such page")) as url:
        yield url


def test_a_session_resets_steps_and_reports_state(cartpole_url: str) -> None:
    session = SyncSession.connect(cartpole_url)
    try:
        reply = session.request_observation(reset_message(seed=1))
        assert isinstance(reply, ObservationReply)
        assert len(reply.observation["observation"]) == 4
        reply = session.request_observation(step_message({"action": 0}))
        assert reply.reward == 1.0
        state = session.request(state_message())
        assert state.state["step_count"] == 1  # type: ignore[union-attr]
    finally:
        session.close()
    session.close()  # idempotent
    assert session.closed


def test_connection_refused_names_the_url_and_what_to_try() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ServerConnectionError) as info:
        SyncSession.connect(url, ConnectOptions(connect_timeout=3))
    assert info.value.url.startswith("ws://127.0.0.1:")
    assert "openenv-gym serve" in str(info.value)


def test_url_with_a_bad_scheme_is_a_connection_error() -> None:
    with pytest.raises(ServerConnectionError, match=re.escape("http://127.0.0.1:8000")):
        SyncSession.connect("ftp://127.0.0.1:8000")


def test_plain_http_server_is_not_an_openenv_server(http_404_url: str) -> None:
    with pytest.raises(NotAnOpenEnvServerError, match="HTTP 404"):
        SyncSession.connect(http_404_url, ConnectOptions(connect_timeout=3))
    with pytest.raises(NotAnOpenEnvServerError, match="HTTP 404"):
        fetch_schema(http_404_url)
    assert not is_healthy(http_404_url)


def test_http_calls_to_nothing_fail_clearly() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ServerConnectionError, match="could not reach"):
        get_json(url, "/health", timeout=2)
    assert not is_healthy(url)


def test_reply_timeout_closes_the_session() -> None:
    async def silent(connection: ServerConnection) -> None:
        async for _ in connection:
            await asyncio.sleep(0)  # read everything, answer nothing

    with RawWebSocketServer(silent) as server:
        session = SyncSession.connect(server.url, ConnectOptions(reply_timeout=0.3))
        with pytest.raises(ReplyTimeoutError) as info:
            session.request(reset_message())
        assert info.value.timeout == 0.3
        assert "reply_timeout" in str(info.value)
        assert session.closed
        with pytest.raises(SessionClosedError):
            session.request(reset_message())


def test_server_dropping_the_connection_is_a_connection_lost_error() -> None:
    async def rude(connection: ServerConnection) -> None:
        await connection.recv()
        await connection.close(code=1011, reason="boom")

    with RawWebSocketServer(rude) as server:
        session = SyncSession.connect(server.url)
        with pytest.raises(ConnectionLostError, match="boom"):
            session.request(reset_message())
        assert session.closed


def test_garbage_reply_is_a_protocol_error() -> None:
    async def garbage(connection: ServerConnection) -> None:
        async for _ in connection:
            await connection.send("<html>hello</html>")

    with RawWebSocketServer(garbage) as server:
        session = SyncSession.connect(server.url)
        with pytest.raises(ProtocolError, match="invalid JSON") as info:
            session.request(reset_message())
        assert "<html>" in str(info.value.received)
        session.close()


def test_error_reply_keeps_the_session_usable(cartpole_url: str) -> None:
    session = SyncSession.connect(cartpole_url)
    try:
        session.request_observation(reset_message(seed=0))
        with pytest.raises(ServerReplyError) as info:
            session.request(step_message({"action": "left"}))
        assert info.value.code in {"VALIDATION_ERROR", "EXECUTION_ERROR"}
        assert not session.closed
        reply = session.request_observation(step_message({"action": 1}))
        assert reply.reward == 1.0
    finally:
        session.close()


def test_state_reply_where_an_observation_is_due_is_a_protocol_error() -> None:
    async def confused(connection: ServerConnection) -> None:
        async for _ in connection:
            await connection.send(json.dumps({"type": "state", "data": {}}))

    with RawWebSocketServer(confused) as server:
        session = SyncSession.connect(server.url)
        with pytest.raises(ProtocolError, match="expected an 'observation' reply"):
            session.request_observation(reset_message())
        session.close()
