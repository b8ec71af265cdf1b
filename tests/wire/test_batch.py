"""Parsing ``openenv-gym.batch.v1`` replies on the client: every malformed reply is a typed
error that says what came, and an error reply names the session whose op failed."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from openenv_gym.errors import CapacityReachedError, ProtocolError, ServerReplyError
from openenv_gym.wire.batch import (
    check_batch_opened,
    parse_batch_result,
    parse_batch_states,
)
from openenv_gym.wire.batch_results import encode_batch_result
from openenv_gym.wire.messages import observation_message


def result_json(**data: Any) -> str:
    base: dict[str, Any] = {
        "indices": [0, 1],
        "observation": {"x": [1, 2]},
        "reward": [1.0, None],
        "done": [False, True],
    }
    base.update(data)
    return json.dumps({"type": "batch_result", "data": base})


def test_a_binary_result_round_trips_with_metadata_and_finals() -> None:
    replies = [
        observation_message(
            {"x": np.full(3, k, np.float32), "metadata": {"k": k} if k else {}}, 0.5, k == 1
        )
        for k in range(2)
    ]
    final = observation_message({"x": np.zeros(3, np.float32), "metadata": {}}, 2.0, True)
    result = parse_batch_result(encode_batch_result([0, 1], replies, {1: final}))
    assert result.fields["x"].shape == (2, 3)
    assert result.fields["x"][1].tolist() == [1.0, 1.0, 1.0]
    assert result.reward == [0.5, 0.5]
    assert result.done == [False, True]
    assert result.metadata == {1: {"k": 1}}
    assert result.final[1].reward == 2.0
    assert result.final[1].done
    assert result.reply(1).metadata == {"k": 1}


def test_a_json_result_with_integer_rewards_gives_floats() -> None:
    result = parse_batch_result(result_json(reward=[1, None]))
    assert result.reward == [1.0, None]
    assert isinstance(result.reward[0], float)


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ("not json", "invalid JSON"),
        ("[1, 2]", "not an object"),
        ('{"type": "observation", "data": {}}', "its type is 'observation'"),
        ('{"type": "batch_result", "data": []}', "its type is 'batch_result'"),
        (result_json(reward=[1.0]), "lengths of indices, reward and done differ"),
        (result_json(done=[False]), "lengths of indices, reward and done differ"),
        (result_json(done=[0, 1]), "'done' holds a non-boolean"),
        (result_json(done="ab"), "'done' holds a non-boolean"),
        (result_json(observation={"x": [1]}), "field 'x' has 1 entries for 2 indices"),
        (result_json(observation={"x": [1, 2], "y": [3]}), "field 'y' has 1 entries for 2"),
        (result_json(observation={"x": [1, 2], "y": 3}), "malformed"),
        (result_json(observation=[1, 2]), "lengths"),
        (result_json(indices=["a", "b"]), "malformed"),
        (result_json(reward=["x", 1.0]), "malformed"),
        (result_json(final={"0": {"observation": 3}}), "malformed"),
        (json.dumps({"type": "batch_result", "data": {"indices": [0]}}), "malformed"),
        (b"OGB1\xff\xff\xff\xff", "header length"),
    ],
)
def test_malformed_results_are_protocol_errors(raw: str | bytes, match: str) -> None:
    with pytest.raises(ProtocolError, match=match):
        parse_batch_result(raw, url="ws://127.0.0.1:1/ws")


def test_an_error_reply_names_the_failed_session() -> None:
    raw = json.dumps(
        {
            "type": "error",
            "data": {"code": "EXECUTION_ERROR", "message": "boom", "index": 3},
        }
    )
    with pytest.raises(ServerReplyError, match="EXECUTION_ERROR") as caught:
        parse_batch_result(raw, url="ws://127.0.0.1:1/ws")
    assert caught.value.data["index"] == 3


def test_batch_opened_and_states_replies_are_checked() -> None:
    check_batch_opened('{"type": "batch_opened", "data": {"sessions": 2}}', 2)
    with pytest.raises(ProtocolError, match="'sessions': 3"):
        check_batch_opened('{"type": "batch_opened", "data": {"sessions": 2}}', 3)
    with pytest.raises(CapacityReachedError):
        check_batch_opened('{"type": "error", "data": {"code": "CAPACITY_REACHED"}}', 2)
    states = '{"type": "batch_states", "data": {"states": [{"a": 1}, {"a": 2}]}}'
    assert parse_batch_states(states) == [{"a": 1}, {"a": 2}]
    with pytest.raises(ProtocolError, match="batch_states"):
        parse_batch_states('{"type": "batch_states", "data": {"states": 3}}')


@pytest.mark.parametrize("indices", [[0, 2], [-1, 0], [1, 1]])
def test_indices_outside_the_connections_sessions_are_protocol_errors(indices: list[int]) -> None:
    """Once a bare ``IndexError`` deep in the vector env (issue 27, case 7)."""
    replies = [observation_message({"x": k}, 0.0, False) for k in range(2)]
    frame = encode_batch_result(indices, replies, {})
    assert parse_batch_result(frame).indices == indices  # without a count: not checked
    with pytest.raises(ProtocolError, match=r"not distinct sessions of 0\.\.1"):
        parse_batch_result(frame, sessions=2)
    good = parse_batch_result(encode_batch_result([1, 0], replies, {}), sessions=2)
    assert good.indices == [1, 0]


@pytest.mark.parametrize(("sent", "taken"), [([1, 0], [1, 0]), (["1", 0.0], [1, 0]), ([], [])])
def test_indices_are_taken_as_ints(sent: list[Any], taken: list[int]) -> None:
    """Ints are taken as sent; other numbers converted (as before the fast path)."""
    data = {"indices": sent, "observation": {}, "reward": [0.0] * len(sent)}
    raw = json.dumps({"type": "batch_result", "data": {**data, "done": [False] * len(sent)}})
    assert parse_batch_result(raw, sessions=2).indices == taken
    with pytest.raises(ProtocolError, match="malformed"):
        parse_batch_result(raw.replace(json.dumps(sent), '["x"]', 1), sessions=2)
