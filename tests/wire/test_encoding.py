"""The Encoding registry: what each encoding implies, what each ``encoding=`` offers and
requires, how the server picks, how an agreed encoding reads and writes frames, and the one
JSON encoder."""

from __future__ import annotations

import json

import numpy as np
import pytest

from openenv_gym.errors import (
    BinaryEncodingRefusedError,
    ProtocolError,
    ServerReplyError,
    UnknownEncodingError,
)
from openenv_gym.wire.batch import BATCH_SUBPROTOCOL
from openenv_gym.wire.binary import BINARY_SUBPROTOCOL, MIN_BINARY_BYTES, is_binary_frame
from openenv_gym.wire.compressed import BINARY_ZSTD_SUBPROTOCOL, MEASURED_SUBPROTOCOL
from openenv_gym.wire.encoding import (
    BATCH,
    BINARY,
    BINARY_ZSTD,
    BINARY_ZSTD_MEASURED,
    COMPRESSED,
    DEFAULT_ENCODING,
    ENCODINGS,
    JSON,
    NEGOTIATED,
    REGISTRY,
    SHARED_MEMORY,
    Encoding,
    accept_subprotocol,
    check_encoding,
    encoding_of,
    resolve_encoding,
)
from openenv_gym.wire.messages import (
    ErrorCode,
    ObservationReply,
    StateReply,
    encode_json,
    encode_message,
    error_message,
    observation_message,
    state_reply_message,
)

SCREEN = np.arange(MIN_BINARY_BYTES, dtype=np.uint8).reshape(16, -1)


def test_the_registry_holds_every_encoding_once_by_name() -> None:
    assert dict(REGISTRY) == {
        "json": JSON,
        "binary": BINARY,
        "binary_zstd": BINARY_ZSTD,
        "binary_zstd_measured": BINARY_ZSTD_MEASURED,
        "batch": BATCH,
        "shared_memory": SHARED_MEMORY,
        "zstd": COMPRESSED,
    }
    assert [e.subprotocol for e in NEGOTIATED] == [
        BATCH_SUBPROTOCOL,
        MEASURED_SUBPROTOCOL,
        BINARY_ZSTD_SUBPROTOCOL,
        BINARY_SUBPROTOCOL,
    ]


def test_what_each_encoding_implies() -> None:
    assert BATCH.implies(BINARY)
    assert BATCH.implies(JSON)
    assert SHARED_MEMORY.implies(BATCH)
    assert SHARED_MEMORY.implies(BINARY)
    assert not BINARY.implies(BATCH)
    assert not JSON.implies(BINARY)
    assert [e.name for e in SHARED_MEMORY.lineage()] == ["shared_memory", "batch", "binary", "json"]
    # Inherited: batch writes binary frames, shared memory is multiplexed and same-host.
    assert BATCH.binary_frames
    assert BATCH.batch
    assert not BATCH.same_host
    assert SHARED_MEMORY.binary_frames
    assert SHARED_MEMORY.multiplexed
    assert SHARED_MEMORY.same_host
    assert not JSON.binary_frames
    assert not JSON.batch
    # Compressed frames build on batch connections, and work across hosts.
    assert COMPRESSED.implies(BATCH)
    assert COMPRESSED.multiplexed
    assert not COMPRESSED.same_host
    assert not COMPRESSED.implies(SHARED_MEMORY)
    assert BINARY.binary_frames
    assert not BINARY.batch


def test_an_encoding_that_builds_on_nothing_must_say_how_to_read() -> None:
    with pytest.raises(ValueError, match="give read_reply"):
        Encoding("raw", "x.v1", "nothing to read with")


def test_encoding_of_the_agreed_subprotocol() -> None:
    assert encoding_of(None) is JSON
    assert encoding_of(BINARY_SUBPROTOCOL) is BINARY
    assert encoding_of(BATCH_SUBPROTOCOL) is BATCH
    assert encoding_of("someone-else.v3") is JSON


@pytest.mark.parametrize(
    ("offered", "accepted"),
    [
        ([], None),
        (["chat"], None),
        ([BINARY_SUBPROTOCOL], BINARY_SUBPROTOCOL),
        ([BINARY_SUBPROTOCOL, BATCH_SUBPROTOCOL], BATCH_SUBPROTOCOL),
        (["chat", BATCH_SUBPROTOCOL], BATCH_SUBPROTOCOL),
    ],
)
def test_the_server_accepts_the_best_registered_offer(
    offered: list[str], accepted: str | None
) -> None:
    assert accept_subprotocol(offered) == accepted


@pytest.mark.parametrize(
    ("choice", "batch", "expected"),
    [
        ("auto", False, [BINARY_SUBPROTOCOL]),
        ("auto", True, [BATCH_SUBPROTOCOL, BINARY_SUBPROTOCOL]),
        ("binary", True, [BATCH_SUBPROTOCOL, BINARY_SUBPROTOCOL]),
        ("json", False, []),
        ("json", True, []),  # batching rides on binary frames: never with JSON
    ],
)
def test_what_each_choice_offers(choice: str, batch: bool, expected: list[str]) -> None:
    assert resolve_encoding(choice).subprotocols(batch=batch) == expected
    assert resolve_encoding(choice).batches == (choice != "json")


def test_extra_subprotocols_come_after_ours_without_duplicates() -> None:
    offered = resolve_encoding("auto").subprotocols(extra=["chat", BINARY_SUBPROTOCOL])
    assert offered == [BINARY_SUBPROTOCOL, "chat"]


def test_only_binary_requires_agreement() -> None:
    assert ENCODINGS == ("auto", "json", "binary")
    assert DEFAULT_ENCODING in ENCODINGS
    resolve_encoding("auto").check_agreed(JSON, "ws://127.0.0.1:1/ws")
    resolve_encoding("json").check_agreed(JSON, "ws://127.0.0.1:1/ws")
    resolve_encoding("binary").check_agreed(BATCH, "ws://127.0.0.1:1/ws")
    with pytest.raises(
        BinaryEncodingRefusedError, match=r"encoding='auto'.*encoding='json'"
    ) as info:
        resolve_encoding("binary").check_agreed(JSON, "ws://127.0.0.1:1/ws")
    assert BINARY_SUBPROTOCOL in str(info.value)
    assert info.value.url == "ws://127.0.0.1:1/ws"


@pytest.mark.parametrize("bad", ["msgpack", "", "JSON", None, 3])
def test_unknown_encodings_are_typed_errors_naming_the_choices(bad: object) -> None:
    with pytest.raises(UnknownEncodingError, match=r"'auto', 'json' or 'binary'"):
        resolve_encoding(bad)  # type: ignore[arg-type]
    with pytest.raises(UnknownEncodingError):
        check_encoding(bad)  # type: ignore[arg-type]


def test_each_encoding_writes_observations_as_it_should_and_reads_them_back() -> None:
    big = observation_message({"screen": SCREEN, "lives": 3}, 1.0, False)
    frame, text = JSON.encode_reply(big)
    assert text
    assert json.loads(frame)["data"]["observation"]["screen"] == SCREEN.tolist()
    for encoding in (BINARY, BATCH, SHARED_MEMORY):
        frame, text = encoding.encode_reply(big)
        assert not text
        assert is_binary_frame(frame)
        reply = encoding.parse_reply(frame)
        assert isinstance(reply, ObservationReply)
        np.testing.assert_array_equal(reply.observation["screen"], SCREEN)
        assert reply.observation["lives"] == 3
        assert reply.reward == 1.0
    small = observation_message({"x": np.zeros(2, np.float32)}, None, True)
    assert BINARY.encode_reply(small)[1] is True  # a few bytes: cheaper as JSON


def test_state_and_error_replies_stay_json_text_in_every_encoding() -> None:
    state = state_reply_message({"step_count": 2})
    error = error_message(ErrorCode.EXECUTION_ERROR, "boom")
    for encoding in REGISTRY.values():
        frame, text = encoding.encode_reply(state)
        assert text
        parsed = encoding.parse_reply(frame.decode())
        assert isinstance(parsed, StateReply)
        assert parsed.state == {"step_count": 2}
        frame, text = encoding.encode_reply(error)
        assert text
        with pytest.raises(ServerReplyError, match="boom"):
            encoding.parse_reply(frame.decode(), url="ws://127.0.0.1:1/ws")


def test_a_json_connection_does_not_read_binary_frames() -> None:
    frame, _ = BINARY.encode_reply(observation_message({"screen": SCREEN}, 0.0, False))
    with pytest.raises(ProtocolError, match="UTF-8"):
        JSON.parse_reply(frame)


def test_the_json_encoder_writes_numpy_values_and_no_nan() -> None:
    message = {"a": np.int64(3), "b": np.arange(3), "c": float("nan"), "d": [np.float32(0.5)]}
    assert encode_json(message) == b'{"a":3,"b":[0,1,2],"c":null,"d":[0.5]}'
    assert encode_message({"x": "é"}) == '{"x":"é"}'


def test_the_json_encoder_refuses_other_objects_with_what_it_takes() -> None:
    with pytest.raises(TypeError, match=r"cannot serialize a object as JSON.*numpy arrays"):
        encode_json({"x": object()})
