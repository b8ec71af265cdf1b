"""Servers with no ``/ws``: plain FastAPI apps and the first release's, spoken to over HTTP
(:mod:`openenv_gym.client.http_session`, :mod:`openenv_gym.client.session`); and the errors
that name the real cause of a refused upgrade."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from websockets.asyncio.server import ServerConnection

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.client import ConnectOptions, HttpSession, health, is_healthy, open_session
from openenv_gym.errors import (
    AuthenticationError,
    BinaryEncodingRefusedError,
    CapacityReachedError,
    ConnectionLostError,
    NotAnOpenEnvServerError,
    NoWebSocketEndpointError,
    ProtocolError,
    ServerReplyError,
)
from openenv_gym.wire.messages import StateReply, reset_message, state_message, step_message
from tests.conftest import RawWebSocketServer
from tests.official_peer import serve_official_app
from tests.third_party_servers.canned import CannedHttpServer
from tests.third_party_servers.fastapi_apps import MODELS, walk_app


@pytest.fixture(scope="module")
def wrapped_url() -> Iterator[str]:
    """A FastAPI app whose step body is ``{"action": {...}}``."""
    with serve_official_app(walk_app("wrapped")) as url:
        yield url


@pytest.fixture(scope="module")
def flat_url() -> Iterator[str]:
    """A FastAPI app whose step body is the action's fields."""
    with serve_official_app(walk_app("flat")) as url:
        yield url


def play(env: gym.Env[Any, Any], steps: int) -> list[float]:
    """``steps`` steps of random play (reset at each episode end); the rewards."""
    env.action_space.seed(0)
    env.reset(seed=0)
    rewards = []
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert obs in env.observation_space
        rewards.append(reward)
        if terminated or truncated:
            env.reset()
    return rewards


@pytest.mark.parametrize("fixture", ["wrapped_url", "flat_url"])
def test_fastapi_app_plays_over_http(
    fixture: str, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    url = request.getfixturevalue(fixture)
    with caplog.at_level(logging.INFO, logger="openenv_gym.client.session"):
        env = gym.make("openenv/Remote-v0", base_url=url, **MODELS)
    try:
        assert env.unwrapped.form == "http"
        assert repr(env.unwrapped) == f"<OpenEnvEnv {url} (http)>"
        assert "has no OpenEnv WebSocket endpoint" in caplog.text
        obs, _ = env.reset(seed=5)
        assert obs == {"position": np.int64(1), "steps": np.int64(0)}
        rewards = play(env, 200)
        assert set(rewards) == {-1.0, 0.0, 1.0}  # both ends reached: the episodes are real
        assert env.unwrapped.state()["step_count"] >= 0
    finally:
        env.close()


def test_step_body_shape_is_found_once_and_kept(wrapped_url: str, flat_url: str) -> None:
    for url, flat in ((wrapped_url, False), (flat_url, True)):
        session = HttpSession(url)
        try:
            session.request_observation(reset_message(seed=1))
            assert session.flat_step is None
            reply = session.request_observation(step_message({"direction": 2}))
            assert reply.observation == {"position": 1, "steps": 1}
            assert session.flat_step is flat
            reply = session.request_observation(step_message({"direction": 2}))
            assert reply.observation == {"position": 2, "steps": 2}
        finally:
            session.close()


def test_app_with_schema_but_no_ws_needs_no_keyword() -> None:
    with serve_official_app(walk_app("wrapped", schema_route=True)) as url:
        env = gym.make("openenv/Remote-v0", base_url=url)
        try:
            assert env.unwrapped.form == "http"
            assert env.action_space == gym.spaces.Discrete(3)
            play(env, 20)
        finally:
            env.close()


def test_refused_action_is_a_typed_error_and_the_session_lives_on(flat_url: str) -> None:
    session = HttpSession(flat_url)
    try:
        session.request(reset_message(seed=0))
        with pytest.raises(ServerReplyError, match=r"POST .*/step answered HTTP 422") as caught:
            session.request(step_message({"direction": 9}))
        assert caught.value.code == "VALIDATION_ERROR"
        assert not session.closed
        reply = session.request_observation(step_message({"direction": 1}))
        assert reply.observation == {"position": -1, "steps": 1}
    finally:
        session.close()


def test_state_over_http(wrapped_url: str) -> None:
    session = HttpSession(wrapped_url)
    try:
        session.request(reset_message(seed=0))
        reply = session.request(state_message())
        assert isinstance(reply, StateReply)
        assert reply.state == {"episode_id": reply.state["episode_id"], "step_count": 0}
        with pytest.raises(ProtocolError, match="an HTTP session sends"):
            session.request({"type": "close"})
    finally:
        session.close()


def test_server_gone_is_connection_lost() -> None:
    with serve_official_app(walk_app()) as url:
        session = HttpSession(url)
        session.request(reset_message())
    with pytest.raises(ConnectionLostError, match="is the server up"):
        session.request(step_message({"direction": 1}))
    assert session.closed


def test_required_binary_encoding_on_http_server(wrapped_url: str) -> None:
    with pytest.raises(BinaryEncodingRefusedError, match="pass encoding='auto'"):
        open_session(wrapped_url, ConnectOptions(encoding="binary"))


def test_health_is_any_2xx(wrapped_url: str) -> None:
    assert health(wrapped_url) == (200, '{"status":"ok"}')
    assert is_healthy(wrapped_url)


def test_403_with_a_challenge_is_a_token_error() -> None:
    challenge = 'WWW-Authenticate: Bearer realm="x"\r\n'
    with (
        CannedHttpServer("403 Forbidden", challenge) as server,
        pytest.raises(AuthenticationError, match="requires a bearer token"),
    ):
        open_session(server.url)


def test_403_after_a_token_was_sent_is_a_token_error(wrapped_url: str) -> None:
    with pytest.raises(AuthenticationError, match="a token that it refused"):
        open_session(wrapped_url, ConnectOptions(token="secret"))


def test_no_ws_and_no_health_is_not_an_openenv_server() -> None:
    with (
        CannedHttpServer("404 Not Found", body=b"nothing here") as server,
        pytest.raises(NotAnOpenEnvServerError, match=r"GET /health answered HTTP 404") as e,
    ):
        open_session(server.url)
    assert "token" not in str(e.value)  # never sent after a token that does not exist
    assert isinstance(e.value.__cause__, NoWebSocketEndpointError)


def test_no_ws_and_no_reset_route_names_both() -> None:
    with CannedHttpServer("404 Not Found") as refused, CannedHttpServer("200 OK") as healthy:
        session = HttpSession(refused.url)
        with pytest.raises(
            NotAnOpenEnvServerError,
            match=r"no OpenEnv WebSocket endpoint \(/ws\) and no POST /reset",
        ):
            session.request(reset_message())
        session.close()
        assert health(healthy.url) == (200, "")  # an empty 2xx is healthy too


def test_reply_that_is_not_openenv_is_a_protocol_error() -> None:
    with CannedHttpServer("200 OK", body=b'{"result": 1}') as server:
        session = HttpSession(server.url)
        with pytest.raises(ProtocolError, match=r"expected an observation reply \{'observation'"):
            session.request(step_message({"move": 1}))
        # a reset reply without 'observation' is the observation itself (plain apps send it)
        assert session.request_observation(reset_message()).observation == {"result": 1}
        session.close()
    with CannedHttpServer("200 OK", body=b"[1, 2]") as server:
        session = HttpSession(server.url)
        with pytest.raises(ProtocolError, match=r"expected an observation reply \{'observation'"):
            session.request(reset_message())
        session.close()


def test_websocket_of_another_protocol_is_a_protocol_error() -> None:
    async def jsonrpc(connection: ServerConnection) -> None:
        async for _ in connection:
            await connection.send('{"jsonrpc": "2.0", "id": 1, "result": {}}')

    with RawWebSocketServer(jsonrpc) as server:
        env = gym.make("openenv/Remote-v0", base_url=server.url, **MODELS)
        try:
            assert env.unwrapped.form == "websocket"
            with pytest.raises(ProtocolError, match=r"expected a JSON object with a 'type' key"):
                env.reset()
        finally:
            env.close()


def test_vector_env_says_why_not_and_the_call_that_works(wrapped_url: str) -> None:
    with pytest.raises(NoWebSocketEndpointError, match=r"SyncVectorEnv") as caught:
        gym.make_vec(
            "openenv/Remote-v0",
            num_envs=2,
            vectorization_mode="vector_entry_point",
            base_url=wrapped_url,
            **MODELS,
        )
    assert "one session per server" in str(caught.value)
    with serve_official_app(walk_app()) as first, serve_official_app(walk_app()) as second:
        envs = gym.vector.SyncVectorEnv(
            [
                lambda u=u: gym.make("openenv/Remote-v0", base_url=u, **MODELS)
                for u in (first, second)
            ]
        )
        try:
            obs, _ = envs.reset(seed=[4, 5])
            assert obs["position"].tolist() == [0, 1]
            obs, *_ = envs.step(np.array([2, 0]))
            assert obs["position"].tolist() == [1, 0]
        finally:
            envs.close()


def test_a_second_session_to_a_one_env_server_is_refused_until_the_first_closes(
    wrapped_url: str,
) -> None:
    first = gym.make("openenv/Remote-v0", base_url=wrapped_url, **MODELS)
    try:
        first.reset(seed=5)
        with pytest.raises(CapacityReachedError, match=r"holds ONE environment") as caught:
            gym.make("openenv/Remote-v0", base_url=wrapped_url, **MODELS)
        assert caught.value.code == "CAPACITY_REACHED"
        obs, *_ = first.step(2)  # the first env's episode went on untouched
        assert obs["position"] == 2
    finally:
        first.close()
    second = gym.make("openenv/Remote-v0", base_url=wrapped_url, **MODELS)
    second.close()
