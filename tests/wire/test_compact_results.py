"""Compact batch results (:mod:`openenv_gym.wire.compact_results`,
:mod:`openenv_gym.wire.compact_reader`): real Atari and CartPole replies encoded with the
server's memories and read back with the client's give, frame after frame, the results of
frames that carry every column; whatever changes besides the numbers goes as a full frame;
a compact frame that does not fit its announcement is a typed error that forgets it."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from openenv_gym.bench.atari_training import ATARI_OPTIONS
from openenv_gym.envs.atari.environment import AtariEnvironment
from openenv_gym.envs.gymnasium.environment import GymnasiumEnvironment
from openenv_gym.errors import ProtocolError
from openenv_gym.wire.batch import BatchResult, batch_result_of
from openenv_gym.wire.batch_results import encode_batch_result
from openenv_gym.wire.binary import load_frame
from openenv_gym.wire.compact_reader import TYPED, CompactReader, as_lists
from openenv_gym.wire.compact_results import COMPACT, CompactWriter, Result, is_compact_frame
from openenv_gym.wire.messages import observation_message
from openenv_gym.wire.repeated_columns import RepeatedColumns
from openenv_gym.wire.shared_memory import SharedArrayReader, SharedArrayWriter
from tests.side_by_side import assert_same_result

PREPROCESSING = {k: v for k, v in ATARI_OPTIONS.items() if k != "repeat_action_probability"}


class Ends:
    """Both ends of one connection: the server's memories, the client's, shared memory."""

    def __init__(self, shared: bool = False) -> None:
        self.server_repeated, self.writer = RepeatedColumns(), CompactWriter()
        self.client_repeated, self.reader = RepeatedColumns(), CompactReader()
        self.shared = SharedArrayWriter() if shared else None
        self.mapped = SharedArrayReader() if shared else None
        self.compact_frames = 0

    def send(
        self,
        replies: list[dict[str, Any]],
        indices: list[int] | None = None,
        finals: dict[int, dict[str, Any]] | None = None,
    ) -> bytes:
        indices = list(range(len(replies))) if indices is None else indices
        return encode_batch_result(
            indices, replies, finals or {}, self.shared, self.server_repeated, self.writer
        )

    def read(self, raw: bytes, sessions: int | None = None) -> BatchResult:
        """As a vector env's connection reads a reply (:meth:`BatchChannel.load`, then
        :meth:`BatchChannel.parse`)."""
        if is_compact_frame(raw):
            self.compact_frames += 1
            data = as_lists(self.reader.unpack(raw, self.mapped))
            message = {"type": "batch_result", "data": data}
        else:
            message = load_frame(raw, self.mapped)
            self.client_repeated.restore(message["data"])
            self.reader.remember(message["data"])
        count = len(message["data"]["indices"]) if sessions is None else sessions
        return batch_result_of(message, sessions=count)

    def close(self) -> None:
        if self.shared is not None and self.mapped is not None:
            self.mapped.close()
            self.shared.close()


@pytest.fixture
def ends() -> Iterator[Ends]:
    both = Ends()
    yield both
    both.close()


def _full(replies: list[dict[str, Any]], indices: list[int] | None = None) -> BatchResult:
    """What a connection without any memory reads."""
    indices = list(range(len(replies))) if indices is None else indices
    raw = encode_batch_result(indices, replies, {})
    return batch_result_of(load_frame(raw), sessions=len(indices))


@pytest.mark.parametrize("shared", [False, True], ids=["frame bytes", "shared memory"])
def test_atari_replies_read_back_as_full_frames(shared: bool) -> None:
    envs = [AtariEnvironment(game="breakout") for _ in range(3)]
    for k, env in enumerate(envs):
        env.reset(seed=k, preprocessing=PREPROCESSING)
    both = Ends(shared)
    rng = np.random.default_rng(0)
    try:
        sizes: list[int] = []
        for step in range(80):
            replies = [env.step_reply({"action_id": int(rng.integers(4))}) for env in envs]
            if step == 40:  # a new episode: its lives change the typed column's values only
                replies[1] = observation_message(
                    envs[1].reset(seed=9).model_dump(exclude={"reward", "done"}), 0.0, False
                )
            raw = both.send(replies)
            assert_same_result(both.read(raw), _full(replies))
            if is_compact_frame(raw):
                sizes.append(len(raw))
        assert both.compact_frames == 78  # all but the first two: the second announced
        frames = 3 * 4 * 84 * 84
        assert set(sizes) == {(8 + 3 * 8 + 8 + 4 * 3 * 8 + 8) + (0 if shared else frames)}
    finally:
        both.close()


def test_cartpole_arrays_travel_in_the_compact_frame(ends: Ends) -> None:
    envs = [GymnasiumEnvironment("CartPole-v1") for _ in range(4)]
    for k, env in enumerate(envs):
        env.reset(seed=k)
    rng = np.random.default_rng(1)
    for _ in range(30):
        replies = []
        for env in envs:
            reply = env.step_reply({"action": int(rng.integers(2))})
            assert reply is not None
            if reply["data"]["done"]:
                env.reset()
            replies.append(reply)
        assert_same_result(ends.read(ends.send(replies)), _full(replies))
    assert ends.compact_frames == 28


def _replies(values: list[Any], reward: Any = 0.0, **fields: Any) -> list[dict[str, Any]]:
    return [
        observation_message({"x": np.full(2, k, np.float32), "v": v, **fields}, reward, False)
        for k, v in enumerate(values)
    ]


@pytest.mark.parametrize(
    ("first", "then"),
    [
        (_replies([1, 2]), _replies([1.0, 2.0])),  # ints, then floats (1 == 1.0 in Python)
        (_replies([1, 2]), _replies([True, False])),  # ints, then booleans
        (_replies([1, 2]), _replies([1, 2**63])),  # past 64 bits
        (_replies([0.5, 1.5]), _replies([0.5, math.inf])),  # not finite: null in JSON
        (_replies([1, 2]), _replies([1, 2], reward=None)),  # a reward that is not a number
        (_replies([1, 2]), _replies([1, 2], reward=math.nan)),
        (_replies([1, 2]), _replies([1, 2], reward=True)),  # a boolean is not a number here
        (_replies([[1], [2]]), _replies([[1.0], [2]])),  # a "same" field whose JSON changed
        (_replies([1, 2], name="a"), _replies([1, 2], name="b")),
        (_replies([1, 2]), _replies([1, 2], extra=3)),  # another field
        (_replies([1, 2], metadata={"g": 1}), _replies([1, 2])),  # metadata gone
        (_replies([1, 2]), _replies([1, 2], metadata={"g": 1})),  # metadata come
        (_replies([1, 2], metadata={"g": 1}), _replies([1, 2], metadata={"g": 2})),
        (
            _replies([1, 2]),
            [observation_message({"x": np.zeros(3, np.float32), "v": 1}, 0.0, False)] * 2,
        ),  # another array shape
    ],
)
def test_what_changes_besides_the_numbers_goes_as_a_full_frame(
    ends: Ends, first: list[dict[str, Any]], then: list[dict[str, Any]]
) -> None:
    for replies in (first, first, first, then, then):  # full, announce, compact; full, ...
        raw = ends.send(replies)
        assert_same_result(ends.read(raw), _full(replies))
    assert ends.compact_frames == 1 + bool(is_compact_frame(ends.send(then)))


def test_a_reward_past_a_float_goes_full_and_is_a_protocol_error(ends: Ends) -> None:
    """``10**400`` is JSON, not a float64: a full frame, which no reader takes."""
    for _ in range(2):  # the second announces
        ends.read(ends.send(_replies([1, 2])))
    replies = _replies([1, 2], reward=10**400)
    raw = ends.send(replies)
    assert not is_compact_frame(raw)
    with pytest.raises(ProtocolError, match="int too large to convert to float"):
        ends.read(raw)
    with pytest.raises(ProtocolError, match="int too large to convert to float"):
        _full(replies)  # as read without any memory


def test_other_sessions_and_final_replies_go_as_full_frames(ends: Ends) -> None:
    """They announce nothing; the last announcement stays in force on both ends."""
    replies = _replies([1, 2])
    for _ in range(2):  # the second announces
        ends.read(ends.send(replies))
    subset = ends.send(replies[:1], indices=[1])
    assert not is_compact_frame(subset)
    ends.read(subset, sessions=2)
    final = {0: replies[0]}
    raw = ends.send(replies, finals=final)  # a SAME_STEP reset: no announcement
    assert not is_compact_frame(raw)
    assert COMPACT not in load_frame(raw)["data"]
    ends.read(raw)
    more = _replies([3, 4])
    raw = ends.send(more)
    assert is_compact_frame(raw)  # on the announcement before them
    assert_same_result(ends.read(raw), _full(more))


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")  # the object, as meant
def test_a_result_that_cannot_be_encoded_changes_neither_end(ends: Ends) -> None:
    """It raises before anything is sent: the next frames stand on what the client read."""
    replies = _replies([1, 2])
    for _ in range(2):  # the second announces
        ends.read(ends.send(replies))
    with pytest.raises(TypeError):
        ends.send(_replies([1, 2], broken=object()))
    for more in (replies, _replies([3, 4])):
        raw = ends.send(more)
        assert is_compact_frame(raw)
        assert_same_result(ends.read(raw), _full(more))


def _announced(reader: CompactReader, layout: Any = None, **data: Any) -> None:
    fields = {"x": None, "v": [1, 2]}
    reader.remember(
        {
            "indices": [0, 1],
            "observation": fields,
            "reward": [0.0, 0.0],
            "done": [False, False],
            "final": {},
            COMPACT: [["x", "raw", "<f4", [2, 2]], ["v", "i8"]] if layout is None else layout,
            **data,
        }
    )


def _frame() -> bytes:
    writer = CompactWriter()
    columns = {"x": None, "v": [3, 4]}
    arrays = {"x": np.zeros((2, 2), np.float32)}
    for _ in range(2):  # the second full frame for the same sessions announces
        writer.announce(Result([0, 1], columns, arrays, None, [0.0, 0.0], []), final=False)
    frame = writer.pack(Result([0, 1], columns, arrays, None, [1.0, 0.0], [True, False]))
    assert frame is not None
    return frame


def test_a_compact_frame_reads_as_announced() -> None:
    reader = CompactReader()
    _announced(reader)
    data = reader.unpack(_frame())
    assert data[TYPED] == ["v"]
    assert data["observation"]["v"].tolist() == [3, 4]
    assert data["observation"]["x"].shape == (2, 2)
    assert data["reward"].tolist() == [1.0, 0.0]
    assert data["done"].tolist() == [True, False]


@pytest.mark.parametrize(
    ("frame", "why"),
    [
        (_frame()[:-8], "of 64 bytes for 2 sessions as announced, got 56"),
        (_frame()[:4] + (3).to_bytes(4, "little") + _frame()[8:], "for 2 sessions"),
        (_frame()[:24] + b"\x02" + _frame()[25:], "flags of 0 or 1"),
    ],
    ids=["truncated", "other count", "flag byte 2"],
)
def test_a_frame_that_does_not_fit_its_announcement_is_an_error_that_forgets(
    frame: bytes, why: str
) -> None:
    reader = CompactReader()
    _announced(reader)
    with pytest.raises(ProtocolError, match=why):
        reader.unpack(frame)
    with pytest.raises(ProtocolError, match="only after a batch_result announcing"):
        reader.unpack(_frame())  # the announcement is gone


def test_a_compact_frame_without_announcement_is_an_error() -> None:
    reader = CompactReader()
    with pytest.raises(ProtocolError, match="only after a batch_result announcing"):
        reader.unpack(_frame())


def test_a_full_frame_without_announcement_leaves_the_last_in_force() -> None:
    reader = CompactReader()
    _announced(reader)
    announcement = reader.announcement
    _announced(reader, layout=None, **{COMPACT: None})  # e.g. a reset's: rewards null
    assert reader.announcement is announcement
    assert reader.unpack(_frame())["observation"]["v"].tolist() == [3, 4]


@pytest.mark.parametrize(
    ("layout", "why"),
    [
        ("x", "not one for a batch_result"),
        ([["v", "i8"], ["x", "raw", "<f4", [2, 2]]], "its names are not the fields"),
        ([["x", "raw", "<f4", [2, 2]], ["v", "i4"]], r"\['v', 'i4', ...\] is not a field"),
        ([["x", "raw", "<U4", [2, 2]], ["v", "i8"]], "not a numeric dtype"),
        ([["x", "raw", "<f4", [2, -2]], ["v", "i8"]], "non-negative shape"),
        ([["x", "raw", "nonsense", [2]], ["v", "i8"]], "not a dtype and a shape"),
        ([["x", "shm", "name"], ["v", "i8"]], "is not a field entry"),
        ([[], ["v", "i8"]], "its names are not the fields"),
        ([["x", "raw", "<f4", [2, 2]], ["v"]], r"\['v'\] is not \[name, kind, ...\]"),
        ([["x", "raw", "<f4", [2, 2]], ["v", ["i8"]]], r"is not \[name, kind, ...\]"),
    ],
)
def test_a_bad_announcement_is_a_protocol_error(layout: Any, why: str) -> None:
    reader = CompactReader()
    with pytest.raises(ProtocolError, match=why):
        _announced(reader, layout=layout)
    assert reader.announcement is None


def test_an_announcement_with_final_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="without final"):
        _announced(CompactReader(), final={"0": {}})


def test_shared_memory_that_was_not_agreed_is_an_error() -> None:
    reader = CompactReader()
    descriptor = {"shm": "openenv-gym-x", "offset": 0, "dtype": "|u1", "shape": [2, 4]}
    _announced(reader, layout=[["x", "shm", descriptor], ["v", "i8"]])
    frame = _frame()[:48]  # the same numbers, no raw array
    with pytest.raises(ProtocolError, match="did not agree to it"):
        reader.unpack(frame)
