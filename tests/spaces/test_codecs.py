"""Decoding, encoding and round trips, checked against pydantic (the server's validator) and
Gymnasium's own env checker."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env
from openenv.core.env_server.types import Action, Observation
from pydantic import BaseModel, ConfigDict, Field

from openenv_gym.errors import ActionOutOfSpaceError
from openenv_gym.spaces import (
    X_OBSERVATION_KEY,
    X_SPACE,
    X_TRUNCATED_KEY,
    ActionCodec,
    ObservationCodec,
    action_codec,
    action_codec_for_model,
    observation_codec,
    observation_codec_for_model,
    space_to_json,
)
from tests.spaces.models import (
    AtariAction,
    AtariObservation,
    ChessAction,
    ChessObservation,
    Color,
    Point,
    RichAction,
    RichObservation,
)

# A decoded Box value that is not an ndarray makes gymnasium warn "Casting input x to numpy
# array": these tests turn that into a failure.
pytestmark = pytest.mark.filterwarnings("error:.*Casting input x to numpy array")


def wire_observation(observation: BaseModel) -> dict[str, Any]:
    """What an official server puts in the reply's ``observation`` object."""
    return observation.model_dump(mode="json", exclude={"reward", "done"})


def rich_observation(**changes: Any) -> RichObservation:
    values: dict[str, Any] = {
        "zeta": 7,
        "level": 2,
        "score": -12.5,
        "ratio": 0.25,
        "alive": True,
        "color": Color.BLUE,
        "mode": "b",
        "name": "Zoë — ok",
        "vec": [0.5, -1.5, 3.0],
        "grid": [[0, 1, 2], [7, 8, 9]],
        "mask": [True, False, False, True],
        "pos": Point(x=0.1, y=-0.1),
        "maybe": 4,
        "note": "hello",
        "pair": (3, -4),
        "words": ["alpha", "beta"],
        "alpha": 2**40,
        "metadata": {"source": "test"},
    }
    values.update(changes)
    return RichObservation(**values)


# --------------------------------------------------------------------------- observations


def test_rich_observation_decodes_to_exact_space_elements() -> None:
    codec = observation_codec_for_model(RichObservation)
    value = codec.decode(wire_observation(rich_observation()))
    assert isinstance(value, OrderedDict)
    assert list(value) == list(codec.space.spaces)
    assert codec.space.contains(value)
    assert value["zeta"] == 7
    assert isinstance(value["zeta"], np.int64)
    assert value["level"] == 2
    assert value["score"].dtype == np.float32
    assert value["score"].shape == ()
    assert value["alive"] == 1
    assert value["color"] == 2  # index of "blue"
    assert value["mode"] == 1
    assert value["name"] == "Zoë — ok"
    np.testing.assert_array_equal(value["vec"], np.array([0.5, -1.5, 3.0], np.float32))
    assert value["grid"].dtype == np.int64
    assert value["grid"].shape == (2, 3)
    assert value["mask"].dtype == np.int8
    np.testing.assert_array_equal(value["mask"], [1, 0, 0, 1])
    assert isinstance(value["pos"], OrderedDict)
    assert value["pos"]["x"] == np.float32(0.1)
    assert value["pair"].tolist() == [3, -4]
    assert value["words"] == ("alpha", "beta")
    assert value["alpha"] == 2**40


def test_observation_encode_is_the_inverse_of_decode() -> None:
    codec = observation_codec_for_model(RichObservation)
    wire = wire_observation(rich_observation())
    value = codec.decode(wire)
    encoded = codec.encode(value)
    # The server's model accepts what we encode, and it decodes to the same value.
    rebuilt = RichObservation.model_validate(encoded)
    again = codec.decode(wire_observation(rebuilt))
    # Every field travels; the presence flags of the nullable ones do not.
    flags = {"maybe_present", "note_present", "result_present"}
    assert list(encoded) == [key for key in codec.space.spaces if key not in flags]
    assert encoded["color"] == "blue"
    assert encoded["alive"] is True
    assert encoded["mask"] == [True, False, False, True]
    for key in codec.space.spaces:
        if isinstance(value[key], np.ndarray):
            np.testing.assert_array_equal(again[key], value[key])
        else:
            assert again[key] == value[key]


def test_extras_hold_every_wire_field_outside_the_space() -> None:
    codec = observation_codec_for_model(RichObservation, exclude=["words", "pos.y"])
    wire = wire_observation(rich_observation())
    extras = codec.extras(wire)
    assert extras == {"metadata": {"source": "test"}, "words": ["alpha", "beta"], "pos.y": -0.1}
    assert "pos" in codec.decode(wire)


def test_null_optional_fields_decode_to_neutral_values() -> None:
    codec = observation_codec_for_model(RichObservation)
    value = codec.decode(wire_observation(rich_observation(maybe=None, note=None)))
    assert value["maybe"] == 1  # the Discrete's start: 0 is not in Discrete(5, start=1)
    assert value["note"] == ""
    assert value["maybe_present"] == 0  # None, told apart from a value
    assert value["note_present"] == 0
    assert codec.space.contains(value)


def test_neutral_values_for_every_kind() -> None:
    class Inner(BaseModel):
        flag: bool
        level: int = Field(ge=2, le=4)

    schema = {
        "type": "object",
        "properties": {
            name: {"anyOf": [field, {"type": "null"}]}
            for name, field in {
                "num": {"type": "number", "minimum": 1.0, "maximum": 2.0},
                "free": {"type": "number"},
                "int": {"type": "integer"},
                "enum": {"enum": ["x", "y"]},
                "flag": {"type": "boolean"},
                "text": {"type": "string", "minLength": 2},
                "vec": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
                "bits": {
                    "type": "array",
                    "items": {"type": "boolean"},
                    "minItems": 3,
                    "maxItems": 3,
                },
                "inner": {"$ref": "#/$defs/Inner"},
            }.items()
        },
        "$defs": {"Inner": Inner.model_json_schema()},
    }
    codec = observation_codec(schema)
    value = codec.decode(dict.fromkeys(schema["properties"]))
    assert codec.space.contains(value)
    assert isinstance(value["num"], np.ndarray)
    assert value["num"].dtype == np.float32
    assert value["num"] == 1.0  # zero clipped into [1, 2]
    assert value["free"] == 0.0
    assert value["int"] == 0
    assert value["enum"] == 0
    assert value["flag"] == 0
    assert value["text"] == "  "  # min_length spaces
    assert value["vec"].tolist() == [0.0, 0.0]
    assert value["bits"].tolist() == [0, 0, 0]
    assert value["inner"] == OrderedDict(flag=0, level=2)


def test_atari_flat_screen_is_reshaped() -> None:
    codec = observation_codec_for_model(
        AtariObservation,
        field_spaces={"screen": spaces.Box(0, 255, (3, 4, 3), np.uint8)},
        exclude=["screen_shape", "legal_actions"],
    )
    screen = np.arange(36, dtype=np.uint8).reshape(3, 4, 3)
    observation = AtariObservation(
        screen=screen.ravel().tolist(),
        screen_shape=[3, 4, 3],
        legal_actions=[0, 1, 2],
        lives=3,
        episode_frame_number=10,
        frame_number=10,
    )
    value = codec.decode(wire_observation(observation))
    assert value["screen"].dtype == np.uint8
    np.testing.assert_array_equal(value["screen"], screen)
    assert codec.space.contains(value)
    assert codec.extras(wire_observation(observation))["legal_actions"] == [0, 1, 2]


def test_numpy_arrays_on_the_wire_decode_too() -> None:
    codec = observation_codec_for_model(
        AtariObservation, field_shapes={"screen": (2, 2)}, exclude=["screen_shape", "legal_actions"]
    )
    wire = {
        "screen": np.array([1, 2, 3, 4], dtype=np.uint8),
        "lives": np.int64(1),
        "episode_frame_number": 0,
        "frame_number": 0,
    }
    assert codec.decode(wire)["screen"].tolist() == [[1, 2], [3, 4]]


def test_chess_observation_round_trip() -> None:
    codec = observation_codec_for_model(ChessObservation, exclude=["legal_moves"])
    fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1"
    wire = wire_observation(
        ChessObservation(fen=fen, legal_moves=["e7e5"], is_check=False, result="1-0")
    )
    value = codec.decode(wire)
    assert value == OrderedDict(fen=fen, is_check=0, result="1-0", result_present=1)
    assert codec.encode(value) == {"fen": fen, "is_check": False, "result": "1-0"}
    assert codec.extras(wire) == {"legal_moves": ["e7e5"], "metadata": {}}


def test_observation_key_decodes_the_bare_value() -> None:
    box = spaces.Box(-1.0, 1.0, (3,), np.float32)

    class Obs(Observation):
        model_config = ConfigDict(
            json_schema_extra={X_OBSERVATION_KEY: "observation", X_TRUNCATED_KEY: "truncated"}
        )
        observation: list[float] = Field(json_schema_extra={X_SPACE: space_to_json(box)})
        truncated: bool = False
        note: str = ""

    codec = observation_codec_for_model(Obs)
    wire = wire_observation(Obs(observation=[0.5, 0.0, -0.5], truncated=True, note="n"))
    value = codec.decode(wire)
    assert value.dtype == np.float32
    assert value.shape == (3,)
    assert codec.extras(wire) == {"truncated": True, "note": "n", "metadata": {}}
    assert codec.encode(value) == {"observation": [0.5, 0.0, -0.5]}
    assert codec.truncated_key == "truncated"


def test_x_space_observation_round_trip() -> None:
    image = spaces.Box(0, 255, (2, 2, 3), np.uint8)

    class Obs(Observation):
        pixels: list[list[list[int]]] = Field(json_schema_extra={X_SPACE: space_to_json(image)})

    codec = observation_codec_for_model(Obs)
    value = codec.space.sample()
    wire = codec.encode(value)
    assert Obs.model_validate(wire)
    np.testing.assert_array_equal(codec.decode(wire)["pixels"], value["pixels"])


# --------------------------------------------------------------------------- actions


def test_atari_action_encodes_to_what_the_server_validates() -> None:
    codec = action_codec_for_model(AtariAction, field_spaces={"action_id": spaces.Discrete(6)})
    assert codec.encode(3) == {"action_id": 3}
    assert codec.encode(np.int64(5)) == {"action_id": 5}
    assert AtariAction.model_validate(codec.encode(np.int64(2))).action_id == 2
    assert codec.decode({"action_id": 4, "game_name": "pong", "metadata": {}}) == 4


@pytest.mark.parametrize("start", [0, 3])
def test_a_batch_of_discrete_actions_is_checked_like_each_action(start: int) -> None:
    """The batch fast path (integer array, range-checked at once) gives what encoding each
    action gives, and refuses the batches the single encode refuses."""
    codec = action_codec_for_model(
        AtariAction, field_spaces={"action_id": spaces.Discrete(6, start=start)}
    )
    for batch in (np.arange(start, start + 6), np.array([start + 5] * 3, np.uint8)):
        wires = codec.encode_batch(batch, len(batch))
        assert wires == [codec.encode(a) for a in batch]
        assert all(type(w["action_id"]) is int for w in wires)
    assert codec.encode_batch(np.zeros(0, np.int64), 0) == []
    for bad in (np.array([start, start + 6]), np.array([start - 1, start]), np.array([1.0, 2.0])):
        with pytest.raises(ActionOutOfSpaceError):
            codec.encode_batch(bad, 2)


def test_atari_action_with_included_optional_fields() -> None:
    codec = action_codec_for_model(
        AtariAction,
        field_spaces={"action_id": spaces.Discrete(6)},
        include=["obs_type", "full_action_space"],
    )
    wire = codec.encode({"action_id": 1, "obs_type": 2, "full_action_space": 1})
    assert wire == {"action_id": 1, "obs_type": "ram", "full_action_space": True}
    action = AtariAction.model_validate(wire)
    assert action.obs_type == "ram"
    assert codec.decode(wire) == OrderedDict(action_id=1, obs_type=2, full_action_space=1)


def test_chess_action_round_trip() -> None:
    codec = action_codec_for_model(ChessAction)
    assert codec.encode("e2e4") == {"move": "e2e4"}
    assert ChessAction.model_validate(codec.encode("e7e8q")).move == "e7e8q"
    assert codec.decode({"move": "g1f3"}) == "g1f3"


def test_rich_action_encode_decode() -> None:
    codec = action_codec_for_model(RichAction)
    action = OrderedDict(
        steer=np.float32(-0.5),
        gear=-1,
        horn=np.int64(1),
        lane=1,
        keys=np.array([3, 0]),
        lights=np.array([1, 0, 1, 0], dtype=np.int8),
        target=OrderedDict(x=np.array(0.25, np.float32), y=np.array(-1.0, np.float32)),
    )
    wire = codec.encode(action)
    assert wire == {
        "steer": -0.5,
        "gear": -1,
        "horn": True,
        "lane": "right",
        "keys": [3, 0],
        "lights": [True, False, True, False],
        "target": {"x": 0.25, "y": -1.0},
    }
    server_side = RichAction.model_validate(wire)
    assert server_side.speed == 1.0  # the server's default fills the optional field
    back = codec.decode(wire)
    assert codec.space.contains(back)
    assert back["lane"] == 1
    assert back["gear"] == -1


def test_lenient_inputs_gymnasium_also_accepts() -> None:
    codec = action_codec_for_model(RichAction)
    wire = codec.encode(
        {
            "steer": 0.5,  # python float for a float scalar Box
            "gear": True,  # bool is an int for Discrete
            "horn": 0,
            "lane": np.int32(0),
            "keys": [1, 2],  # list for MultiDiscrete
            "lights": [True, False, True, True],  # bool list for MultiBinary
            "target": {"x": [0.0][0], "y": np.float64(0.5)},
        }
    )
    assert wire["gear"] == 1
    assert wire["lights"] == [True, False, True, True]
    box = action_codec(
        {
            "type": "object",
            "properties": {
                "v": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
            },
            "required": ["v"],
        }
    )
    assert box.encode([1, 2]) == {"v": [1.0, 2.0]}  # an int list casts to float32
    assert box.encode(np.array([0.5, 1.5], np.float64)) == {"v": [0.5, 1.5]}


# --------------------------------------------------------------------------- round trips


SAMPLED = [
    ("observation", RichObservation, {}),
    ("action", RichAction, {"include": ["speed"]}),
    ("observation", ChessObservation, {"exclude": ["legal_moves"]}),
    ("action", AtariAction, {"field_spaces": {"action_id": spaces.Discrete(18)}}),
    (
        "observation",
        AtariObservation,
        {"field_shapes": {"screen": (4, 4, 3)}, "exclude": ["screen_shape", "legal_actions"]},
    ),
]


@pytest.mark.parametrize(("role", "model", "options"), SAMPLED)
def test_sampled_elements_round_trip_through_the_wire(
    role: str, model: type[BaseModel], options: dict[str, Any]
) -> None:
    if role == "action":
        codec: ActionCodec | ObservationCodec = action_codec_for_model(model, **options)
    else:
        codec = observation_codec_for_model(model, **options)
    codec.space.seed(7)
    for _ in range(25):
        value = codec.space.sample()
        wire = codec.encode(value)
        back = codec.decode(wire)
        assert codec.space.contains(back)
        assert _same(back, _absent_as_sent(value, back))
        if role == "action":
            model.model_validate(wire)  # what the server does with it


@pytest.mark.parametrize(
    "space",
    [
        spaces.Box(-2.0, 2.0, (3, 2), np.float32),
        spaces.Box(0, 255, (2, 2), np.uint8),
        spaces.Box(-5, 5, (), np.int32),
        spaces.Discrete(7, start=-3),
        spaces.MultiDiscrete([[2, 3], [4, 5]], start=[[0, 1], [-1, 0]]),
        spaces.MultiBinary([2, 3]),
        spaces.Text(12, charset="abc xyz"),
        spaces.Dict([("z", spaces.Discrete(3)), ("a", spaces.Box(0.0, 1.0, (2,), np.float32))]),
        spaces.Tuple([spaces.Discrete(2), spaces.Text(3)]),
        spaces.Dict(
            [("outer", spaces.Dict([("inner", spaces.MultiBinary(2)), ("t", spaces.Text(4))]))]
        ),
    ],
    ids=lambda s: type(s).__name__,
)
@pytest.mark.parametrize("source", ["field_spaces", "x-space"])
def test_explicit_spaces_round_trip(space: spaces.Space[Any], source: str) -> None:
    field: dict[str, Any] = {"title": "Value"}
    if source == "x-space":
        field[X_SPACE] = space_to_json(space)
        options: dict[str, Any] = {}
    else:
        options = {"field_spaces": {"value": space}}
    schema = {"type": "object", "properties": {"value": field}, "required": ["value"]}
    act = action_codec(schema, **options)
    obs = observation_codec(schema, **options)
    assert act.space == space
    assert isinstance(obs.space, spaces.Dict)
    assert obs.space["value"] == space
    if isinstance(space, spaces.Dict):
        assert list(act.space.spaces) == list(space.spaces)
    space.seed(3)
    for _ in range(20):
        value = space.sample()
        wire = act.encode(value)
        assert _same(act.decode(wire), value)
        observed = obs.decode(obs.encode({"value": value}))
        assert obs.space.contains(observed)
        assert _same(observed["value"], value)


def _absent_as_sent(value: Any, back: Any) -> Any:
    """``value`` with the fields whose presence flag is 0 replaced by what came back: they
    travel as ``null``, so only the flag survives the wire (their value is X's neutral)."""
    if not isinstance(value, dict):
        return value
    out = {key: _absent_as_sent(item, back[key]) for key, item in value.items()}
    for key, item in value.items():
        if key.endswith("_present") and key[: -len("_present")] in value and int(item) == 0:
            out[key[: -len("_present")]] = back[key[: -len("_present")]]
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, str):
        return a == b
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


# --------------------------------------------------------------------------- gymnasium checks


class WireEnv(gym.Env[Any, Any]):
    """An env whose values cross a JSON wire: actions are encoded by the action codec and
    validated by the server's pydantic model; observations are dumped by the server's pydantic
    model and decoded by the observation codec."""

    def __init__(self) -> None:
        self.action_codec = action_codec_for_model(RichAction)
        self.observation_codec = observation_codec_for_model(RichObservation)
        self.action_space = self.action_codec.space
        self.observation_space = self.observation_codec.space
        self._steps = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self._steps = 0
        return self._observe(rich_observation(zeta=int(self.np_random.integers(10)))), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        validated = RichAction.model_validate(self.action_codec.encode(action))
        self._steps += 1
        observation = rich_observation(
            zeta=validated.gear + 1, alive=validated.horn, note=None if self._steps % 2 else "x"
        )
        return self._observe(observation), 1.0, self._steps >= 3, False, {}

    def _observe(self, observation: RichObservation) -> Any:
        wire = wire_observation(observation)
        return self.observation_codec.decode(wire)


def test_gymnasium_check_env_passes_on_a_wire_env() -> None:
    check_env(WireEnv())


def test_explicit_space_on_an_optional_field_still_reads_null() -> None:
    codec = observation_codec_for_model(
        ChessObservation, exclude=["legal_moves"], field_spaces={"result": spaces.Text(7)}
    )
    assert codec.space["result"] == spaces.Text(7)
    wire = wire_observation(
        ChessObservation(fen="8/8/8/8/8/8/8/8 w - - 0 1", legal_moves=[], is_check=False)
    )
    # Text(7) has min_length 1: the neutral string is its first character, not "".
    assert codec.decode(wire)["result"] == "0"
    assert codec.space.contains(codec.decode(wire))


def test_sampled_float_actions_pass_the_servers_exclusive_bounds() -> None:
    class Throttle(Action):
        level: float = Field(gt=0.0, le=0.1)
        trim: float = Field(ge=-0.3, lt=0.7)

    codec = action_codec_for_model(Throttle)
    codec.space.seed(0)
    for _ in range(500):
        Throttle.model_validate(codec.encode(codec.space.sample()))
    edge = OrderedDict(level=codec.space["level"].high, trim=codec.space["trim"].low)
    action = Throttle.model_validate(codec.encode(edge))
    assert 0.0 < action.level <= 0.1
    assert -0.3 <= action.trim < 0.7
    edge = OrderedDict(level=codec.space["level"].low, trim=codec.space["trim"].high)
    Throttle.model_validate(codec.encode(edge))
