"""Compressed frames from our server, over real WebSocket frames.

A Pong server on 127.0.0.1: compression agreed in ``batch_open`` packs the result frames
(the same observations as an uncompressed connection), never together with shared memory,
and every packed frame a client sends (a zip bomb, no declared size, a lying size, a corrupt
payload, a well-formed one) gets an ``INVALID_JSON`` error reply unread while the connection
lives on; ``"compress": false`` asks for a raw result. A single session agrees by its
subprotocol and gets packed screens; on the measured subprotocol each request says whether
its reply is packed (a ``compress`` that is not a bool, or on any other connection, is a
``VALIDATION_ERROR`` and the session lives).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import zstandard
from websockets.sync.client import ClientConnection

from openenv_gym.envs.atari import atari_server
from openenv_gym.server import ServerThread
from openenv_gym.wire.batch import (
    BATCH_SUBPROTOCOL,
    BatchResult,
    batch_open_message,
    batch_step_message,
    parse_batch_result,
)
from openenv_gym.wire.binary import BINARY_SUBPROTOCOL, MAGIC, parse_frame
from openenv_gym.wire.compressed import (
    BINARY_ZSTD_SUBPROTOCOL,
    COMPRESSED_MAGIC,
    MEASURED_SUBPROTOCOL,
    ZSTD,
)
from openenv_gym.wire.messages import SERVER_INBOUND_LIMIT, ObservationReply
from openenv_gym.wire.shared_memory import ProbeFile
from tests.server.conftest import Wire

SEEDS = [{"reset": {"seed": 3}}, {"reset": {"seed": 4}}]
STEPS = [{"step": {"action_id": 2}}, {"step": {"action_id": 3}}]


@pytest.fixture(scope="module")
def pong_url() -> Iterator[str]:
    with ServerThread(
        atari_server("pong", repeat_action_probability=0.0, max_sessions=16)
    ) as server:
        yield server.url


@pytest.fixture
def closing() -> Iterator[contextlib.ExitStack]:
    with contextlib.ExitStack() as stack:
        yield stack


def ask_raw(ws: ClientConnection, frame: dict[str, Any] | bytes) -> str | bytes:
    ws.send(json.dumps(frame) if isinstance(frame, dict) else frame)
    return ws.recv(timeout=30)


def open_batch(
    url: str,
    closing: contextlib.ExitStack,
    compression: str | None,
    shared_memory: dict[str, str] | None = None,
) -> tuple[ClientConnection, dict[str, Any]]:
    ws = closing.enter_context(Wire.open(url, subprotocols=[BATCH_SUBPROTOCOL]))
    assert ws.subprotocol == BATCH_SUBPROTOCOL
    raw = ask_raw(ws, batch_open_message(2, None, shared_memory, compression))
    assert isinstance(raw, str)
    message = json.loads(raw)
    assert message["type"] == "batch_opened", message
    return ws, message["data"]


def step(ws: ClientConnection, ops: list[Any]) -> tuple[bytes, BatchResult]:
    raw = ask_raw(ws, batch_step_message(ops))
    assert isinstance(raw, bytes), raw
    return raw, parse_batch_result(raw, compressed=True)


def error_of(raw: str | bytes) -> dict[str, Any]:
    assert isinstance(raw, str), f"expected a text frame, got {raw!r:.100}"
    message = json.loads(raw)
    assert message["type"] == "error", message
    return dict(message["data"])


def packed(content: bytes, *, write_content_size: bool = True) -> bytes:
    compressor = zstandard.ZstdCompressor(level=1, write_content_size=write_content_size)
    return COMPRESSED_MAGIC + compressor.compress(content)


def test_agreed_compression_packs_result_frames_with_the_same_observations(
    pong_url: str, closing: contextlib.ExitStack
) -> None:
    packed_ws, agreed = open_batch(pong_url, closing, ZSTD)
    plain_ws, plain = open_batch(pong_url, closing, None)
    never = {"shared_memory": False, "repeat": False, "compact": False}
    assert agreed == {"sessions": 2, "compression": ZSTD, **never}
    assert plain == {"sessions": 2, "compression": None, **never}
    for ops in [SEEDS, STEPS, STEPS, STEPS]:
        small, result = step(packed_ws, ops)
        large, expected = step(plain_ws, ops)
        assert small.startswith(COMPRESSED_MAGIC)
        assert large.startswith(MAGIC)
        assert len(small) * 20 < len(large)  # two Pong screens: ~200 KB raw
        assert result.fields["screen"].shape == (2, 210 * 160 * 3)  # flattened, as official
        np.testing.assert_array_equal(result.fields["screen"], expected.fields["screen"])
        assert result.reward == expected.reward
        assert result.done == expected.done


def test_shared_memory_wins_over_compression(pong_url: str, closing: contextlib.ExitStack) -> None:
    probe = ProbeFile.create()
    if probe is None:
        pytest.fail("expected /dev/shm on this host (the server shares it)")
    try:
        ws, agreed = open_batch(pong_url, closing, ZSTD, dict(probe.offer()))
    finally:
        probe.close()
    assert agreed["shared_memory"] is True
    assert agreed["compression"] is None
    raw = ask_raw(ws, batch_step_message(SEEDS))
    assert isinstance(raw, bytes)
    assert raw.startswith(MAGIC)


def test_an_unknown_codec_is_not_agreed(pong_url: str, closing: contextlib.ExitStack) -> None:
    ws, agreed = open_batch(pong_url, closing, "lz4")
    assert agreed["compression"] is None
    raw, _ = step(ws, SEEDS)
    assert raw.startswith(MAGIC)


def _lying(size: int) -> bytes:
    frame = bytearray(packed(json.dumps(batch_step_message(STEPS)).encode()))
    frame[len(COMPRESSED_MAGIC) + 5] = size  # the one-byte content size of a small frame
    return bytes(frame)


HOSTILE = [
    packed(b" " * (SERVER_INBOUND_LIMIT + 1)),
    packed(b"\0" * 100_000_000),  # a 3 KB zip bomb
    packed(b"{}" * 100, write_content_size=False),
    _lying(10),
    COMPRESSED_MAGIC + b"\x28\xb5\x2f\xfd\x20\x30" + b"\xff" * 30,
    COMPRESSED_MAGIC + b"garbage",
    packed(json.dumps(batch_step_message(STEPS)).encode()),  # well-formed: refused too
]


@pytest.mark.parametrize("agreed", [ZSTD, None])
def test_a_packed_client_frame_is_refused_unread_and_the_connection_lives(
    pong_url: str, closing: contextlib.ExitStack, agreed: str | None
) -> None:
    # Compression goes server -> client only: the server never decompresses what a client
    # sends, agreed or not (a few KiB of such frames slowed a bystander's steps to seconds).
    ws, opened = open_batch(pong_url, closing, agreed)
    assert opened["compression"] == agreed
    step(ws, SEEDS)
    for frame in HOSTILE:
        error = error_of(ask_raw(ws, frame))
        assert error["code"] == "INVALID_JSON"
        assert "never agreed to compression" in error["message"]
        assert "refused unread" in error["message"]
        _raw, result = step(ws, STEPS)
        assert result.indices == [0, 1]


def test_compress_false_asks_for_a_raw_result_on_a_compressed_connection(
    pong_url: str, closing: contextlib.ExitStack
) -> None:
    ws, opened = open_batch(pong_url, closing, ZSTD)
    assert opened["compression"] == ZSTD
    step(ws, SEEDS)
    raw = ask_raw(ws, batch_step_message(STEPS, compress=False))
    assert isinstance(raw, bytes)
    assert raw.startswith(MAGIC)
    packed_raw = ask_raw(ws, batch_step_message(STEPS, compress=True))
    assert isinstance(packed_raw, bytes)
    assert packed_raw.startswith(COMPRESSED_MAGIC)
    # Without the key the server packs what pays, as before.
    assert step_raw(ws, STEPS).startswith(COMPRESSED_MAGIC)
    result = parse_batch_result(packed_raw, compressed=True)
    assert result.indices == [0, 1]


def step_raw(ws: ClientConnection, ops: list[Any]) -> bytes:
    raw = ask_raw(ws, batch_step_message(ops))
    assert isinstance(raw, bytes)
    return raw


# --------------------------------------------------------------------------- single sessions


def test_a_single_session_agrees_by_subprotocol_and_gets_packed_screens(
    pong_url: str, closing: contextlib.ExitStack
) -> None:
    offered = [BINARY_ZSTD_SUBPROTOCOL, BINARY_SUBPROTOCOL]
    packed_ws = closing.enter_context(Wire.open(pong_url, subprotocols=offered))
    plain_ws = closing.enter_context(Wire.open(pong_url, subprotocols=[BINARY_SUBPROTOCOL]))
    assert packed_ws.subprotocol == BINARY_ZSTD_SUBPROTOCOL
    assert plain_ws.subprotocol == BINARY_SUBPROTOCOL
    requests: list[dict[str, Any]] = [{"type": "reset", "data": {"seed": 3}}]
    requests += [{"type": "step", "data": {"action_id": a}} for a in (2, 3, 2)]
    for request in requests:
        small = ask_raw(packed_ws, request)
        large = ask_raw(plain_ws, request)
        assert isinstance(small, bytes)
        assert isinstance(large, bytes)
        assert small.startswith(COMPRESSED_MAGIC)
        assert large.startswith(MAGIC)
        assert len(small) * 20 < len(large)
        ours, theirs = parse_frame(small, compressed=True), parse_frame(large)
        assert isinstance(ours, ObservationReply)
        assert isinstance(theirs, ObservationReply)
        np.testing.assert_array_equal(ours.observation["screen"], theirs.observation["screen"])
        assert ours.reward == theirs.reward


def test_a_measured_session_packs_each_reply_as_its_request_asks(
    pong_url: str, closing: contextlib.ExitStack
) -> None:
    offered = [MEASURED_SUBPROTOCOL, BINARY_ZSTD_SUBPROTOCOL, BINARY_SUBPROTOCOL]
    ws = closing.enter_context(Wire.open(pong_url, subprotocols=offered))
    plain = closing.enter_context(Wire.open(pong_url, subprotocols=[BINARY_SUBPROTOCOL]))
    assert ws.subprotocol == MEASURED_SUBPROTOCOL  # preferred over the always-packed one
    for asked, magic in ((None, COMPRESSED_MAGIC), (False, MAGIC), (True, COMPRESSED_MAGIC)):
        extra = {} if asked is None else {"compress": asked}
        got = ask_raw(ws, {"type": "reset", "data": {"seed": 3}, **extra})
        expected = ask_raw(plain, {"type": "reset", "data": {"seed": 3}})
        assert isinstance(got, bytes)
        assert got.startswith(magic)  # without the key, what pays is packed
        for action in (2, 3):
            got = ask_raw(ws, {"type": "step", "data": {"action_id": action}, **extra})
            expected = ask_raw(plain, {"type": "step", "data": {"action_id": action}})
            assert isinstance(got, bytes)
            assert got.startswith(magic)
            ours, theirs = parse_frame(got, compressed=True), parse_frame(expected)
            assert isinstance(ours, ObservationReply)
            assert isinstance(theirs, ObservationReply)
            np.testing.assert_array_equal(ours.observation["screen"], theirs.observation["screen"])
    state = ask_raw(ws, {"type": "state", "compress": True})  # JSON replies stay JSON
    assert isinstance(state, str)
    assert json.loads(state)["type"] == "state"


@pytest.mark.parametrize("bad", ["yes", 1, [True]])
def test_a_compress_that_is_not_a_bool_is_a_validation_error_and_the_session_lives(
    pong_url: str, closing: contextlib.ExitStack, bad: Any
) -> None:
    ws = closing.enter_context(Wire.open(pong_url, subprotocols=[MEASURED_SUBPROTOCOL]))
    ask_raw(ws, {"type": "reset", "data": {"seed": 3}})
    error = error_of(ask_raw(ws, {"type": "step", "data": {"action_id": 2}, "compress": bad}))
    assert error["code"] == "VALIDATION_ERROR"
    assert "expected 'compress' to be true or false" in error["message"]
    raw = ask_raw(ws, {"type": "step", "data": {"action_id": 2}, "compress": False})
    assert isinstance(raw, bytes)
    assert raw.startswith(MAGIC)


@pytest.mark.parametrize("offered", [[BINARY_ZSTD_SUBPROTOCOL], [BINARY_SUBPROTOCOL], None])
def test_compress_is_an_unexpected_key_where_the_measured_subprotocol_was_not_agreed(
    pong_url: str, closing: contextlib.ExitStack, offered: list[str] | None
) -> None:
    # As the official server answers any top-level key it does not know.
    ws = closing.enter_context(Wire.open(pong_url, subprotocols=offered))
    ask_raw(ws, {"type": "reset", "data": {"seed": 3}})
    error = error_of(ask_raw(ws, {"type": "step", "data": {"action_id": 2}, "compress": False}))
    assert error["code"] == "VALIDATION_ERROR"
    assert "unexpected keys ['compress']" in error["message"]
    assert isinstance(ask_raw(ws, {"type": "step", "data": {"action_id": 2}}), bytes | str)
