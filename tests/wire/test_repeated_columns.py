"""Columns sent once while they repeat (:mod:`openenv_gym.wire.repeated_columns`): real Atari
and CartPole replies encoded with the server's memory and read back with the client's give
the results of frames that carry every column, frame after frame; what changes type or
value goes again; a ``"same"`` that cannot be put back is a typed error that forgets, and
a vector env against our server agrees to it."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.bench.atari_training import ATARI_OPTIONS
from openenv_gym.envs.atari.environment import AtariEnvironment
from openenv_gym.errors import ProtocolError
from openenv_gym.vector.channels import BatchChannel
from openenv_gym.wire.batch import BatchResult, batch_result_of, repeat_agreed
from openenv_gym.wire.batch_results import encode_batch_result
from openenv_gym.wire.binary import load_frame
from openenv_gym.wire.messages import observation_message
from openenv_gym.wire.repeated_columns import SAME, RepeatedColumns
from tests.side_by_side import assert_same_result

PREPROCESSING = {k: v for k, v in ATARI_OPTIONS.items() if k != "repeat_action_probability"}


def _read(raw: bytes, memory: RepeatedColumns | None) -> tuple[BatchResult, dict[str, Any]]:
    message = load_frame(raw)
    data = message["data"]
    sent = dict(data)
    if memory is not None:
        memory.restore(data)
    return batch_result_of(message, sessions=len(data["indices"])), sent


def _header(frame: bytes) -> int:
    """The length of a binary frame's JSON header (after the magic)."""
    return int.from_bytes(frame[4:8], "little")


def test_atari_replies_read_back_as_frames_with_every_column() -> None:
    envs = [AtariEnvironment(game="pong", repeat_action_probability=0.25) for _ in range(3)]
    for k, env in enumerate(envs):
        env.reset(seed=k, preprocessing=PREPROCESSING)
    server, client = RepeatedColumns(), RepeatedColumns()
    rng = np.random.default_rng(0)
    repeated: list[str] = []
    full_bytes = sent_bytes = 0
    for _ in range(30):
        replies = [env.step_reply({"action_id": int(rng.integers(6))}) for env in envs]
        full = encode_batch_result([0, 1, 2], replies, {})
        once = encode_batch_result([0, 1, 2], replies, {}, repeated=server)
        expected, _ = _read(full, None)
        got, sent = _read(once, client)
        assert_same_result(got, expected)
        repeated += sent.get(SAME, [])
        full_bytes, sent_bytes = full_bytes + _header(full), sent_bytes + _header(once)
    # The screen shape, legal actions and game metadata go once; frame numbers never repeat.
    for name in ("screen_shape", "legal_actions", "metadata"):
        assert repeated.count(name) == 29, name
    assert "frame_number" not in repeated
    assert sent_bytes < 0.7 * full_bytes  # the JSON headers (the screens go as they are)


def test_what_changes_goes_again_even_when_python_calls_it_equal() -> None:
    """``1 == 1.0 == True`` in Python; the wire tells them apart, and so does the memory."""
    server, client = RepeatedColumns(), RepeatedColumns()
    for value in (1, 1, 1.0, True, [1], [1], {"a": 1}, {"a": 1}, None):
        replies = [observation_message({"x": np.zeros(2), "v": value}, 0.0, False)] * 2
        got, _ = _read(encode_batch_result([0, 1], replies, {}, repeated=server), client)
        expected, _ = _read(encode_batch_result([0, 1], replies, {}), None)
        assert_same_result(got, expected)
        assert type(got.fields["v"][0]) is type(expected.fields["v"][0])
    assert server.mark([0, 1], {"v": [1, 1]}, None) == ([], None)  # after None: sent again


def test_other_sessions_repeat_nothing() -> None:
    server = RepeatedColumns()
    assert server.mark([0, 1], {"v": [5, 5]}, {"0": {"g": "pong"}}) == ([], {"0": {"g": "pong"}})
    assert server.mark([1], {"v": [5]}, None) == ([], None)  # another subset of sessions
    assert server.mark([1], {"v": [5]}, None) == (["v"], None)


def _data(**extra: Any) -> dict[str, Any]:
    return {"indices": [0, 1], "observation": {"x": None, "v": [1, 2]}, **extra}


@pytest.mark.parametrize(
    ("before", "same", "why"),
    [
        (None, ["v"], "only after a batch_result for the same sessions"),
        ({"indices": [0], "observation": {"v": [1]}}, ["v"], "for the same sessions"),
        (_data(), ["w"], "to name a column of the last batch_result"),
        (_data(), ["x"], "to name a column of the last batch_result"),  # an array, never
        (_data(), "v", "only after"),
    ],
)
def test_a_same_that_cannot_be_put_back_is_a_protocol_error_that_forgets(
    before: dict[str, Any] | None, same: Any, why: str
) -> None:
    client = RepeatedColumns()
    if before is not None:
        client.restore(before)
    with pytest.raises(ProtocolError, match=why):
        client.restore(_data(**{SAME: same}))
    with pytest.raises(ProtocolError, match="only after"):  # nothing left to repeat
        client.restore(_data(**{SAME: ["v"]}))


def test_a_frame_that_cannot_be_read_forgets_what_came_before() -> None:
    client = RepeatedColumns()
    client.restore(_data())
    client.forget()
    with pytest.raises(ProtocolError):
        client.restore(_data(**{SAME: ["v"]}))


def test_our_server_agrees_and_the_vector_env_reads_repeats() -> None:
    raw = json.dumps({"type": "batch_opened", "data": {"sessions": 2, "repeat": True}})
    assert repeat_agreed(raw)
    assert not repeat_agreed(raw.replace("true", "false"))
    envs = gym.make_vec("openenv/Atari-v0", num_envs=2, game="pong", **ATARI_OPTIONS)
    try:
        channels = envs.unwrapped._connections.channels
        assert channels
        assert all(isinstance(c, BatchChannel) and c.repeats for c in channels)
        envs.reset(seed=0)
        first = envs.step(np.zeros(2, int))[4]
        second = envs.step(np.ones(2, int))[4]
        # The game's metadata came once and is in every step's infos all the same.
        assert list(first) == list(second)
        assert list(second["game_name"]) == ["pong", "pong"]
        assert list(second["legal_actions"][1]) == [0, 1, 2, 3, 4, 5]
    finally:
        envs.close()
