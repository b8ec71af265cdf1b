"""Wire messages: what we build is what the official package sends; what we parse is strict."""

from __future__ import annotations

import json
import re

import pytest

from openenv_gym.errors import CapacityReachedError, ProtocolError, ServerReplyError
from openenv_gym.wire.client_frames import ClientMessageError, parse_client_message
from openenv_gym.wire.messages import (
    ErrorCode,
    ObservationReply,
    StateReply,
    close_message,
    encode_message,
    error_message,
    http_to_ws_url,
    observation_message,
    parse_server_message,
    reset_message,
    state_message,
    step_message,
    ws_to_http_url,
)


def test_client_messages_match_the_official_shapes() -> None:
    assert reset_message() == {"type": "reset", "data": {}}
    assert reset_message(seed=7, episode_id="e1", difficulty=2) == {
        "type": "reset",
        "data": {"seed": 7, "episode_id": "e1", "difficulty": 2},
    }
    assert step_message({"action": 1}) == {"type": "step", "data": {"action": 1}}
    assert state_message() == {"type": "state"}
    assert close_message() == {"type": "close"}


def test_encoding_is_compact_json_and_non_finite_floats_become_null() -> None:
    assert encode_message({"a": [1, 2.5], "b": None}) == '{"a":[1,2.5],"b":null}'
    assert json.loads(encode_message({"x": float("nan"), "y": [float("inf")]})) == {
        "x": None,
        "y": [None],
    }


def test_observation_reply_round_trip() -> None:
    raw = encode_message(observation_message({"x": 1, "metadata": {}}, 1.0, True, {"k": 2}))
    reply = parse_server_message(raw)
    assert reply == ObservationReply(
        observation={"x": 1, "metadata": {}}, reward=1.0, done=True, metadata={"k": 2}
    )
    assert (
        "metadata" not in json.loads(encode_message(observation_message({}, None, False)))["data"]
    )


def test_integer_reward_is_a_float_and_state_reply_parses() -> None:
    reply = parse_server_message('{"type":"observation","data":{"observation":{},"reward":3}}')
    assert isinstance(reply, ObservationReply)
    assert reply.reward == 3.0
    assert isinstance(reply.reward, float)
    assert parse_server_message('{"type":"state","data":{"step_count":2}}') == StateReply(
        {"step_count": 2}
    )


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("not json", "invalid JSON"),
        ("[1,2]", "'type' key"),
        ('{"type":"bogus","data":{}}', "got type 'bogus'"),
        ('{"type":"observation","data":{"reward":1}}', "observation reply"),
        ('{"type":"observation","data":{"observation":{},"reward":"a"}}', "'reward'"),
        ('{"type":"observation","data":{"observation":{},"reward":true}}', "'reward'"),
        ('{"type":"observation","data":{"observation":{},"done":"no"}}', "'done'"),
        ('{"type":"observation","data":{"observation":{},"metadata":[1]}}', "'metadata'"),
        ('{"type":"state","data":[1]}', "state reply"),
        (b"\xff\xfe", "UTF-8"),
    ],
)
def test_malformed_server_frames_raise_protocol_error(raw: str | bytes, fragment: str) -> None:
    with pytest.raises(ProtocolError, match="expected") as info:
        parse_server_message(raw)
    assert fragment in str(info.value)
    assert info.value.received is not None


def test_error_replies_become_typed_exceptions_with_their_code() -> None:
    raw = encode_message(error_message(ErrorCode.VALIDATION_ERROR, "bad", errors=[{"loc": 1}]))
    with pytest.raises(ServerReplyError) as info:
        parse_server_message(raw, url="ws://127.0.0.1:1/ws")
    assert info.value.code == "VALIDATION_ERROR"
    assert info.value.url == "ws://127.0.0.1:1/ws"
    assert "bad" in str(info.value)
    assert "loc" in str(info.value)


def test_capacity_reached_says_what_to_do() -> None:
    raw = encode_message(
        error_message(ErrorCode.CAPACITY_REACHED, "full", active_sessions=1, max_sessions=1)
    )
    with pytest.raises(CapacityReachedError) as info:
        parse_server_message(raw)
    message = str(info.value)
    assert "1 of 1 sessions" in message
    assert "--max-sessions" in message
    assert info.value.data["max_sessions"] == 1


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("{nope", ErrorCode.INVALID_JSON),
        (b"\xff", ErrorCode.INVALID_JSON),
        ("[]", ErrorCode.VALIDATION_ERROR),
        ('{"type":"jump"}', ErrorCode.UNKNOWN_TYPE),
        ("{}", ErrorCode.UNKNOWN_TYPE),
        ('{"type":"step"}', ErrorCode.VALIDATION_ERROR),
        ('{"type":"reset","data":[1]}', ErrorCode.VALIDATION_ERROR),
        ('{"type":"reset","data":{},"extra":1}', ErrorCode.VALIDATION_ERROR),
    ],
)
def test_bad_client_frames_map_to_official_codes(raw: str | bytes, code: ErrorCode) -> None:
    with pytest.raises(ClientMessageError) as info:
        parse_client_message(raw)
    assert info.value.code is code


def test_good_client_frames_parse() -> None:
    assert parse_client_message('{"type":"reset"}').data == {}
    message = parse_client_message('{"type":"step","data":{"action":1}}')
    assert (message.type, message.data) == ("step", {"action": 1})


@pytest.mark.parametrize(
    ("base", "ws"),
    [
        ("http://127.0.0.1:8000", "ws://127.0.0.1:8000/ws"),
        ("http://127.0.0.1:8000/", "ws://127.0.0.1:8000/ws"),
        ("https://host/prefix", "wss://host/prefix/ws"),
        ("ws://127.0.0.1:1/ws", "ws://127.0.0.1:1/ws"),
    ],
)
def test_url_conversion(base: str, ws: str) -> None:
    assert http_to_ws_url(base) == ws
    assert ws_to_http_url(ws) == base.rstrip("/").removesuffix("/ws").replace("ws://", "http://")


def test_url_without_scheme_is_rejected_with_an_example() -> None:
    with pytest.raises(ValueError, match=re.escape("http://127.0.0.1:8000")):
        http_to_ws_url("127.0.0.1:8000")
