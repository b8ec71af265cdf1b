"""Every bad input gets a typed error that names the field and says what to do."""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from openenv.core.env_server.types import Action, Observation
from pydantic import BaseModel, ConfigDict, Field

from openenv_gym.errors import (
    ActionOutOfSpaceError,
    CodecError,
    ObservationMismatchError,
    SpaceMappingError,
)
from openenv_gym.spaces import (
    X_ACTION_KEY,
    X_OBSERVATION_KEY,
    X_SPACE,
    X_TRUNCATED_KEY,
    action_codec,
    action_codec_for_model,
    observation_codec,
    observation_codec_for_model,
)
from tests.spaces.models import (
    AtariAction,
    AtariObservation,
    ChessAction,
    ChessObservation,
    RichAction,
    RichObservation,
)


def obs_schema(properties: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, **top}


def act_schema(properties: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), **top}


# --------------------------------------------------------------------------- mapping errors


def test_unbounded_action_integer_names_the_field_and_the_fix() -> None:
    with pytest.raises(SpaceMappingError) as info:
        action_codec_for_model(AtariAction)
    err = info.value
    assert err.field == "action_id"
    assert err.schema == {"title": "Action Id", "type": "integer"}
    message = str(err)
    assert "'action_id'" in message
    assert "field_spaces={'action_id': gymnasium.spaces.Discrete(n)}" in message
    assert '"type": "integer"' in message
    assert "x-space" in message


def test_official_atari_observation_lists_every_variable_array() -> None:
    with pytest.raises(SpaceMappingError) as info:
        observation_codec_for_model(AtariObservation)
    err = info.value
    assert err.field == "screen"
    message = str(err)
    assert "field_shapes={'screen': (n,)}" in message
    assert "exclude=['screen']" in message
    assert "'screen_shape'" in message
    # The legal actions change length as the game goes on: info, not a problem.
    assert [p.path for p in err.problems] == ["screen", "screen_shape"]
    assert all(p.needs_data for p in err.problems)


def test_official_chess_observation_leaves_legal_moves_to_info() -> None:
    codec = observation_codec_for_model(ChessObservation)
    assert list(codec.space.spaces) == ["fen", "is_check", "result", "result_present"]
    wire = {"fen": "8/8/8/8/8/8/8/8 w - - 0 1", "legal_moves": ["e2e4"], "is_check": False}
    assert codec.extras(wire) == {"legal_moves": ["e2e4"]}


@pytest.mark.parametrize(
    ("field_schema", "reason"),
    [
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "dict with free-form"),
        ({}, "no usable type"),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "union"),
        ({"type": ["integer", "string"]}, "union of types"),
        ({"type": "null"}, "always null"),
        ({"type": "array", "items": {"type": "number"}}, "without a fixed length"),
        ({"type": "object"}, "without properties"),
        ({"enum": []}, "empty or invalid enum"),
        ({"$ref": "#/$defs/Missing"}, "does not resolve"),
        ({"$ref": "http://example.com/schema"}, "not local"),
        ({"type": "integer", "minimum": 5, "maximum": 1}, "empty"),
        ({"type": "string", "minLength": 5, "maxLength": 2}, "do not form a space"),
        (
            {"type": "array", "items": {"type": "string"}, "x-shape": [2]},
            "items are not numbers",
        ),
        (
            {"type": "array", "items": {"type": "number"}, "x-shape": [2], "x-dtype": "banana"},
            "not a numpy dtype",
        ),
        (
            {"type": "array", "items": {"type": "number"}, "x-shape": [2], "x-dtype": "U3"},
            "not a numeric dtype",
        ),
        ({"type": "array", "items": {"type": "number"}, "x-shape": "big"}, "not a list of ints"),
        ({"type": "array", "items": {"type": "number"}, "x-shape": [-1]}, "negative"),
        (
            {
                "type": "array",
                "minItems": 2,
                "maxItems": 2,
                "items": {"type": "array", "items": {"type": "integer"}},
            },
            "item 0",
        ),
    ],
)
def test_unmappable_observation_fields(field_schema: dict[str, Any], reason: str) -> None:
    schema = obs_schema({"ok": {"type": "boolean"}, "bad": field_schema})
    with pytest.raises(SpaceMappingError) as info:
        observation_codec(schema)
    err = info.value
    assert err.field == "bad"
    assert reason in str(err)
    assert "'bad'" in str(err)
    assert "exclude=['bad']" in str(err)
    # It is also a ValueError, and excluding the field is a working fix.
    assert isinstance(err, ValueError)
    assert list(observation_codec(schema, exclude=["bad"]).space.spaces) == ["ok"]


def test_error_shows_the_schema_fragment_it_saw() -> None:
    class Obs(Observation):
        scores: dict[str, int]

    with pytest.raises(SpaceMappingError) as info:
        observation_codec_for_model(Obs)
    fragment = {"additionalProperties": {"type": "integer"}, "title": "Scores", "type": "object"}
    assert info.value.schema == fragment
    assert json.dumps(fragment) in str(info.value)
    assert "field_spaces={'scores':" in str(info.value)


def test_nested_unmappable_field_has_a_dotted_path() -> None:
    class Board(BaseModel):
        cells: list[int]
        size: int = Field(ge=1, le=19)

    class Obs(Observation):
        board: Board

    with pytest.raises(SpaceMappingError) as info:
        observation_codec_for_model(Obs)
    assert info.value.field == "board.cells"
    assert "field_spaces={'board.cells':" in str(info.value)
    fixed = observation_codec_for_model(Obs, field_shapes={"board.cells": (9,)})
    assert fixed.space["board"]["cells"].shape == (9,)


def test_recursive_model_is_reported_not_looped() -> None:
    class Node(BaseModel):
        value: int = Field(ge=0, le=1)
        child: Node | None = None

    class Obs(Observation):
        root: Node

    with pytest.raises(SpaceMappingError) as info:
        observation_codec_for_model(Obs)
    assert info.value.field == "root.child"
    assert "recursive" in str(info.value)
    codec = observation_codec_for_model(Obs, exclude=["root.child"])
    assert list(codec.space["root"].spaces) == ["value"]


def test_unbounded_action_integer_array() -> None:
    schema = act_schema(
        {"ids": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}}
    )
    with pytest.raises(SpaceMappingError) as info:
        action_codec(schema)
    assert info.value.field == "ids"
    assert "MultiDiscrete" in str(info.value)


def test_action_errors_do_not_suggest_exclude() -> None:
    with pytest.raises(SpaceMappingError) as info:
        action_codec(act_schema({"x": {"type": "integer"}}))
    assert "exclude" not in str(info.value)
    assert "Field(ge=0, lt=n)" in str(info.value)


@pytest.mark.parametrize(
    ("option", "kwargs"),
    [
        ("field_spaces", {"field_spaces": {"scren": spaces.Discrete(2)}}),
        ("field_shapes", {"field_shapes": {"scren": (2,)}}),
        ("exclude", {"exclude": ["scren"]}),
        ("field_spaces", {"field_spaces": {"reward": spaces.Discrete(2)}}),
    ],
)
def test_options_naming_unknown_fields_are_refused(option: str, kwargs: dict[str, Any]) -> None:
    with pytest.raises(SpaceMappingError) as info:
        observation_codec_for_model(ChessObservation, **{"exclude": ["legal_moves"], **kwargs})
    assert option in str(info.value)
    assert "'fen'" in str(info.value)  # the known fields are listed


def test_include_naming_an_unknown_field_is_refused() -> None:
    with pytest.raises(SpaceMappingError) as info:
        action_codec_for_model(ChessAction, include=["promotion"])
    assert info.value.field == "promotion"


def test_field_shapes_for_a_non_array_field() -> None:
    with pytest.raises(SpaceMappingError) as info:
        observation_codec_for_model(
            ChessObservation, exclude=["legal_moves"], field_shapes={"fen": (3,)}
        )
    assert info.value.field == "fen"


def test_field_spaces_value_must_be_a_space() -> None:
    with pytest.raises(SpaceMappingError) as info:
        action_codec_for_model(AtariAction, field_spaces={"action_id": 6})
    assert info.value.field == "action_id"


def test_field_spaces_without_a_wire_form() -> None:
    with pytest.raises(SpaceMappingError) as info:
        action_codec_for_model(
            AtariAction, field_spaces={"action_id": spaces.Sequence(spaces.Discrete(2))}
        )
    assert info.value.field == "action_id"
    assert "no JSON wire form" in str(info.value)


def test_invalid_x_space() -> None:
    schema = obs_schema({"v": {"type": "array", X_SPACE: {"type": "Box", "shape": [2]}}})
    with pytest.raises(SpaceMappingError) as info:
        observation_codec(schema)
    assert info.value.field == "v"


@pytest.mark.parametrize(
    ("key", "value"),
    [(X_OBSERVATION_KEY, "nope"), (X_TRUNCATED_KEY, "nope"), (X_OBSERVATION_KEY, 3)],
)
def test_top_level_keys_must_name_fields(key: str, value: Any) -> None:
    with pytest.raises(SpaceMappingError) as info:
        observation_codec(obs_schema({"a": {"type": "boolean"}}, **{key: value}))
    assert key in str(info.value)


def test_x_action_key_must_name_a_field() -> None:
    with pytest.raises(SpaceMappingError, match=X_ACTION_KEY):
        action_codec(act_schema({"a": {"type": "boolean"}}, **{X_ACTION_KEY: "b"}))


def test_schema_must_be_an_object_schema() -> None:
    with pytest.raises(SpaceMappingError, match="no 'properties'"):
        observation_codec({"type": "integer"})
    with pytest.raises(SpaceMappingError, match="as a dict"):
        action_codec(["not", "a", "schema"])  # type: ignore[arg-type]


def test_model_functions_need_a_pydantic_class() -> None:
    with pytest.raises(SpaceMappingError, match="BaseModel"):
        action_codec_for_model(dict)  # type: ignore[arg-type]
    with pytest.raises(SpaceMappingError, match="BaseModel"):
        observation_codec_for_model(ChessObservation(fen="x", legal_moves=[], is_check=False))  # type: ignore[arg-type]


def test_no_fields_left() -> None:
    class Act(Action):
        speed: float = 1.0

    # Every field has a default (dm_control's ``values``): all of them are sent.
    assert action_codec_for_model(Act).space.shape == ()
    assert action_codec_for_model(Act, include=["speed"]).space.shape == ()
    with pytest.raises(SpaceMappingError, match="exclude fewer"):
        observation_codec_for_model(
            ChessObservation, exclude=["legal_moves", "fen", "is_check", "result"]
        )


def test_nested_action_object_without_required_fields() -> None:
    class Options(BaseModel):
        fast: bool = False

    class Act(Action):
        options: Options
        go: bool

    with pytest.raises(SpaceMappingError) as info:
        action_codec_for_model(Act)
    assert info.value.field == "options"
    assert "include" in str(info.value)


# --------------------------------------------------------------------------- actions out of space


@pytest.fixture(scope="module")
def rich_action() -> Any:
    return action_codec_for_model(RichAction)


def valid_rich_action(**changes: Any) -> dict[str, Any]:
    action: dict[str, Any] = {
        "steer": np.float32(0.0),
        "gear": 2,
        "horn": 0,
        "lane": 1,
        "keys": np.array([0, 3]),
        "lights": np.array([0, 1, 0, 1], dtype=np.int8),
        "target": {"x": np.float32(0.5), "y": np.float32(0.5)},
    }
    action.update(changes)
    return action


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"steer": np.float32(1.5)}, "steer", "out of bounds"),
        ({"steer": np.float32(np.nan)}, "steer", "out of bounds"),
        ({"steer": 1}, "steer", "python int"),
        ({"steer": np.array([0.1, 0.2], np.float32)}, "steer", "shape"),
        ({"steer": "fast"}, "steer", "not an array"),
        ({"steer": True}, "steer", "bool"),
        ({"gear": 6}, "gear", "[-1, 5]"),
        ({"gear": 2.0}, "gear", "an integer"),
        ({"gear": "2"}, "gear", "an integer"),
        ({"lane": 2}, "lane", "[0, 1]"),
        ({"lane": "left"}, "lane", "an integer"),
        ({"keys": np.array([0, 4])}, "keys", "out of bounds"),
        ({"keys": np.array([0.0, 1.0])}, "keys", "does not cast"),
        ({"keys": [0, 1, 2]}, "keys", "shape"),
        ({"keys": [[0], [1, 2]]}, "keys", "not a regular array"),
        ({"lights": [0, 1, 2, 0]}, "lights", "out of bounds"),
        ({"lights": ["on", "off", "on", "off"]}, "lights", "not numeric"),
        ({"target": {"x": np.float32(0.0)}}, "target", "missing ['y']"),
        (
            {"target": {"x": np.float32(0), "y": np.float32(0), "z": np.float32(0)}},
            "target",
            "unknown ['z']",
        ),
        ({"target": [0.0, 0.0]}, "target", "a dict"),
        ({"target": {"x": np.float32(-2.0), "y": np.float32(0.0)}}, "target.x", "out of bounds"),
    ],
)
def test_actions_outside_the_space(
    rich_action: Any, changes: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(ActionOutOfSpaceError) as info:
        rich_action.encode(valid_rich_action(**changes))
    err = info.value
    assert err.field == field
    message = str(err)
    assert words in message
    assert f"'{field}'" in message
    assert "env.action_space.sample()" in message
    assert "Dict(" in message  # the space is named
    assert isinstance(err, CodecError)
    assert isinstance(err, ValueError)


def test_action_missing_and_unknown_keys(rich_action: Any) -> None:
    action = valid_rich_action()
    del action["gear"]
    with pytest.raises(ActionOutOfSpaceError, match=r"missing \['gear'\]"):
        rich_action.encode(action)
    with pytest.raises(ActionOutOfSpaceError, match=r"unknown \['speed'\]"):
        rich_action.encode(valid_rich_action(speed=1.0))
    with pytest.raises(ActionOutOfSpaceError, match="a dict"):
        rich_action.encode(3)


def test_bare_discrete_action_out_of_space() -> None:
    codec = action_codec_for_model(AtariAction, field_spaces={"action_id": spaces.Discrete(6)})
    for bad in (6, -1, 1.0, "3", None, np.array([1, 2]), np.float32(2)):
        with pytest.raises(ActionOutOfSpaceError) as info:
            codec.encode(bad)
        assert info.value.field == "action_id"
        assert "Discrete(6)" in str(info.value)


def test_text_action_out_of_space() -> None:
    codec = action_codec(act_schema({"move": {"type": "string", "maxLength": 5}}))
    with pytest.raises(ActionOutOfSpaceError, match="6 characters"):
        codec.encode("e2e4e5")
    with pytest.raises(ActionOutOfSpaceError, match="outside the charset"):
        codec.encode("中")
    with pytest.raises(ActionOutOfSpaceError, match="a string"):
        codec.encode(5)


def test_box_action_dtype_kind() -> None:
    schema = act_schema(
        {
            "v": {
                "type": "array",
                "items": {"type": "integer", "minimum": 0, "maximum": 9},
                "minItems": 2,
                "maxItems": 2,
            }
        }
    )
    box = action_codec(schema, field_spaces={"v": spaces.Box(0, 9, (2,), np.int64)})
    assert box.encode(np.array([1, 2], np.int32)) == {"v": [1, 2]}
    with pytest.raises(ActionOutOfSpaceError, match="does not cast"):
        box.encode(np.array([1.0, 2.0]))
    with pytest.raises(ActionOutOfSpaceError, match="python float"):
        action_codec(schema, field_spaces={"v": spaces.Box(0, 9, (), np.int64)}).encode(1.0)
    with pytest.raises(ActionOutOfSpaceError, match="out of bounds"):
        box.encode([3, 10])


def test_tuple_and_enum_actions_out_of_space() -> None:
    schema = act_schema(
        {"pair": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"enum": ["a", "b"]}}}
    )
    codec = action_codec(schema)
    assert codec.encode((1, 0)) == {"pair": ["b", "a"]}
    with pytest.raises(ActionOutOfSpaceError, match=r"pair\[1\]"):
        codec.encode((0, 2))
    with pytest.raises(ActionOutOfSpaceError, match="a tuple of 2"):
        codec.encode((0,))


def test_action_decode_errors_server_side(rich_action: Any) -> None:
    wire = rich_action.encode(valid_rich_action())
    with pytest.raises(ActionOutOfSpaceError) as info:
        rich_action.decode({**wire, "lane": "middle"})
    assert info.value.field == "lane"
    assert "['left', 'right']" in str(info.value)
    missing = dict(wire)
    del missing["horn"]
    with pytest.raises(ActionOutOfSpaceError) as info:
        rich_action.decode(missing)
    assert info.value.field == "horn"
    with pytest.raises(ActionOutOfSpaceError, match="object of fields"):
        rich_action.decode([1, 2])
    chess = action_codec_for_model(ChessAction)
    with pytest.raises(ActionOutOfSpaceError) as info:
        chess.decode({"promotion": "q"})
    assert info.value.field == "move"


# --------------------------------------------------------------------------- bad observations


@pytest.fixture(scope="module")
def rich_observation_codec() -> Any:
    return observation_codec_for_model(RichObservation)


def good_wire() -> dict[str, Any]:
    return {
        "zeta": 1,
        "level": 1,
        "score": 0.5,
        "ratio": 0.5,
        "alive": False,
        "color": "red",
        "mode": "a",
        "name": "n",
        "vec": [1.0, 2.0, 3.0],
        "grid": [[0, 0, 0], [0, 0, 0]],
        "mask": [False, False, False, False],
        "pos": {"x": 0.0, "y": 0.0},
        "maybe": None,
        "note": None,
        "pair": [1, 2],
        "words": ["a", "b"],
        "alpha": 0,
        "metadata": {},
    }


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"zeta": 10}, "zeta", "out of range"),
        ({"zeta": "1"}, "zeta", "an integer in [0, 9]"),
        ({"zeta": 1.5}, "zeta", "an integer"),
        ({"level": 0}, "level", "[1, 3]"),
        ({"score": "0.5"}, "score", "non-numeric"),
        ({"score": True}, "score", "booleans"),
        ({"score": None}, "score", "non-numeric"),
        ({"ratio": 1.5}, "ratio", "out of bounds"),
        ({"alive": 1}, "alive", "a boolean"),
        ({"color": "purple"}, "color", "one of ['red', 'green', 'blue']"),
        ({"mode": None}, "mode", "one of ['a', 'b']"),
        ({"name": ""}, "name", "1..16 characters"),
        ({"name": "x" * 17}, "name", "17 characters"),
        ({"name": 5}, "name", "a string"),
        ({"vec": [1.0, 2.0]}, "vec", "3 values"),
        ({"vec": [[1.0], [2.0, 3.0]]}, "vec", "not a regular array"),
        ({"grid": [[0, 0, 0], [0, 0, 10]]}, "grid", "at index (1, 2)"),
        ({"grid": [[0, 0, 0], [0, 0, 0.5]]}, "grid", "non-integer"),
        ({"mask": [False, False, False, 2]}, "mask", "out of bounds"),
        ({"pos": {"x": 0.0}}, "pos.y", "missing"),
        ({"pos": [0.0, 0.0]}, "pos", "an object"),
        ({"pos": {"x": 3.0, "y": 0.0}}, "pos.x", "out of bounds"),
        ({"maybe": 9}, "maybe", "out of range"),
        ({"pair": [1, 2, 3]}, "pair", "2 values"),
        ({"words": ["a"]}, "words", "a list of 2"),
        ({"words": ["a", 2]}, "words[1]", "a string"),
        ({"alpha": 2**70}, "alpha", "non-numeric"),
        ({"alpha": 2**63 - 1}, "alpha", "out of bounds"),
    ],
)
def test_observations_that_do_not_fit(
    rich_observation_codec: Any, changes: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(ObservationMismatchError) as info:
        rich_observation_codec.decode({**good_wire(), **changes})
    err = info.value
    assert err.field == field
    assert words in str(err)
    assert f"'{field}'" in str(err)


def test_good_wire_decodes(rich_observation_codec: Any) -> None:
    assert rich_observation_codec.space.contains(rich_observation_codec.decode(good_wire()))


def test_missing_observation_field(rich_observation_codec: Any) -> None:
    wire = good_wire()
    del wire["mask"]
    with pytest.raises(ObservationMismatchError) as info:
        rich_observation_codec.decode(wire)
    assert info.value.field == "mask"
    assert "missing" in str(info.value)
    assert "MultiBinary(4)" in str(info.value)


def test_observation_must_be_an_object(rich_observation_codec: Any) -> None:
    with pytest.raises(ObservationMismatchError, match="object of fields"):
        rich_observation_codec.decode([1, 2, 3])
    assert rich_observation_codec.extras([1, 2, 3]) == {}


def test_observation_key_missing() -> None:
    class Obs(Observation):
        model_config = ConfigDict(json_schema_extra={X_OBSERVATION_KEY: "obs"})
        obs: int = Field(ge=0, le=3)

    codec = observation_codec_for_model(Obs)
    with pytest.raises(ObservationMismatchError) as info:
        codec.decode({"other": 1})
    assert info.value.field == "obs"
    with pytest.raises(ObservationMismatchError) as info:
        codec.decode({"obs": 4})
    assert info.value.field == "obs"


def test_observation_encode_refuses_values_outside_the_space(
    rich_observation_codec: Any,
) -> None:
    value = rich_observation_codec.decode(good_wire())
    bad = OrderedDict(value)
    bad["zeta"] = 10
    with pytest.raises(ObservationMismatchError) as info:
        rich_observation_codec.encode(bad)
    assert info.value.field == "zeta"
    assert "observation space" in str(info.value)


def test_explicit_box_observation_mismatch() -> None:
    codec = observation_codec_for_model(
        AtariObservation,
        field_spaces={"screen": spaces.Box(0, 255, (2, 2), np.uint8)},
        exclude=["screen_shape", "legal_actions"],
    )
    wire = {"screen": [0, 1, 2, 256], "lives": 1, "episode_frame_number": 0, "frame_number": 0}
    with pytest.raises(ObservationMismatchError) as info:
        codec.decode(wire)
    assert info.value.field == "screen"
    assert "256" in str(info.value)
    with pytest.raises(ObservationMismatchError, match="4 values"):
        codec.decode({**wire, "screen": [0, 1, 2]})


def test_top_level_reference_that_does_not_resolve() -> None:
    with pytest.raises(SpaceMappingError) as info:
        observation_codec({"$ref": "#/$defs/Missing"})
    assert info.value.field == ""
    assert "does not resolve" in str(info.value)


@pytest.mark.parametrize(
    ("branches", "space_advice"),
    [
        # a traffic server's per-intersection queues: a dict of lists or one list
        (
            [
                {"type": "object", "additionalProperties": {"type": "array"}},
                {"type": "array", "items": {"type": "number"}},
            ],
            None,
        ),
        (
            [{"type": "object", "additionalProperties": {"type": "integer"}}, {"type": "integer"}],
            None,
        ),
        ([{"type": "integer"}, {"type": "string"}], "gymnasium.spaces.Discrete(n)"),
    ],
)
def test_a_union_is_advised_a_space_only_when_one_could_hold_it(
    branches: list[dict[str, Any]], space_advice: str | None
) -> None:
    schema = obs_schema({"ok": {"type": "boolean"}, "bad": {"anyOf": branches}})
    with pytest.raises(SpaceMappingError) as info:
        observation_codec(schema)
    message = str(info.value)
    assert "exclude=['bad']" in message
    if space_advice is None:  # an object-or-array field: leaving it out is the one fix
        assert "field_spaces" not in message
    else:
        assert f"field_spaces={{'bad': {space_advice}}}" in message
