"""Our base models produce the same JSON Schemas as the official ones (openenv 0.10.0)."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from openenv.core.env_server import types as official
from pydantic import BaseModel, Field, ValidationError

from openenv_gym.server import (
    Action,
    Environment,
    EnvironmentMetadata,
    Observation,
    State,
)


def subclass_pair(name: str, base: type[BaseModel], official_base: type[BaseModel], fields: Any):
    from pydantic import create_model

    ours = create_model(name, __base__=base, **fields)
    theirs = create_model(name, __base__=official_base, **fields)
    return ours, theirs


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (Action, official.Action),
        (Observation, official.Observation),
        (State, official.State),
        (EnvironmentMetadata, official.EnvironmentMetadata),
    ],
)
def test_base_models_match_the_official(ours: type[BaseModel], theirs: type[BaseModel]) -> None:
    assert ours.model_json_schema() == theirs.model_json_schema()
    for key in ("extra", "validate_assignment", "arbitrary_types_allowed"):
        assert ours.model_config.get(key) == theirs.model_config.get(key), key


FIELDS: dict[str, dict[str, Any]] = {
    "Action": {
        "move": (str, Field(min_length=4, max_length=5, description="UCI move")),
        "power": (float, Field(default=0.5, ge=0.0, le=1.0)),
        "mode": (Literal["a", "b"], "a"),
    },
    "Observation": {
        "screen": (list[int], Field(default_factory=list)),
        "lives": (int, 3),
        "result": (str | None, None),
    },
    "State": {"score": (float, 0.0), "board": (list[list[int]], Field(default_factory=list))},
}


@pytest.mark.parametrize(
    ("kind", "base", "official_base"),
    [
        ("Action", Action, official.Action),
        ("Observation", Observation, official.Observation),
        ("State", State, official.State),
    ],
)
def test_subclasses_have_the_official_schema(
    kind: str, base: type[BaseModel], official_base: type[BaseModel]
) -> None:
    ours, theirs = subclass_pair(f"Game{kind}", base, official_base, FIELDS[kind])
    assert ours.model_json_schema() == theirs.model_json_schema()


def test_validation_behaves_like_the_official() -> None:
    with pytest.raises(ValidationError):
        Action(unexpected=1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        State(step_count=-1)
    assert State(episode_id="e", step_count=2, extra_field=1).model_dump() == {
        "episode_id": "e",
        "step_count": 2,
        "extra_field": 1,
    }
    obs = Observation()
    assert obs.model_dump() == {"done": False, "reward": None, "metadata": {}}
    with pytest.raises(ValidationError):
        obs.done = "not a bool"  # type: ignore[assignment]


class Documented(Environment[Action, Observation, State]):
    """First line of the docstring.

    More text that is not part of the description.
    """

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Any:
        return Observation()

    def step(self, action: Action) -> Observation:
        return Observation()

    @property
    def state(self) -> State:
        return State()


class Undocumented(Documented):
    __doc__ = None


def test_default_metadata() -> None:
    assert Documented().get_metadata() == EnvironmentMetadata(
        name="Documented", description="First line of the docstring.", version="1.0.0"
    )
    assert Undocumented().get_metadata().description == "Undocumented environment"


def test_environment_is_abstract() -> None:
    with pytest.raises(TypeError):
        Environment()  # type: ignore[abstract]
