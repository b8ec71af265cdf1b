"""The server's batch handler (``openenv-gym.batch.v1``), driven over raw WebSocket frames.

K sessions on one connection: ``batch_open`` takes K slots and builds K environments,
``batch_step`` answers every op in one frame (SAME_STEP autoreset included), and every bad
frame gets an error reply with an official code while the connection lives on.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection

from openenv_gym.errors import CapacityReachedError, ServerReplyError
from openenv_gym.server import ServerThread
from openenv_gym.wire.batch import (
    BATCH_SUBPROTOCOL,
    BatchResult,
    batch_open_message,
    batch_state_message,
    batch_step_message,
    check_batch_opened,
    parse_batch_result,
    parse_batch_states,
)
from tests.conftest import wait_for
from tests.server.conftest import ProbeRegistry, Wire

Start = Callable[..., tuple[str, ProbeRegistry, ServerThread]]


@pytest.fixture
def closing() -> Iterator[contextlib.ExitStack]:
    """Closes the test's connections at its end, whatever happened."""
    with contextlib.ExitStack() as stack:
        yield stack


def open_batch(url: str, closing: contextlib.ExitStack) -> ClientConnection:
    ws = closing.enter_context(Wire.open(url, subprotocols=[BATCH_SUBPROTOCOL]))
    assert ws.subprotocol == BATCH_SUBPROTOCOL
    return ws


def ask_raw(ws: ClientConnection, message: dict[str, Any] | str | bytes) -> str | bytes:
    ws.send(json.dumps(message) if isinstance(message, dict) else message)
    return ws.recv(timeout=10)


def opened(url: str, closing: contextlib.ExitStack, sessions: int) -> ClientConnection:
    ws = open_batch(url, closing)
    raw = ask_raw(ws, batch_open_message(sessions, None))
    assert check_batch_opened(raw, sessions) is False  # no shared-memory offer was made
    return ws


def step(ws: ClientConnection, ops: list[Any], reset: dict[str, Any] | None = None) -> BatchResult:
    return parse_batch_result(ask_raw(ws, batch_step_message(ops, reset)))


def error_of(raw: str | bytes) -> dict[str, Any]:
    assert isinstance(raw, str), f"expected a text frame, got {raw!r:.100}"
    message = json.loads(raw)
    assert message["type"] == "error", message
    return dict(message["data"])


def test_batch_open_builds_k_environments_and_steps_them_in_one_frame(
    start_probe: Start, closing: contextlib.ExitStack
) -> None:
    url, registry, _ = start_probe(max_sessions=4)
    ws = opened(url, closing, 3)
    assert len(registry.created) == 3
    result = step(ws, [{"step": {"value": 1}}, None, {"step": {"value": 3}}])
    assert result.indices == [0, 2]
    assert result.fields["value"] == [1, 3]
    assert result.reward == [1.0, 3.0]
    assert result.done == [False, False]
    assert result.metadata == {0: {"echo": 1}, 1: {"echo": 3}}
    reset = step(ws, [{"reset": {"seed": 5, "unknown": 1}}, None, None])
    assert reset.indices == [0]
    assert reset.fields["seed"] == [5]
    states = parse_batch_states(ask_raw(ws, batch_state_message()))
    assert [state["step_count"] for state in states] == [0, 0, 1]
    ws.close()


def test_same_step_reset_returns_the_last_observation_in_final(
    start_probe: Start, closing: contextlib.ExitStack
) -> None:
    url, _, _ = start_probe(max_sessions=2)
    ws = opened(url, closing, 2)
    # value 100 ends the episode (done); "last" ends it by a client-side time limit.
    result = step(ws, [{"step": {"value": 100}}, {"step": {"value": 4}, "last": True}], {"seed": 9})
    assert result.indices == [0, 1]
    assert result.fields["seed"] == [9, 9]  # both were reset in the same round trip
    assert result.done == [False, False]
    assert sorted(result.final) == [0, 1]
    assert result.final[0].done is True
    assert result.final[0].observation["value"] == 100
    assert result.final[1].done is False
    assert result.final[1].observation["value"] == 4
    ws.close()


def test_a_failing_op_names_its_session_and_the_others_are_carried_out(
    start_probe: Start, closing: contextlib.ExitStack
) -> None:
    url, _, _ = start_probe(max_sessions=3)
    ws = opened(url, closing, 3)
    raw = ask_raw(
        ws,
        batch_step_message(
            [{"step": {"value": 1}}, {"step": {"value": 2, "fail": True}}, {"step": {"value": 3}}]
        ),
    )
    with pytest.raises(ServerReplyError, match="step failed on purpose") as info:
        parse_batch_result(raw)
    assert info.value.code == "EXECUTION_ERROR"
    assert info.value.data["index"] == 1
    invalid = error_of(ask_raw(ws, batch_step_message([None, {"step": {"value": 999}}, None])))
    assert invalid["code"] == "VALIDATION_ERROR"
    assert invalid["index"] == 1
    states = parse_batch_states(ask_raw(ws, batch_state_message()))
    assert [state["step_count"] for state in states] == [1, 0, 1]
    assert step(ws, [{"step": {"value": 5}}, None, None]).fields["value"] == [5]
    ws.close()


@pytest.mark.parametrize(
    ("frame", "code", "words"),
    [
        ("{not json", "INVALID_JSON", "Invalid JSON"),
        (b"\xff\xfe", "INVALID_JSON", "not UTF-8"),
        ('["batch_step"]', "VALIDATION_ERROR", "expected a JSON object"),
        ('{"type":"step","data":{"value":1}}', "UNKNOWN_TYPE", "'batch_open' first"),
        ('{"type":"batch_step","data":[]}', "VALIDATION_ERROR", "'data' must be an object"),
        ('{"type":"batch_step","data":{"ops":[null]}}', "VALIDATION_ERROR", "one per session"),
        ('{"type":"batch_step","data":{"ops":[1,null]}}', "VALIDATION_ERROR", "op 0 must be"),
        ('{"type":"batch_open","data":{"sessions":2}}', "VALIDATION_ERROR", "already received"),
    ],
)
def test_bad_frames_get_an_official_error_and_the_connection_lives_on(
    start_probe: Start, closing: contextlib.ExitStack, frame: str | bytes, code: str, words: str
) -> None:
    url, _, _ = start_probe(max_sessions=2)
    ws = opened(url, closing, 2)
    data = error_of(ask_raw(ws, frame))
    assert data["code"] == code, data
    assert words in data["message"], data
    assert step(ws, [{"step": {"value": 2}}, None]).fields["value"] == [2]
    ws.close()


def test_an_oversized_frame_names_both_sizes_and_the_connection_lives_on(
    start_probe: Start, closing: contextlib.ExitStack
) -> None:
    url, _, _ = start_probe(max_sessions=1, max_message_size=1000)
    ws = opened(url, closing, 1)
    big = json.dumps(batch_step_message([{"step": {"value": 1, "pad": "x" * 1200}}]))
    data = error_of(ask_raw(ws, big))
    assert data["code"] == "VALIDATION_ERROR"
    assert data["size"] == len(big)
    assert data["max_message_size"] == 1000
    assert step(ws, [{"step": {"value": 2}}]).fields["value"] == [2]
    ws.close()


@pytest.mark.parametrize(
    ("first", "words"),
    [
        ('{"type":"batch_step","data":{"ops":[]}}', "must be 'batch_open'"),
        ('{"type":"batch_open","data":{"sessions":0}}', "'sessions' in 1..2"),
        ('{"type":"batch_open","data":{"sessions":1,"truncated_key":3}}', "'truncated_key'"),
    ],
)
def test_a_bad_first_frame_is_refused_and_the_connection_closed(
    start_probe: Start, closing: contextlib.ExitStack, first: str, words: str
) -> None:
    url, registry, thread = start_probe(max_sessions=2)
    ws = open_batch(url, closing)
    data = error_of(ask_raw(ws, first))
    assert data["code"] == "VALIDATION_ERROR", data
    assert words in data["message"], data
    with pytest.raises(ConnectionClosed):
        ws.recv(timeout=10)
    assert registry.created == []
    assert thread.server.active_sessions == 0


def test_too_many_sessions_are_refused_with_capacity_and_no_slot_is_kept(
    start_probe: Start, closing: contextlib.ExitStack
) -> None:
    url, registry, thread = start_probe(max_sessions=2)
    held = opened(url, closing, 1)
    ws = open_batch(url, closing)
    with pytest.raises(CapacityReachedError, match=r"1 of 2 sessions in use"):
        check_batch_opened(ask_raw(ws, batch_open_message(2, None)), 2)
    with pytest.raises(ConnectionClosed):
        ws.recv(timeout=10)
    assert len(registry.created) == 1
    again = opened(url, closing, 1)  # the refused connection kept no slot
    assert thread.server.active_sessions == 2
    held.close()
    again.close()


def test_a_failing_factory_is_answered_and_frees_the_slots(
    start_probe: Start, closing: contextlib.ExitStack
) -> None:
    url, registry, thread = start_probe(max_sessions=3, registry=ProbeRegistry(fail=True))
    ws = open_batch(url, closing)
    data = error_of(ask_raw(ws, batch_open_message(3, None)))
    assert data["code"] == "FACTORY_ERROR"
    assert "no environment today" in data["message"]
    with pytest.raises(ConnectionClosed):
        ws.recv(timeout=10)
    registry.fail = False
    ws = opened(url, closing, 3)  # all three slots are free again
    assert thread.server.active_sessions == 3
    ws.close()


def test_closing_a_batch_connection_closes_its_environments_and_frees_the_slots(
    start_probe: Start, closing: contextlib.ExitStack
) -> None:
    url, registry, thread = start_probe(max_sessions=3)
    ws = opened(url, closing, 3)
    ws.send('{"type":"close"}')
    with pytest.raises(ConnectionClosed):
        ws.recv(timeout=10)
    ws.close()
    freed = wait_for(lambda: len(registry.closed) == 3 and thread.server.active_sessions == 0)
    assert freed, (len(registry.closed), thread.server.active_sessions)
    opened(url, closing, 3).close()
