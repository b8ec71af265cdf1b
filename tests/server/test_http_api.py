"""The official HTTP API (POST /reset, POST /step, GET /state) answered like the official
server: the same requests (as the official package's HTTP usage sends them) get the same
JSON from our handlers as from the official FastAPI app serving the same environment."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from openenv_gym.envs.gymnasium import GymnasiumEnvironment
from openenv_gym.server.http_api import HttpEnvApi
from tests.official_shapes import ENVIRONMENTS, serve_shape


@pytest.fixture(scope="module", params=["chat", "columns", "control"])
def both(request: pytest.FixtureRequest) -> Iterator[tuple[str, HttpEnvApi]]:
    env_class, action, _, _ = ENVIRONMENTS[request.param]
    with serve_shape(request.param) as url:
        yield url, HttpEnvApi(env_class, action_type=action)


REQUESTS: list[tuple[str, Any]] = [
    ("/reset", {}),
    ("/reset", {"seed": 3, "episode_id": "e1", "unknown_key": 1}),
    ("/step", {"action": {"message": "hi"}}),
    ("/step", {"action": {"column": 2}, "timeout_s": 5.0}),
    ("/step", {"action": {"values": [0.5, -0.5]}, "request_id": "r1"}),
]


@pytest.mark.parametrize(("path", "body"), REQUESTS)
def test_same_answers_as_the_official_server(
    both: tuple[str, HttpEnvApi], path: str, body: Any
) -> None:
    url, api = both
    official = httpx.post(f"{url}{path}", json=body, timeout=10)
    handler = api.reset if path == "/reset" else api.step
    status, ours = handler(json.dumps(body).encode())
    assert status == official.status_code
    if status == 200:
        expected = official.json()
        if expected.get("metadata") is None:
            expected.pop("metadata", None)  # FastAPI writes the model's null default
        assert ours == expected


def test_bad_bodies_get_422_and_env_errors_500() -> None:
    env_class, action, _, _ = ENVIRONMENTS["columns"]
    api = HttpEnvApi(env_class, action_type=action)
    assert api.reset(b"")[0] == 200  # no body: reset with defaults
    assert api.reset(b"not json")[0] == 422
    assert api.reset(b"[1, 2]")[0] == 422
    assert api.reset(b'{"seed": -1}')[0] == 422
    assert api.step(b"{}")[0] == 422
    status, body = api.step(b'{"action": {"column": "x"}}')
    assert status == 422
    assert body["detail"][0]["loc"] == ["column"]
    status, body = api.step(b'{"action": {"column": 99}}')  # the env raises
    assert status == 500
    assert "ValueError" in body["detail"]


def test_our_gymnasium_environment_over_http() -> None:
    probe = GymnasiumEnvironment("CartPole-v1")
    api = HttpEnvApi(lambda: GymnasiumEnvironment("CartPole-v1"), action_type=probe.action_model)
    probe.close()
    status, body = api.reset(b'{"seed": 0}')
    assert status == 200
    assert len(body["observation"]["observation"]) == 4
    assert body["done"] is False
    # Stateless, like the official server: each request has a fresh env, so a step before
    # any reset is the env's own error (Gymnasium's ResetNeeded), answered 500.
    status, body = api.step(b'{"action": {"action": 1}}')
    assert status == 500
    assert "reset" in body["detail"].lower()
    assert api.step(b'{"action": {"action": 2}}')[0] == 422  # outside Discrete(2)


@pytest.mark.parametrize("name", ["chat", "columns"])
def test_our_server_answers_over_the_network_like_the_official_one(name: str) -> None:
    """The same official-package environment behind the official app and behind our
    server: the official HTTP usage (``requests.post(url + "/reset", json=...)``) gets the
    same answers from both."""
    from openenv_gym.server import OpenEnvServer, ServerThread

    env_class, action, observation, state = ENVIRONMENTS[name]
    ours = OpenEnvServer(
        env_class, action_type=action, observation_type=observation, state_type=state
    )
    calls: list[tuple[str, str, Any]] = [
        ("post", "/reset", {"seed": 1}),
        ("post", "/step", {"action": {"message": "hi"} if name == "chat" else {"column": 1}}),
        ("post", "/step", {"action": {"nonsense": 1}}),
        ("get", "/state", None),
    ]
    with serve_shape(name) as official_url, ServerThread(ours) as running:
        for method, path, body in calls:
            kwargs = {"json": body} if body is not None else {}
            theirs = httpx.request(method, official_url + path, timeout=10, **kwargs)
            mine = httpx.request(method, running.url + path, timeout=10, **kwargs)
            assert mine.status_code == theirs.status_code, (path, mine.text, theirs.text)
            if theirs.status_code == 200:
                expected = theirs.json()
                if isinstance(expected, dict) and expected.get("metadata", 0) is None:
                    expected.pop("metadata")
                assert mine.json() == expected, path
