"""The openenv-gym.binary.v1 frame format and its negotiation with our server."""

from __future__ import annotations

import json
import struct
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from websockets.sync.client import connect

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.binary_frames import (
    BINARY_SUBPROTOCOL,
    MAGIC,
    decode_frame,
    encode_frame,
    encode_observation_frame,
    is_binary_frame,
)
from openenv_gym.env import OpenEnvEnv
from openenv_gym.errors import ProtocolError
from openenv_gym.protocol import http_to_ws_url


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
    frame = encode_observation_frame(message)
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
    frame = encode_observation_frame(observation_message({"a": a, "inner": {"b": b, "k": 1}}))
    assert frame is not None
    back = decode_frame(frame)["data"]["observation"]
    np.testing.assert_array_equal(back["a"], a)
    np.testing.assert_array_equal(back["inner"]["b"], b)
    assert back["inner"]["k"] == 1


def test_observations_without_arrays_stay_json() -> None:
    assert encode_observation_frame(observation_message({"x": [1, 2], "s": "a"})) is None
    assert encode_observation_frame({"type": "state", "data": {}}) is None
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


def test_server_negotiates_only_when_offered(cartpole_url: str) -> None:
    url = http_to_ws_url(cartpole_url)
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
