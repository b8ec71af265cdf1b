"""The openenv-gym.binary.v1 frame format and its negotiation with our server."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from websockets.sync.client import connect

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.env import OpenEnvEnv
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.errors import ProtocolError
from openenv_gym.server import ServerThread
from openenv_gym.wire.binary import (
    BINARY_SUBPROTOCOL,
    MAGIC,
    MIN_BINARY_BYTES,
    decode_frame,
    encode_frame,
    encode_observation_frame,
    is_binary_frame,
    load_frame,
)
from openenv_gym.wire.messages import http_to_ws_url


def observation_message(observation: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "observation",
        "data": {"observation": observation, "reward": 1.5, "done": False},
    }


@pytest.mark.parametrize(
    "array",
    [
        np.arange(210 * 160 * 3, dtype=np.uint8).reshape(210, 160, 3),
        np.linspace(-1, 1, 7, dtype=np.float32),
        np.array([True, False, True]),
        np.arange(5, dtype=np.int64) - 2,
        np.array(3.25),
        np.zeros((0, 3), np.float32),
        np.arange(12, dtype=np.float64).reshape(3, 4).T,  # not C-contiguous
    ],
    ids=["uint8-image", "float32", "bool", "int64", "scalar", "empty", "transposed"],
)
def test_arrays_round_trip_exactly(array: np.ndarray) -> None:
    message = observation_message({"x": array, "label": "hi", "n": 3})
    frame = encode_observation_frame(message, min_bytes=0)
    assert frame is not None
    assert is_binary_frame(frame)
    back = decode_frame(frame)
    decoded = back["data"]["observation"]["x"]
    np.testing.assert_array_equal(decoded, array)
    assert decoded.dtype == array.dtype
    assert decoded.shape == array.shape
    assert decoded.flags.writeable
    assert back["data"]["observation"]["label"] == "hi"
    assert back["data"]["reward"] == 1.5
    assert message["data"]["observation"]["x"] is array  # the input is not modified


def test_nested_dict_arrays_and_several_buffers() -> None:
    a = np.arange(3, dtype=np.uint8)  # 3 bytes: the next buffer must be realigned
    b = np.array([0.5, 2.0], np.float64)
    frame = encode_observation_frame(
        observation_message({"a": a, "inner": {"b": b, "k": 1}}), min_bytes=0
    )
    assert frame is not None
    back = decode_frame(frame)["data"]["observation"]
    np.testing.assert_array_equal(back["a"], a)
    np.testing.assert_array_equal(back["inner"]["b"], b)
    assert back["inner"]["k"] == 1


def test_observations_without_arrays_stay_json() -> None:
    assert encode_observation_frame(observation_message({"x": [1, 2], "s": "a"})) is None
    assert encode_observation_frame({"type": "state", "data": {}}) is None


def test_small_arrays_stay_json_and_large_ones_go_binary() -> None:
    small = observation_message({"x": np.zeros(4, np.float32)})  # 16 bytes
    assert encode_observation_frame(small) is None
    large = observation_message({"x": np.zeros(MIN_BINARY_BYTES, np.uint8)})
    frame = encode_observation_frame(large)
    assert frame is not None
    np.testing.assert_array_equal(
        decode_frame(frame)["data"]["observation"]["x"], np.zeros(MIN_BINARY_BYTES, np.uint8)
    )
    assert not is_binary_frame('{"type":"observation"}')


def test_non_numeric_arrays_are_refused() -> None:
    with pytest.raises(ValueError, match="only bool, integer and float"):
        encode_frame({}, [(("x",), np.array(["a", "b"]))])


def _frame_with_header(header: Any, tail: bytes = b"") -> bytes:
    body = json.dumps(header).encode()
    return MAGIC + struct.pack("<I", len(body)) + body + tail


@pytest.mark.parametrize(
    ("frame", "why"),
    [
        (b"OGB1", "shorter than its fixed prefix"),
        (b"XXXX" + b"\0" * 10, "does not start with"),
        (MAGIC + struct.pack("<I", 1000) + b"{}", "runs past the end"),
        (MAGIC + struct.pack("<I", 3) + b"{x}", "header is not valid"),
        (_frame_with_header({"message": {}}), "header is not valid"),
        (_frame_with_header({"message": [], "arrays": []}), "lacks 'message'"),
        (
            _frame_with_header(
                {
                    "message": {"data": {}},
                    "arrays": [
                        {"path": ["data", "x"], "dtype": "<f8", "shape": [100], "offset": 0}
                    ],
                },
                b"\0" * 16,
            ),
            "does not fit the frame",
        ),
        (
            _frame_with_header(
                {
                    "message": {},
                    "arrays": [{"path": ["nope", "x"], "dtype": "|u1", "shape": [1], "offset": 0}],
                },
                b"\0" * 16,
            ),
            "descriptor is not valid",
        ),
        (
            _frame_with_header(
                {
                    "message": {},
                    "arrays": [{"path": ["x"], "dtype": "|O", "shape": [1], "offset": 0}],
                },
                b"\0" * 16,
            ),
            "descriptor is not valid",
        ),
    ],
    ids=[
        "short",
        "magic",
        "header-length",
        "header-json",
        "no-arrays",
        "message-type",
        "overrun",
        "bad-path",
        "object-dtype",
    ],
)
def test_malformed_frames_are_protocol_errors(frame: bytes, why: str) -> None:
    with pytest.raises(ProtocolError, match=why):
        decode_frame(frame)


class NoiseImages(gym.Env[np.ndarray, np.int64]):
    """Seeded random 24x24 RGB images (1,728 bytes: above MIN_BINARY_BYTES)."""

    observation_space = gym.spaces.Box(0, 255, (24, 24, 3), np.uint8)
    action_space = gym.spaces.Discrete(3)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._steps = 0
        return self.np_random.integers(0, 256, (24, 24, 3), dtype=np.uint8), {}

    def step(self, action: np.int64) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._steps += 1
        image = self.np_random.integers(0, 256, (24, 24, 3), dtype=np.uint8)
        return image, float(action), False, self._steps >= 25, {}


@pytest.fixture(scope="module")
def images_url() -> Iterator[str]:
    """Our gymnasium server over :class:`NoiseImages`, in a thread of this process."""
    env_id = "openenv_gym_tests/NoiseImages-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=NoiseImages)
    with ServerThread(gymnasium_server(env_id)) as server:
        yield server.url


def test_server_negotiates_only_when_offered(images_url: str) -> None:
    url = http_to_ws_url(images_url)
    with connect(url, subprotocols=[BINARY_SUBPROTOCOL]) as ws:  # type: ignore[list-item]
        assert ws.subprotocol == BINARY_SUBPROTOCOL
        ws.send('{"type":"reset","data":{"seed":0}}')
        reply = ws.recv()
        assert isinstance(reply, bytes)
        assert is_binary_frame(reply)
        ws.send('{"type":"state"}')
        assert isinstance(ws.recv(), str)  # non-observation replies stay JSON text
        ws.send('{"type":"step","data":{"action":7}}')
        error = ws.recv()
        assert isinstance(error, str)
        assert "VALIDATION_ERROR" in error
    for offered in (None, ["something.else"]):
        with connect(url, subprotocols=offered) as ws:  # type: ignore[arg-type]
            assert ws.subprotocol is None
            ws.send('{"type":"reset","data":{"seed":0}}')
            assert isinstance(ws.recv(), str)


def test_image_observations_are_the_same_over_binary_and_json(images_url: str) -> None:
    binary = OpenEnvEnv(images_url, encoding="binary")
    plain = OpenEnvEnv(images_url, encoding="json")
    try:
        a, _ = binary.reset(seed=5)
        b, _ = plain.reset(seed=5)
        for action in [0, 1, 2] * 10:
            np.testing.assert_array_equal(a, b)
            assert a.dtype == np.uint8
            assert a.shape == (24, 24, 3)
            a, ra, ta, tra, _ = binary.step(action)
            b, rb, tb, trb, _ = plain.step(action)
            assert (ra, ta, tra) == (rb, tb, trb)
    finally:
        binary.close()
        plain.close()


def test_gymnasium_box_observations_travel_binary_and_match_json(cartpole_url: str) -> None:
    raw = gym.make("CartPole-v1")
    binary = OpenEnvEnv(cartpole_url, encoding="binary")
    plain = OpenEnvEnv(cartpole_url, encoding="json")
    try:
        assert binary.binary
        assert not plain.binary
        a, _ = binary.reset(seed=3)
        b, _ = plain.reset(seed=3)
        c, _ = raw.reset(seed=3)
        for _ in range(30):
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(a, c)
            assert a.dtype == np.float32
            a, ra, ta, tra, _ = binary.step(1)
            b, rb, tb, trb, _ = plain.step(1)
            c, rc, tc, trc, _ = raw.step(1)
            assert (ra, ta, tra) == (rb, tb, trb) == (rc, tc, trc)
            if ta:
                break
    finally:
        binary.close()
        plain.close()
        raw.close()


def test_arrays_can_be_read_as_read_only_views_of_the_frame_instead_of_copies() -> None:
    screen = np.arange(210 * 160 * 3, dtype=np.uint8).reshape(210, 160, 3)
    frame = encode_frame(
        {"type": "observation", "data": {"observation": {}}}, [(["screen"], screen)]
    )
    copied = decode_frame(frame)["screen"]
    viewed = decode_frame(frame, copy=False)["screen"]
    assert copied.flags.writeable
    assert not viewed.flags.writeable  # the frame's own bytes: nothing can change them
    assert np.shares_memory(viewed, np.frombuffer(frame, np.uint8))
    assert not np.shares_memory(copied, np.frombuffer(frame, np.uint8))
    assert (viewed == screen).all()
    assert (load_frame(frame, copy=False)["screen"] == screen).all()
