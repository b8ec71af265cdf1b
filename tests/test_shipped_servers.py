"""Third-party server shapes of issue 31 (Target A): real FastAPI apps on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest
from gymnasium import spaces

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import NoStateRouteError, SpaceMappingError
from tests.official_peer import serve_official_app
from tests.third_party_servers.fastapi_apps import WalkAction
from tests.third_party_servers.shipped import (
    any_action_app,
    bare_reset_app,
    defaults_app,
    schema_app,
)


def _make(url: str, **kwargs: Any) -> gym.Env[Any, Any]:
    return gym.make("openenv/Remote-v0", base_url=url, **kwargs)


def _walk(env: gym.Env[Any, Any], steps: int = 30) -> None:
    env.reset(seed=0)
    for _ in range(steps):
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        assert obs in env.observation_space
        if terminated or truncated:
            env.reset()


def test_a_defaulted_field_with_no_space_is_left_out_and_never_sent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = defaults_app()
    with serve_official_app(app) as url:
        with caplog.at_level("INFO", logger="openenv_gym"):
            env = _make(url)
        try:
            assert env.action_space == spaces.Discrete(2)  # do_nothing alone
            left_out = env.unwrapped.action_codec.left_out
            assert list(left_out) == ["line_set"]
            assert "the server's default applies" in left_out["line_set"]
            assert "the action field 'line_set' is left out" in caplog.text
            _walk(env)
            assert app.state.bodies
            assert all(set(body) == {"do_nothing"} for body in app.state.bodies)
        finally:
            env.close()
        # naming the field makes it part of the action again: refused, as without a default
        with pytest.raises(SpaceMappingError, match="line_set"):
            _make(url, action_include=["line_set"])


def test_a_server_without_get_state_plays_and_says_so_on_state() -> None:
    with serve_official_app(defaults_app()) as url:  # the probe asks GET /state: 404
        env = _make(url)
        try:
            assert set(env.observation_space["queues"].spaces) == {"north", "south"}
            env.reset(seed=0)
            with pytest.raises(NoStateRouteError, match="has no state route"):
                env.unwrapped.state()
            _walk(env, 5)  # the session survives the refusal
        finally:
            env.close()


def test_a_bare_observation_as_the_reset_reply_is_the_observation() -> None:
    app = bare_reset_app()
    with serve_official_app(app) as url:
        env = _make(url)
        try:
            obs, _ = env.reset(seed=5)
            assert {k: int(v) for k, v in obs.items()} == {"position": 1, "steps": 0}
            _walk(env)
            assert all(set(body) == {"direction"} for body in app.state.bodies)
        finally:
            env.close()


@pytest.mark.parametrize("shape", ["aliases", "wrapper"])
def test_a_hand_written_schema_route_plays_with_no_keyword(shape: str) -> None:
    app = schema_app(shape)  # type: ignore[arg-type]
    with serve_official_app(app) as url:
        env = _make(url)
        try:
            assert env.unwrapped.space_sources.observation == "GET /schema"
            assert env.action_space == spaces.Discrete(3)
            assert set(env.observation_space.spaces) == {"position", "steps"}
            _walk(env)
            assert app.state.bodies
        finally:
            env.close()


def test_an_untyped_action_wrapper_asks_for_action_model_and_null_objects_decode() -> None:
    app = any_action_app()
    with serve_official_app(app) as url:
        with pytest.raises(SpaceMappingError) as info:
            _make(url)
        message = str(info.value)
        assert "no source gives the action's fields" in message
        assert "{'action': ...} with an untyped action" in message
        assert "action_model=" in message
        assert "Box" not in message
        env = _make(url, action_model=WalkAction)  # the keyword the error names
        try:
            assert env.unwrapped.space_sources.observation == "the first observation"
            obs, _ = env.reset(seed=0)
            assert (int(obs["lab_present"]), float(obs["lab"]["level"])) == (1, 2.5)
            obs, *_ = env.step(1)  # the object seen at reset arrives as null: flag 0, zeros
            assert (int(obs["lab_present"]), float(obs["lab"]["level"])) == (0, 0.0)
            _walk(env)
            assert all(set(body) == {"direction"} for body in app.state.bodies)
        finally:
            env.close()
