"""Every JSON Schema -> space rule, on real pydantic models and real schemas."""

from __future__ import annotations

import string
from enum import IntEnum, StrEnum
from typing import Annotated, Literal

import numpy as np
import pytest
from gymnasium import spaces
from openenv.core.env_server.types import Action, Observation
from pydantic import BaseModel, ConfigDict, Field

from openenv_gym.errors import SpaceMappingError
from openenv_gym.spaces import (
    DEFAULT_ACTION_TEXT_MAX_LENGTH,
    DEFAULT_OBSERVATION_TEXT_MAX_LENGTH,
    DEFAULT_TEXT_CHARSET,
    X_ACTION_KEY,
    X_OBSERVATION_KEY,
    X_SPACE,
    X_TRUNCATED_KEY,
    action_codec,
    action_codec_for_model,
    observation_codec,
    observation_codec_for_model,
    space_to_json,
)
from openenv_gym.spaces.free_text import FreeText
from tests.spaces.models import (
    AtariAction,
    AtariObservation,
    ChessAction,
    ChessObservation,
    RichAction,
    RichObservation,
)


def obs_schema(properties: dict, **top: object) -> dict:
    return {"type": "object", "properties": properties, **top}


def act_schema(properties: dict, required: list[str] | None = None, **top: object) -> dict:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
        **top,
    }


# --------------------------------------------------------------------------- official schemas


def test_official_atari_action_needs_an_explicit_action_id_space() -> None:
    codec = action_codec_for_model(AtariAction, field_spaces={"action_id": spaces.Discrete(6)})
    assert codec.space == spaces.Discrete(6)
    assert codec.key == "action_id"


def test_official_atari_action_with_optional_fields_included() -> None:
    codec = action_codec_for_model(
        AtariAction,
        field_spaces={"action_id": spaces.Discrete(18)},
        include=["obs_type", "full_action_space"],
    )
    assert isinstance(codec.space, spaces.Dict)
    assert list(codec.space.spaces) == ["action_id", "obs_type", "full_action_space"]
    assert codec.space["obs_type"] == spaces.Discrete(3)
    assert codec.space["full_action_space"] == spaces.Discrete(2)


def test_official_atari_observation_with_screen_shape() -> None:
    codec = observation_codec_for_model(
        AtariObservation,
        field_shapes={"screen": (210, 160, 3)},
        exclude=["screen_shape", "legal_actions"],
    )
    assert list(codec.space.spaces) == ["screen", "lives", "episode_frame_number", "frame_number"]
    screen = codec.space["screen"]
    assert isinstance(screen, spaces.Box)
    assert screen.shape == (210, 160, 3)
    assert screen.dtype == np.int64


def test_official_chess_action_is_a_text_space() -> None:
    codec = action_codec_for_model(ChessAction)
    assert isinstance(codec.space, spaces.Text)
    assert codec.space.max_length == DEFAULT_ACTION_TEXT_MAX_LENGTH
    assert codec.key == "move"


def test_official_chess_observation_without_the_variable_list() -> None:
    codec = observation_codec_for_model(ChessObservation, exclude=["legal_moves"])
    assert list(codec.space.spaces) == ["fen", "is_check", "result", "result_present"]
    assert codec.space["is_check"] == spaces.Discrete(2)
    assert isinstance(codec.space["result"], spaces.Text)


def test_model_and_schema_give_the_same_spaces() -> None:
    from_model = observation_codec_for_model(RichObservation)
    from_schema = observation_codec(RichObservation.model_json_schema())
    assert from_model.space == from_schema.space
    assert (
        action_codec_for_model(RichAction).space
        == action_codec(RichAction.model_json_schema()).space
    )


# --------------------------------------------------------------------------- x-space and keys


def test_x_space_field_gets_exactly_that_space() -> None:
    box = spaces.Box(0, 255, (4, 4, 3), np.uint8)

    class ImageObservation(Observation):
        pixels: list[int] = Field(json_schema_extra={X_SPACE: space_to_json(box)})
        step: int = Field(ge=0, le=10)

    codec = observation_codec_for_model(ImageObservation)
    assert codec.space["pixels"] == box
    assert codec.space["pixels"].dtype == np.uint8


def test_x_space_on_a_referenced_model() -> None:
    inner = spaces.Box(-1.0, 1.0, (2,), np.float32)

    class Velocity(BaseModel):
        model_config = ConfigDict(json_schema_extra={X_SPACE: space_to_json(inner)})
        dx: float
        dy: float

    class Obs(Observation):
        velocity: Velocity

    assert observation_codec_for_model(Obs).space["velocity"] == inner


def test_x_observation_key_makes_one_field_the_space() -> None:
    box = spaces.Box(-1.0, 1.0, (3,), np.float32)

    class Obs(Observation):
        model_config = ConfigDict(json_schema_extra={X_OBSERVATION_KEY: "observation"})
        observation: list[float] = Field(json_schema_extra={X_SPACE: space_to_json(box)})
        info_text: str = ""

    codec = observation_codec_for_model(Obs)
    assert codec.space == box
    assert codec.key == "observation"


def test_x_action_key_makes_one_field_the_action() -> None:
    schema = act_schema(
        {"action": {"type": "integer", "minimum": 0, "maximum": 3}, "note": {"type": "string"}},
        **{X_ACTION_KEY: "action"},
    )
    codec = action_codec(schema)
    assert codec.space == spaces.Discrete(4)
    assert codec.key == "action"


def test_x_truncated_key_field_is_not_in_the_space() -> None:
    class Obs(Observation):
        model_config = ConfigDict(json_schema_extra={X_TRUNCATED_KEY: "truncated"})
        value: int = Field(ge=0, le=3)
        truncated: bool = False

    codec = observation_codec_for_model(Obs)
    assert list(codec.space.spaces) == ["value"]
    assert codec.truncated_key == "truncated"


def test_no_truncated_key_by_default() -> None:
    assert (
        observation_codec_for_model(ChessObservation, exclude=["legal_moves"]).truncated_key is None
    )


# --------------------------------------------------------------------------- field selection


def test_observation_envelope_fields_are_never_in_the_space() -> None:
    schema = RichObservation.model_json_schema()
    assert {"reward", "done", "metadata"} <= set(schema["properties"])
    keys = set(observation_codec(schema).space.spaces)
    assert not keys & {"reward", "done", "metadata"}


def test_observation_field_order_is_the_server_order_not_sorted() -> None:
    codec = observation_codec_for_model(RichObservation)
    expected = [
        k
        for k in RichObservation.model_json_schema()["properties"]
        if k not in ("reward", "done", "metadata")
    ]
    # A nullable field's presence flag follows it (docs/spaces.md, optional fields).
    flags = {"maybe_present", "note_present"}
    assert [k for k in codec.space.spaces if k not in flags] == expected
    assert expected[0] == "zeta"
    assert expected[-1] == "alpha"


def test_observation_exclude_drops_fields() -> None:
    codec = observation_codec_for_model(RichObservation, exclude=["words", "pos.y"])
    assert "words" not in codec.space.spaces
    assert list(codec.space["pos"].spaces) == ["x"]


def test_action_space_is_the_required_fields_in_order() -> None:
    codec = action_codec_for_model(RichAction)
    assert list(codec.space.spaces) == ["steer", "gear", "horn", "lane", "keys", "lights", "target"]
    assert codec.key is None


def test_action_include_adds_an_optional_field() -> None:
    codec = action_codec_for_model(RichAction, include=["speed"])
    assert list(codec.space.spaces)[-1] == "speed"
    assert codec.space["speed"] == spaces.Box(0.0, 2.0, (), np.float32)


def test_action_metadata_is_never_in_the_space() -> None:
    schema = act_schema(
        {"metadata": {"type": "object", "additionalProperties": True}, "n": {"type": "boolean"}}
    )
    codec = action_codec(schema)
    assert codec.space == spaces.Discrete(2)
    assert codec.key == "n"


def test_single_required_action_field_is_the_bare_space() -> None:
    schema = act_schema({"n": {"type": "integer", "minimum": 0, "maximum": 4}})
    assert action_codec(schema).space == spaces.Discrete(5)


def test_field_spaces_give_an_optional_action_field_its_place() -> None:
    codec = action_codec_for_model(
        AtariAction, field_spaces={"action_id": spaces.Discrete(4), "game_name": spaces.Text(8)}
    )
    assert list(codec.space.spaces) == ["action_id", "game_name"]


def test_field_spaces_win_over_schema_and_x_space() -> None:
    override = spaces.Box(0.0, 5.0, (2,), np.float64)
    schema = obs_schema(
        {
            "a": {"type": "integer", "minimum": 0, "maximum": 3},
            "b": {"type": "array", X_SPACE: space_to_json(spaces.Discrete(3))},
        }
    )
    codec = observation_codec(schema, field_spaces={"a": spaces.Discrete(9), "b": override})
    assert codec.space["a"] == spaces.Discrete(9)
    assert codec.space["b"] == override


def test_field_spaces_for_a_nested_field() -> None:
    class Board(BaseModel):
        cells: list[int]
        turn: bool

    class Obs(Observation):
        board: Board

    cells = spaces.MultiDiscrete(np.full((3, 3), 3))
    codec = observation_codec_for_model(Obs, field_spaces={"board.cells": cells})
    assert codec.space["board"]["cells"] == cells
    assert codec.space["board"]["turn"] == spaces.Discrete(2)


def test_a_string_option_is_one_field_name() -> None:
    codec = observation_codec_for_model(ChessObservation, exclude="legal_moves")
    assert "legal_moves" not in codec.space.spaces


# --------------------------------------------------------------------------- integers


@pytest.mark.parametrize(
    ("bounds", "expected"),
    [
        ({"minimum": 0, "maximum": 9}, spaces.Discrete(10)),
        ({"minimum": -1, "maximum": 5}, spaces.Discrete(7, start=-1)),
        ({"exclusiveMinimum": 0, "exclusiveMaximum": 4}, spaces.Discrete(3, start=1)),
        ({"minimum": 2, "exclusiveMaximum": 3}, spaces.Discrete(1, start=2)),
        ({"minimum": 0.5, "maximum": 3.5}, spaces.Discrete(3, start=1)),
        ({"minimum": 0, "exclusiveMinimum": True, "maximum": 3}, spaces.Discrete(3, start=1)),
    ],
)
def test_bounded_integer_is_discrete(bounds: dict, expected: spaces.Discrete) -> None:
    schema = act_schema({"n": {"type": "integer", **bounds}})
    assert action_codec(schema).space == expected
    assert (
        observation_codec(obs_schema({"n": {"type": "integer", **bounds}})).space["n"] == expected
    )


def test_pydantic_integer_constraints_are_discrete() -> None:
    codec = observation_codec_for_model(RichObservation)
    assert codec.space["zeta"] == spaces.Discrete(10)
    assert codec.space["level"] == spaces.Discrete(3, start=1)


def test_unbounded_observation_integer_is_an_int64_box() -> None:
    box = observation_codec_for_model(RichObservation).space["alpha"]
    assert isinstance(box, spaces.Box)
    assert box.shape == ()
    assert box.dtype == np.int64
    assert box.low == np.iinfo(np.int64).min
    assert box.contains(np.asarray(box.sample()))


def test_half_bounded_observation_integer_keeps_its_bound() -> None:
    box = observation_codec(obs_schema({"n": {"type": "integer", "minimum": 0}})).space["n"]
    assert box.low == 0
    assert box.dtype == np.int64
    assert box.contains(np.asarray(box.sample()))


# --------------------------------------------------------------------------- numbers


def test_number_is_a_float32_scalar_box() -> None:
    space = observation_codec_for_model(RichObservation).space
    assert space["score"] == spaces.Box(-np.inf, np.inf, (), np.float32)
    assert space["ratio"] == spaces.Box(0.0, 1.0, (), np.float32)


def test_observation_float_bounds_round_outward() -> None:
    codec = observation_codec(
        obs_schema({"x": {"type": "number", "minimum": -0.1, "maximum": 0.1}})
    )
    box = codec.space["x"]
    assert float(box.low) <= -0.1
    assert float(box.high) >= 0.1
    assert box.contains(codec.decode({"x": 0.1})["x"])
    assert box.contains(codec.decode({"x": -0.1})["x"])


def test_action_float_bounds_round_inward_and_respect_exclusive() -> None:
    schema = act_schema({"x": {"type": "number", "exclusiveMinimum": 0.0, "maximum": 0.1}})
    box = action_codec(schema).space
    assert float(box.low) > 0.0
    assert float(box.high) <= 0.1
    assert box.dtype == np.float32


# --------------------------------------------------------------------------- booleans, enums


def test_boolean_is_discrete_two() -> None:
    assert observation_codec_for_model(RichObservation).space["alive"] == spaces.Discrete(2)


class Mode(IntEnum):
    OFF = 0
    ON = 5


class Shape(StrEnum):
    CIRCLE = "circle"
    SQUARE = "square"


@pytest.mark.parametrize(
    ("field_schema", "n"),
    [
        ({"enum": ["a", "b", "c"], "type": "string"}, 3),
        ({"const": "only"}, 1),
        ({"anyOf": [{"const": "x"}, {"const": "y"}]}, 2),
        ({"oneOf": [{"const": 1}, {"enum": [2, 3]}]}, 3),
        ({"enum": ["a", "a", "b"]}, 2),
    ],
)
def test_enum_schemas_are_discrete(field_schema: dict, n: int) -> None:
    assert observation_codec(obs_schema({"e": field_schema})).space["e"] == spaces.Discrete(n)


def test_literal_and_enum_models_are_discrete() -> None:
    class Obs(Observation):
        shape: Shape
        mode: Mode
        level: Literal[1, 2, 3]

    space = observation_codec_for_model(Obs).space
    assert space["shape"] == spaces.Discrete(2)
    assert space["mode"] == spaces.Discrete(2)
    assert space["level"] == spaces.Discrete(3)


# --------------------------------------------------------------------------- strings


def test_string_is_text_with_the_documented_defaults() -> None:
    codec = observation_codec_for_model(ChessObservation, exclude=["legal_moves"])
    obs = codec.space["fen"]
    # Free text: any character the server sends; the charset is what sample() draws from.
    assert isinstance(obs, FreeText)
    assert obs.max_length == DEFAULT_OBSERVATION_TEXT_MAX_LENGTH
    assert obs.min_length == 0
    assert obs.character_set == frozenset(DEFAULT_TEXT_CHARSET)
    assert repr(obs) == f"FreeText(0, {DEFAULT_OBSERVATION_TEXT_MAX_LENGTH})"
    assert set(obs.sample()) <= obs.character_set
    decoded = codec.decode({"fen": "日本 é\u0301", "is_check": False, "result": None})
    assert decoded["fen"] == "日本 é\u0301"
    assert obs.contains(decoded["fen"])


def test_string_length_limits_come_from_the_schema() -> None:
    name = observation_codec_for_model(RichObservation).space["name"]
    assert (name.min_length, name.max_length) == (1, 16)


def test_default_charset_is_broad() -> None:
    charset = set(DEFAULT_TEXT_CHARSET)
    assert set(string.printable) <= charset
    assert set("éüßñçøœ€—“”…αβγабв♔♚←┼█") <= charset
    assert "\x00" not in charset
    assert "中" not in charset


# --------------------------------------------------------------------------- arrays


def test_fixed_length_number_array_is_a_box() -> None:
    assert observation_codec_for_model(RichObservation).space["vec"] == spaces.Box(
        -np.inf, np.inf, (3,), np.float32
    )


def test_nested_fixed_integer_array_is_a_box_with_item_bounds() -> None:
    assert observation_codec_for_model(RichObservation).space["grid"] == spaces.Box(
        0, 9, (2, 3), np.int64
    )


def test_fixed_boolean_array_is_multibinary() -> None:
    assert observation_codec_for_model(RichObservation).space["mask"] == spaces.MultiBinary(4)


def test_tuple_of_ints_is_a_box() -> None:
    pair = observation_codec_for_model(RichObservation).space["pair"]
    assert isinstance(pair, spaces.Box)
    assert pair.shape == (2,)


def test_prefix_items_keep_per_element_bounds() -> None:
    class Act(Action):
        pos: tuple[Annotated[int, Field(ge=0, le=2)], Annotated[int, Field(ge=1, le=7)]]

    space = action_codec_for_model(Act).space
    assert space == spaces.MultiDiscrete([3, 7], start=[0, 1])


def test_fixed_array_of_strings_is_a_tuple_of_text() -> None:
    words = observation_codec_for_model(RichObservation).space["words"]
    assert isinstance(words, spaces.Tuple)
    assert all(isinstance(w, spaces.Text) for w in words.spaces)
    assert len(words.spaces) == 2


def test_mixed_tuple_is_a_tuple_space() -> None:
    class Obs(Observation):
        item: tuple[Annotated[int, Field(ge=0, le=3)], str]

    item = observation_codec_for_model(Obs).space["item"]
    assert isinstance(item, spaces.Tuple)
    assert item.spaces[0] == spaces.Discrete(4)


def test_action_bounded_integer_array_is_multidiscrete() -> None:
    space = action_codec_for_model(RichAction).space
    assert space["keys"] == spaces.MultiDiscrete([4, 4])
    assert space["lights"] == spaces.MultiBinary(4)


def test_action_integer_array_with_start() -> None:
    schema = act_schema(
        {
            "moves": {
                "type": "array",
                "items": {"type": "integer", "minimum": -1, "maximum": 1},
                "minItems": 3,
                "maxItems": 3,
            }
        }
    )
    assert action_codec(schema).space == spaces.MultiDiscrete([3, 3, 3], start=[-1, -1, -1])


def test_field_shapes_give_a_variable_array_its_shape() -> None:
    codec = observation_codec_for_model(
        AtariObservation, field_shapes={"screen": [2, 3]}, exclude=["screen_shape", "legal_actions"]
    )
    assert codec.space["screen"].shape == (2, 3)


def test_x_shape_and_x_dtype_hints() -> None:
    class Obs(Observation):
        image: list[int] = Field(json_schema_extra={"x-shape": [4, 5, 3], "x-dtype": "uint8"})
        heat: list[float] = Field(json_schema_extra={"x-shape": [2]})
        flags: list[bool] = Field(json_schema_extra={"x-shape": [2, 2]})

    space = observation_codec_for_model(Obs).space
    assert space["image"] == spaces.Box(0, 255, (4, 5, 3), np.uint8)
    assert space["heat"] == spaces.Box(-np.inf, np.inf, (2,), np.float32)
    assert space["flags"] == spaces.MultiBinary([2, 2])


def test_action_array_with_shape_hint_and_bounds_is_multidiscrete() -> None:
    schema = act_schema(
        {"cells": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 2}}}
    )
    space = action_codec(schema, field_shapes={"cells": (3, 3)}).space
    assert space == spaces.MultiDiscrete(np.full((3, 3), 3))


# --------------------------------------------------------------------------- optional, nested


def test_optional_fields_have_the_inner_space() -> None:
    space = observation_codec_for_model(RichObservation).space
    assert space["maybe"] == spaces.Discrete(5, start=1)
    assert isinstance(space["note"], spaces.Text)
    chess = observation_codec_for_model(ChessObservation, exclude=["legal_moves"]).space
    assert isinstance(chess["result"], spaces.Text)


def test_type_list_with_null_is_optional() -> None:
    schema = obs_schema({"n": {"type": ["integer", "null"], "minimum": 0, "maximum": 2}})
    assert observation_codec(schema).space["n"] == spaces.Discrete(3)


def test_nested_model_is_a_dict_in_field_order() -> None:
    pos = observation_codec_for_model(RichObservation).space["pos"]
    assert isinstance(pos, spaces.Dict)
    assert list(pos.spaces) == ["x", "y"]
    assert pos["x"] == spaces.Box(-1.0, 1.0, (), np.float32)


def test_deeply_nested_and_optional_models() -> None:
    class Leaf(BaseModel):
        z: bool
        a: int = Field(ge=0, le=1)

    class Mid(BaseModel):
        leaf: Leaf
        maybe_leaf: Leaf | None = None

    class Obs(Observation):
        mid: Mid

    mid = observation_codec_for_model(Obs).space["mid"]
    assert list(mid.spaces) == ["leaf", "maybe_leaf", "maybe_leaf_present"]
    assert list(mid["leaf"].spaces) == ["z", "a"]
    assert mid["maybe_leaf"] == mid["leaf"]


def test_nested_action_object_takes_its_required_fields() -> None:
    class Config(BaseModel):
        power: int = Field(ge=0, le=3)
        label: str = "x"

    class Act(Action):
        config: Config
        go: bool

    space = action_codec_for_model(Act).space
    assert list(space["config"].spaces) == ["power"]
    space = action_codec_for_model(Act, include=["config.label"]).space
    assert list(space["config"].spaces) == ["power", "label"]


def test_allof_wrapped_reference_is_followed() -> None:
    schema = {
        "$defs": {"Color": {"enum": ["r", "g"], "type": "string"}},
        "type": "object",
        "properties": {"c": {"allOf": [{"$ref": "#/$defs/Color"}], "default": "r"}},
    }
    assert observation_codec(schema).space["c"] == spaces.Discrete(2)


def test_top_level_schema_can_be_a_reference() -> None:
    schema = {
        "$defs": {"Obs": {"type": "object", "properties": {"a": {"type": "boolean"}}}},
        "$ref": "#/$defs/Obs",
    }
    assert list(observation_codec(schema).space.spaces) == ["a"]


def test_excluding_fields_that_are_never_in_the_space_is_harmless() -> None:
    codec = observation_codec_for_model(ChessObservation, exclude=["legal_moves", "metadata"])
    assert list(codec.space.spaces) == ["fen", "is_check", "result", "result_present"]
    assert action_codec_for_model(ChessAction, include=["metadata"]).space.max_length > 0


def test_excluding_other_fields_next_to_an_observation_key() -> None:
    class Obs(Observation):
        model_config = ConfigDict(json_schema_extra={X_OBSERVATION_KEY: "value"})
        value: int = Field(ge=0, le=3)
        debug: dict[str, int] = {}

    assert observation_codec_for_model(Obs, exclude=["debug"]).space == spaces.Discrete(4)


def test_a_field_named_like_a_presence_flag_is_refused_until_excluded() -> None:
    class Obs(Observation):
        last: int | None = None
        last_present: bool = False

    with pytest.raises(SpaceMappingError) as info:
        observation_codec_for_model(Obs)
    assert info.value.field == "last_present"
    assert "Fix: exclude=['last_present']\n" in str(info.value) + "\n"  # and only that
    assert "field_spaces" not in str(info.value)
    codec = observation_codec_for_model(Obs, exclude=["last_present"])
    assert list(codec.space.spaces) == ["last", "last_present"]
    assert codec.decode({"last": None, "last_present": True})["last_present"] == 0
