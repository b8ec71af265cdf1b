"""A server built on the first release of OpenEnv (``openenv-core==0.1.1``, HTTP only, no
``/schema``, no ``/ws``), run from its own venv: the single env plays it over HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import gymnasium as gym
import httpx
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from tests.client.test_http_session import play
from tests.third_party_servers.fastapi_apps import MODELS
from tests.third_party_servers.openenv_core_01 import serve_openenv_core_01

pytestmark = pytest.mark.slow  # a child process in a venv of its own


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve_openenv_core_01() as url:
        yield url


def test_it_is_the_first_release(url: str) -> None:
    assert httpx.get(url + "/health").json() == {"status": "healthy"}
    assert httpx.get(url + "/schema").status_code == 404


def test_single_env_plays_200_steps_over_http(url: str) -> None:
    env = gym.make("openenv/Remote-v0", base_url=url, **MODELS)
    try:
        assert env.unwrapped.form == "http"
        assert repr(env.unwrapped).endswith("(http)>")
        rewards = play(env, 200)
        assert set(rewards) == {-1.0, 0.0, 1.0}
        assert env.unwrapped.state()["step_count"] >= 0
    finally:
        env.close()
