"""The sources of the spaces against real servers: official ``openenv`` apps whose models
are only in ``/openapi.json`` (tests/openapi_servers.py), the user's dataclass models, and
the first observation; each source is named in ``env.space_sources`` and in the log."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import gymnasium as gym
import httpx
import numpy as np
import pytest
from fastapi import FastAPI
from gymnasium import spaces
from pydantic import Field

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import NotAnOpenEnvServerError, SpaceMappingError
from tests.official_peer import serve_official_app
from tests.openapi_servers import BoardObservation, MoveData, serve_openapi


def _make(url: str, **kwargs: Any) -> gym.Env[Any, Any]:
    return gym.make("openenv/Remote-v0", base_url=url, **kwargs)


def _play(env: gym.Env[Any, Any]) -> None:
    _, info = env.reset(seed=0)
    assert info["legal_actions"] == [0, 1, 2, 3]
    obs, reward, terminated, _, info = env.step(env.action_space.sample() | {"column": 2})
    np.testing.assert_array_equal(obs["board"], [[0, 0, 1, 0], [0, 0, 0, 0]])
    assert reward == 1.0
    assert not terminated


@pytest.mark.parametrize(
    ("kind", "observation_source"),
    [
        ("wrapped", "GET /openapi.json (the response model of POST /step)"),
        ("fields", "GET /openapi.json (the response model of POST /step)"),
    ],
)
def test_a_server_without_schema_gets_its_spaces_from_openapi(
    kind: str, observation_source: str, caplog: pytest.LogCaptureFixture
) -> None:
    with serve_openapi(kind) as url:
        assert httpx.get(url + "/schema").status_code == 404
        with caplog.at_level(logging.INFO, logger="openenv_gym"):
            env = _make(url, action_include=["style"])
        try:
            sources = env.unwrapped.space_sources
            assert sources.action == "GET /openapi.json (the request body of POST /step)"
            assert sources.observation == observation_source
            assert sources.step_body == kind
            assert f"spaces: {sources.describe()}" in caplog.text
            assert env.action_space["column"] == spaces.Discrete(4)
            assert env.action_space["style"] == spaces.Discrete(2)
            assert env.observation_space["last_present"] == spaces.Discrete(2)
            _play(env)
        finally:
            env.close()


def test_no_typed_action_anywhere_gives_one_error_and_a_dataclass_fixes_it() -> None:
    with serve_openapi("untyped") as url:
        with pytest.raises(SpaceMappingError) as info:
            _make(url)
        message = str(info.value)
        assert "GET /schema:" in message
        assert "HTTP 404" in message
        assert "the body of POST /step is {'action': ...} with an untyped action" in message
        paste = message.splitlines()[-1]
        assert paste == (
            f"Paste and edit: gym.make('openenv/Remote-v0', base_url={url!r}, "
            "action_model=BoardAction, observation_model=BoardObservation)"
        )
        call = paste.removeprefix("Paste and edit: ").replace("BoardAction", "MoveData")
        env = eval(call, {"gym": gym, "MoveData": MoveData, "BoardObservation": BoardObservation})
        try:
            assert env.unwrapped.space_sources.action == "action_model=MoveData"
            assert env.unwrapped.space_sources.observation == "observation_model=BoardObservation"
            assert env.action_space == spaces.Discrete(4)
            env.reset(seed=0)
            obs, *_ = env.step(1)
            np.testing.assert_array_equal(obs["board"], [[0, 1, 0, 0], [0, 0, 0, 0]])
        finally:
            env.close()


def test_without_an_observation_model_the_first_observation_gives_it() -> None:
    with serve_openapi("untyped") as url:
        env = _make(url, action_model=MoveData)
        try:
            assert env.unwrapped.space_sources.observation == "the first observation"
            assert env.observation_space["board"].shape == (2, 4)
            assert "legal_actions" not in env.observation_space.spaces
            env.reset(seed=0)
            obs, _, _, _, info = env.step(3)
            np.testing.assert_array_equal(obs["board"], [[0, 0, 0, 1], [0, 0, 0, 0]])
            assert info["legal_actions"] == [0, 1, 2, 3]
            assert info["last"] == 3  # None at reset: no type, so it goes to info
        finally:
            env.close()


def test_a_url_with_no_env_at_all_is_not_sent_after_a_model() -> None:
    nothing = FastAPI(openapi_url=None)  # 404 everywhere
    with serve_official_app(nothing) as url, pytest.raises(NotAnOpenEnvServerError) as info:
        _make(url)
    message = str(info.value)
    for path in ("/schema", "/openapi.json", "/health"):
        assert f"{path} answered HTTP 404" in message
    assert "action_model" not in message


# --------------------------------------------------------------------------- third-party servers


@pytest.mark.parametrize("body", ["wrapped", "flat"])
def test_plain_fastapi_apps_play_with_no_keyword(body: str) -> None:
    from tests.third_party_servers.fastapi_apps import MODELS, walk_app

    with serve_official_app(walk_app(body)) as url:  # no /schema, no /ws: HTTP and openapi
        env = _make(url)
        try:
            assert env.unwrapped.form == "http"
            sources = env.unwrapped.space_sources
            assert sources.action == "GET /openapi.json (the request body of POST /step)"
            assert sources.observation.startswith("GET /openapi.json (the response model")
            assert sources.step_body == {"wrapped": "wrapped", "flat": "fields"}[body]
            assert env.action_space == spaces.Discrete(3)
            env.reset(seed=5)
            rewards = []
            for _ in range(200):
                obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
                assert obs in env.observation_space
                rewards.append(reward)
                if terminated or truncated:
                    env.reset()
            assert set(rewards) <= {-1.0, 0.0, 1.0}
        finally:
            env.close()
        pinned = _make(url, **MODELS)  # the models give the same spaces
        try:
            assert pinned.observation_space == env.observation_space
            assert pinned.action_space == env.action_space
        finally:
            pinned.close()


def test_the_first_release_names_action_model_and_takes_a_dataclass() -> None:
    from tests.third_party_servers.openenv_core_01 import serve_openenv_core_01

    with serve_openenv_core_01() as url:
        with pytest.raises(SpaceMappingError) as info:
            _make(url)
        message = str(info.value)
        assert "the body of POST /step is an untyped object" in message
        assert "action_model=" in message.splitlines()[-1]
        env = _make(url, action_model=WalkData)
        try:
            assert env.unwrapped.form == "http"
            assert env.unwrapped.space_sources.action == "action_model=WalkData"
            assert env.unwrapped.space_sources.observation == "the first observation"
            assert env.action_space == spaces.Discrete(3)
            assert list(env.observation_space.spaces) == ["position", "steps"]
            env.reset()
            obs, *_ = env.step(2)
            assert obs in env.observation_space
        finally:
            env.close()


@dataclasses.dataclass
class WalkData:
    """The first release's ``WalkAction``, bounded: a dataclass as its models.py has."""

    direction: int = Field(ge=0, le=2)


def test_check_names_the_sources_of_a_server_without_schema(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from openenv_gym.cli import main

    with serve_openapi("wrapped") as url:
        main(["check", url, "--max-steps", "3", "--episodes", "0"])
    report = capsys.readouterr().out
    assert "[ok]   schema     no GET /schema: action from GET /openapi.json" in report
    assert "sources: action from GET /openapi.json (the request body of POST /step)" in report
    assert "[ok]   spaces" in report
