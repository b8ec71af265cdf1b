"""Where the schemas come from, without a socket: ``find_schemas`` over what a server
serves (``/schema``, FastAPI's real ``/openapi.json`` documents built in-process, the user's
Pydantic classes and dataclasses), and every schema shape real envs use through each."""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import Any, Literal

import numpy as np
import pytest
from fastapi import FastAPI
from gymnasium import spaces
from pydantic import BaseModel, Field

from openenv_gym.errors import SpaceMappingError
from openenv_gym.spaces import action_codec, observation_codec
from openenv_gym.spaces.openapi import OPENAPI_STEP_BODY, openapi_schemas
from openenv_gym.spaces.sources import (
    FIRST_OBSERVATION,
    SCHEMA_SOURCE,
    X_FROM_FIRST_OBSERVATION,
    find_schemas,
    model_schema,
    observation_schema_from_sample,
)


class Speed(Enum):
    SLOW = "slow"
    FAST = "fast"


class Target(BaseModel):
    x: int = Field(ge=0, le=4)
    y: int = Field(ge=0, le=4)


class RichAction(BaseModel):
    """Every shape a real action uses: bounded int, Enum, Literal, Optional, nested, text."""

    column: int = Field(ge=0, le=6)
    speed: Speed
    mode: Literal["move", "wait"]
    note: str
    target: Target
    hint: int | None = None


class RichObservation(BaseModel):
    steps: int  # unbounded
    board: list[list[int]]  # variable
    sensors: dict[str, list[float]]  # named arrays
    legal_actions: list[int]
    prompt: str
    winner: int | None = None
    reward: float | None = None
    done: bool = False


class StepWrapped(BaseModel):
    action: RichAction
    timeout_s: float | None = None


class Reply(BaseModel):
    observation: RichObservation
    reward: float | None = None
    done: bool = False


def _wrapped_app() -> dict[str, Any]:
    app = FastAPI()

    @app.post("/step", response_model=Reply)
    def step(body: StepWrapped) -> Reply:  # pragma: no cover - only the document is read
        raise NotImplementedError

    return app.openapi()


def _direct_app() -> dict[str, Any]:
    app = FastAPI()

    @app.post("/reset", response_model=RichObservation)
    def reset() -> RichObservation:  # pragma: no cover
        raise NotImplementedError

    @app.post("/step")
    def step(action: RichAction) -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError

    return app.openapi()


def _untyped_app() -> dict[str, Any]:
    app = FastAPI()

    @app.post("/step")
    def step(body: dict[str, Any]) -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError

    return app.openapi()


SAMPLE = {
    "steps": 3,
    "board": [[0, 1], [1, 0]],
    "sensors": {"position": [0.0, 1.0, 2.0], "velocity": [0.5]},
    "legal_actions": [0, 1],
    "prompt": "go",
    "winner": None,
}


def _check_rich_spaces(schema: dict[str, Any]) -> None:
    act = action_codec(schema["action"])
    assert isinstance(act.space, spaces.Dict)
    assert act.space["column"] == spaces.Discrete(7)
    assert act.space["speed"] == spaces.Discrete(2)
    assert act.space["mode"] == spaces.Discrete(2)
    assert isinstance(act.space["note"], spaces.Text)
    assert act.space["target"]["x"] == spaces.Discrete(5)
    obs = observation_codec(schema["observation"], sample=SAMPLE)
    assert obs.space["steps"].dtype == np.int64
    assert obs.space["board"].shape == (2, 2)
    assert obs.space["sensors"]["position"].shape == (3,)
    assert obs.space["winner_present"] == spaces.Discrete(2)
    assert "legal_actions" not in obs.space.spaces
    assert "reward" not in obs.space.spaces


def test_the_wrapped_step_body_and_the_openenv_style_response() -> None:
    found = find_schemas(schema=None, openapi=_wrapped_app())
    assert found.sources.action == OPENAPI_STEP_BODY
    assert found.sources.observation == "GET /openapi.json (the response model of POST /step)"
    assert found.sources.step_body == "wrapped"
    assert "timeout_s" not in found.schema["action"]["properties"]
    _check_rich_spaces(found.schema)


def test_the_action_fields_directly_and_the_observation_as_the_response() -> None:
    found = find_schemas(schema=None, openapi=_direct_app())
    assert found.sources.step_body == "fields"
    assert found.sources.observation == "GET /openapi.json (the response model of POST /reset)"
    _check_rich_spaces(found.schema)


def test_schema_comes_first_and_openapi_fills_only_what_it_lacks() -> None:
    schema = {"action": {"properties": {"move": {"type": "string"}}, "required": ["move"]}}
    found = find_schemas(schema=schema, openapi=_wrapped_app())
    assert found.sources.action == SCHEMA_SOURCE
    assert found.sources.observation.startswith("GET /openapi.json")
    assert found.sources.step_body is None  # the body was not read for the action


def test_an_untyped_body_gives_one_error_naming_action_model_and_the_env_models() -> None:
    with pytest.raises(SpaceMappingError) as info:
        find_schemas(
            schema=None,
            openapi=_untyped_app(),
            tried=("GET /schema: answered HTTP 404",),
            call="gym.make('openenv/Remote-v0', base_url='http://h:1', {kwargs})",
            env_name="WildfireEnvironment",
        )
    message = str(info.value)
    assert info.value.field == "action"
    assert "GET /schema: answered HTTP 404" in message
    assert "the body of POST /step is an untyped object" in message
    assert message.splitlines()[-1] == (
        "Paste and edit: gym.make('openenv/Remote-v0', base_url='http://h:1', "
        "action_model=WildfireAction, observation_model=WildfireObservation)"
    )


@dataclasses.dataclass
class DataAction:
    """A first-release model: a dataclass."""

    column: int = Field(ge=0, le=6)
    message: str = ""


@dataclasses.dataclass
class DataObservation:
    board: list[list[int]]
    done: bool = False


def test_user_models_may_be_dataclasses_and_win_over_the_server() -> None:
    schema = {"action": {"properties": {"move": {"type": "string"}}}, "observation": {}}
    found = find_schemas(
        schema=schema, openapi=None, action_model=DataAction, observation_model=DataObservation
    )
    assert found.sources.action == "action_model=DataAction"
    assert found.sources.observation == "observation_model=DataObservation"
    assert found.schema["action"]["required"] == ["column"]
    codec = action_codec(found.schema["action"], include=["message"])
    assert codec.encode({"column": 3, "message": "hi"}) == {"column": 3, "message": "hi"}


def test_a_model_of_another_kind_is_refused_with_the_fix() -> None:
    with pytest.raises(SpaceMappingError, match=r"pydantic BaseModel subclass or a dataclass"):
        model_schema(dict, "action")
    with pytest.raises(SpaceMappingError, match="action_model=MyEnvAction"):
        find_schemas(schema=None, openapi=None, action_model=DataAction(1))


def test_without_any_observation_source_the_first_observation_gives_it() -> None:
    found = find_schemas(schema=None, openapi=None, action_model=DataAction)
    assert found.sources.observation == FIRST_OBSERVATION
    assert found.schema["observation"][X_FROM_FIRST_OBSERVATION] is True
    schema = observation_schema_from_sample({**SAMPLE, "reward": 1.0, "metadata": {}})
    assert list(schema["properties"]) == ["steps", "board", "sensors", "legal_actions", "prompt"]
    obs = observation_codec(schema, sample=SAMPLE)
    assert obs.space["board"].shape == (2, 2)
    assert obs.space["sensors"]["velocity"].shape == (1,)
    decoded = obs.decode(SAMPLE)
    assert decoded["prompt"] == "go"
    assert obs.extras(SAMPLE)["winner"] is None  # no type at reset: to info


def test_openapi_notes_say_why_a_role_is_missing() -> None:
    found = openapi_schemas({"paths": {}})
    assert found.schemas == {}
    assert found.notes == (
        "GET /openapi.json: no typed JSON request body for POST /step",
        "GET /openapi.json: no typed observation in the responses of /step, /reset",
    )
