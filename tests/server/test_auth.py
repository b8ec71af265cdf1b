"""Bearer-token auth: the server checks it on HTTP routes and the WebSocket handshake, the
client sends it (``token=`` or ``OPENENV_TOKEN``), and a wrong or missing one is a clear error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from openenv_gym import OpenEnvEnv
from openenv_gym.client import ConnectOptions, SyncSession, get_json
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.errors import AuthenticationError, ServerConnectionError
from openenv_gym.providers.ready_line import READY_PREFIX
from openenv_gym.server import OpenEnvServer, ServerThread
from openenv_gym.wire.messages import http_to_ws_url

TOKEN = "s3cret-token"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server() -> Iterator[OpenEnvServer]:
    return gymnasium_server("CartPole-v1", token=TOKEN)


@pytest.fixture(scope="module")
def url(server: OpenEnvServer) -> Iterator[str]:
    with ServerThread(server) as running:
        yield running.url


@pytest.fixture(autouse=True)
def _no_token_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENENV_TOKEN", raising=False)


def test_health_is_open_and_other_routes_need_the_token(url: str) -> None:
    assert httpx.get(url + "/health").json() == {"status": "healthy"}
    for path in ("/schema", "/metadata", "/state", "/nowhere"):
        refused = httpx.get(url + path)
        assert refused.status_code == 401, path
        assert refused.headers["WWW-Authenticate"].startswith("Bearer")
        assert "Authorization: Bearer" in refused.json()["detail"]
        wrong = httpx.get(url + path, headers={"Authorization": f"Bearer {TOKEN}x"})
        assert wrong.status_code == 401, path
    ok = httpx.get(url + "/schema", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200
    assert set(ok.json()) >= {"action", "observation"}


@pytest.mark.parametrize(
    "header", [None, "Bearer wrong", f"Basic {TOKEN}", f"bearer {TOKEN}x", "Bearer"]
)
def test_websocket_handshake_is_refused_without_the_right_token(
    url: str, header: str | None
) -> None:
    headers = {} if header is None else {"Authorization": header}
    with pytest.raises(InvalidStatus) as caught:
        connect(http_to_ws_url(url), additional_headers=headers, open_timeout=5)
    assert caught.value.response.status_code == 401


def test_env_with_the_token_plays(url: str) -> None:
    env = OpenEnvEnv(url, token=TOKEN)
    try:
        env.reset(seed=0)
        assert env.step(1)[1] == 1.0
        assert env.server_metadata["name"] == "CartPole-v1"
    finally:
        env.close()


def test_token_from_the_environment_variable(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without the variable (and no token=) the server refuses the env ...
    with pytest.raises(AuthenticationError, match="no token"):
        gym.make("openenv/Remote-v0", base_url=url)
    # ... with it, the env sends the variable's token and plays.
    monkeypatch.setenv("OPENENV_TOKEN", TOKEN)
    env = gym.make("openenv/Remote-v0", base_url=url)
    try:
        observation, _ = env.reset(seed=0)
        assert env.observation_space.contains(observation)
        assert env.step(1)[1] == 1.0  # the session the token opened plays
        assert env.unwrapped.server_metadata["name"] == "CartPole-v1"
    finally:
        env.close()


@pytest.mark.parametrize(("token", "said"), [(None, "no token"), ("wrong", "refused")])
def test_missing_or_wrong_token_is_an_authentication_error(
    url: str, token: str | None, said: str
) -> None:
    with pytest.raises(AuthenticationError, match=said) as caught:
        OpenEnvEnv(url, token=token)
    message = str(caught.value)
    assert "HTTP 401" in message
    assert "OPENENV_TOKEN" in message
    assert isinstance(caught.value, ServerConnectionError)
    assert isinstance(caught.value, PermissionError)


@pytest.mark.parametrize(("token", "said"), [(None, "no token"), ("wrong", "refused")])
def test_websocket_session_refused_is_an_authentication_error(
    url: str, server: OpenEnvServer, token: str | None, said: str
) -> None:
    # With the models given no /schema is fetched: the WebSocket handshake is what refuses.
    with pytest.raises(AuthenticationError, match=said) as caught:
        OpenEnvEnv(
            url,
            token=token,
            action_model=server.action_type,
            observation_model=server.observation_type,
        )
    assert caught.value.url.endswith("/ws")
    with pytest.raises(AuthenticationError):
        SyncSession.connect(url, ConnectOptions(token=token))
    with pytest.raises(AuthenticationError):
        get_json(url, "/schema", token=token)


def test_server_without_token_ignores_a_sent_token(cartpole_url: str) -> None:
    # The token goes in the Authorization header of every request; a server that requires
    # none answers them as it answers a client that sends none.
    assert get_json(cartpole_url, "/schema", token="anything") == get_json(cartpole_url, "/schema")
    env = OpenEnvEnv(cartpole_url, token="anything")
    try:
        observation, _ = env.reset(seed=0)
        assert env.observation_space.contains(observation)
        assert env.step(1)[1] == 1.0
    finally:
        env.close()


@pytest.mark.parametrize("how", ["flag", "variable"])
def test_serve_command_takes_token_from_flag_or_variable(how: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENENV_TOKEN"}
    args = [sys.executable, "-m", "openenv_gym.cli", "serve", "gymnasium", "--env-id"]
    args += ["CartPole-v1", "--port", "0"]
    if how == "flag":
        args += ["--token", TOKEN]
    else:
        env["OPENENV_TOKEN"] = TOKEN
    process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, cwd=REPO, env=env)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith(READY_PREFIX), line
        served = json.loads(line[len(READY_PREFIX) :])["url"]
        assert httpx.get(served + "/schema").status_code == 401
        headers = {"Authorization": f"Bearer {TOKEN}"}
        assert httpx.get(served + "/schema", headers=headers).status_code == 200
    finally:
        process.terminate()
        process.wait(30)


def test_embedded_server_with_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    env = gym.make("openenv/CartPole-v1", token=TOKEN)
    try:
        env.reset(seed=0)
        url = env.unwrapped.base_url
        assert httpx.get(url + "/schema").status_code == 401
    finally:
        env.close()


def test_two_authorization_headers_are_a_bad_request_without_a_traceback(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Once HTTP 500 and an unauthenticated 17-line traceback per request (issue 27, 7)."""
    twice = [("Authorization", f"Bearer {TOKEN}"), ("Authorization", f"Bearer {TOKEN}")]
    with caplog.at_level("DEBUG", logger="openenv_gym.server"):
        for _ in range(20):
            got = httpx.get(url + "/schema", headers=twice)
            assert got.status_code == 400
            assert "expected one Authorization header, got 2" in got.json()["detail"]
        posted = httpx.post(url + "/reset", json={}, headers=twice)
        assert posted.status_code == 400
        with pytest.raises(InvalidStatus) as refused:
            connect(http_to_ws_url(url), additional_headers=twice, open_timeout=10)
        assert refused.value.response.status_code == 400
    assert not [r for r in caplog.records if r.exc_info is not None], "a traceback was logged"
    assert not [r for r in caplog.records if r.levelname in ("WARNING", "ERROR")]
    ok = httpx.get(url + "/schema", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200
