"""A server built on the first release of OpenEnv (``openenv-core==0.1.1``, HTTP only, no
``/schema``, no ``/ws``), run from its own venv: the single env plays it over HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import gymnasium as gym
import httpx
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import SpaceMappingError
from tests.client.test_http_session import play
from tests.third_party_servers.fastapi_apps import MODELS
from tests.third_party_servers.openenv_core_01 import serve_openenv_core_01
from tests.third_party_servers.walk_models import WalkAction, WalkObservation

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


def test_refusal_names_the_envs_own_models_and_the_pasted_call_plays_200_steps() -> None:
    # The release's web interface names the env (GET /web/metadata: "walk_env"); its /ws is
    # the web page's, so the pasted call plays over HTTP.
    with serve_openenv_core_01(web=True) as web_url:
        with pytest.raises(SpaceMappingError) as caught:
            gym.make("openenv/Remote-v0", base_url=web_url)
        paste = str(caught.value).splitlines()[-1]
        assert paste == (
            f"Paste and edit: gym.make('openenv/Remote-v0', base_url={web_url!r}, "
            "action_model=WalkAction, observation_model=WalkObservation)"
        )
        # the env's own models.py, imported as the message says
        namespace = {"gym": gym, "WalkAction": WalkAction, "WalkObservation": WalkObservation}
        env = eval(paste.removeprefix("Paste and edit: "), namespace)
        try:
            assert env.unwrapped.form == "http"
            assert env.action_space == gym.spaces.Discrete(3)
            rewards = play(env, 200)
            assert set(rewards) == {-1.0, 0.0, 1.0}
        finally:
            env.close()


def test_refusal_without_a_name_says_which_models_to_import(url: str) -> None:
    with pytest.raises(SpaceMappingError) as caught:
        gym.make("openenv/Remote-v0", base_url=url)
    lines = str(caught.value).splitlines()
    assert "GET /openapi.json: the body of POST /step is an untyped object (no fields)" in (
        "\n".join(lines)
    )
    assert "`from <env package>.models import MyAction, MyObservation`" in lines[-2]
    assert lines[-1].endswith("action_model=MyAction, observation_model=MyObservation)")
