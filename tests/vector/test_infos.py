"""Infos merged column by column (:mod:`openenv_gym.vector.infos`) equal the row-by-row
merge of ``VectorEnv._add_info`` on every shape of batch reply, including real Atari ones."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from openenv_gym.env_mapping import reply_info
from openenv_gym.spaces import X_OBSERVATION_KEY, ObservationCodec, observation_codec
from openenv_gym.vector.infos import merge_result_infos, merge_results_infos
from openenv_gym.wire.batch import BatchResult, parse_batch_result
from openenv_gym.wire.batch_results import encode_batch_result
from openenv_gym.wire.messages import observation_message

NUM_ENVS = 6

SCREEN_SCHEMA = {
    "type": "object",
    X_OBSERVATION_KEY: "screen",
    "properties": {
        "screen": {
            "type": "array",
            "items": {"type": "integer", "minimum": 0, "maximum": 255},
            "minItems": 4,
            "maxItems": 4,
        },
        "lives": {"type": "integer"},
    },
}


@pytest.fixture(scope="module")
def add_info() -> Any:
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * NUM_ENVS)
    yield envs._add_info
    envs.close()


def _result(rows: list[dict[str, Any]], metadata: list[dict[str, Any]]) -> BatchResult:
    """A batch result as the wire carries it (encoded by the server, parsed by the client)."""
    replies = [
        observation_message({"metadata": meta, **row}, 1.0, False)
        for row, meta in zip(rows, metadata, strict=True)
    ]
    return parse_batch_result(encode_batch_result(list(range(len(rows))), replies, {}))


def _row_by_row(
    add_info: Any, codec: ObservationCodec, result: BatchResult, rows: list[tuple[int, int]]
) -> dict[str, Any]:
    infos: dict[str, Any] = {"earlier": np.ones(NUM_ENVS), "_earlier": np.ones(NUM_ENVS, bool)}
    for position, index in rows:
        info = reply_info(codec, result.reply(position))
        if info:
            infos = add_info(infos, info, index)
    return infos


def _assert_same(expected: dict[str, Any], got: dict[str, Any]) -> None:
    assert list(got) == list(expected)
    for key, value in expected.items():
        if isinstance(value, dict):
            _assert_same(value, got[key])
            continue
        assert got[key].dtype == value.dtype, key
        assert got[key].shape == value.shape, key
        assert [repr(v) for v in got[key].tolist()] == [repr(v) for v in value.tolist()], key


def _screen(k: int) -> np.ndarray:
    return np.full(4, k, np.uint8)


CASES: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "atari-like": (
        [
            {"screen": _screen(k), "lives": 3 - k, "legal_actions": [0, 1, 2], "frame": 4 * k}
            for k in range(4)
        ],
        [{"game_name": "pong", "action_meanings": ["NOOP", "FIRE"]}] * 4,
    ),
    "metadata on some rows only": (
        [{"screen": _screen(k), "lives": k} for k in range(3)],
        [{"game": "x"}, {}, {"game": "y", "extra": 1}],
    ),
    "ints then floats": (
        [{"screen": _screen(k), "lives": k, "score": [1, 2.5, 3][k]} for k in range(3)],
        [{}] * 3,
    ),
    "stacked array extra": (
        [{"screen": _screen(k), "lives": k, "pos": np.arange(3.0) + k} for k in range(3)],
        [{}] * 3,
    ),
    "nested dict extra": (
        [{"screen": _screen(k), "lives": k, "inner": {"a": k, "b": [k]}} for k in range(3)],
        [{}] * 3,
    ),
    "metadata shadows a field": (
        [{"screen": _screen(k), "lives": k, "frame": k} for k in range(3)],
        [{"frame": "from metadata", "z": None}] * 3,
    ),
    "metadata that differs by row": (
        [{"screen": _screen(k), "lives": k} for k in range(3)],
        [{"game": f"g{k}", "level": k, "tags": [k]} for k in range(3)],
    ),
    "no info at all": ([{"screen": _screen(k), "lives": k} for k in range(3)], [{}] * 3),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("targets", [[0, 1, 2, 3], [5, 1, 3, 0]])
def test_columns_merge_like_add_info(add_info: Any, case: str, targets: list[int]) -> None:
    codec = observation_codec(SCREEN_SCHEMA)
    assert codec.plain_extras
    rows_data, metadata = CASES[case]
    result = _result(rows_data, metadata)
    rows = list(zip(range(len(rows_data)), targets, strict=False))
    expected = _row_by_row(add_info, codec, result, rows)
    infos: dict[str, Any] = {"earlier": np.ones(NUM_ENVS), "_earlier": np.ones(NUM_ENVS, bool)}
    got = merge_result_infos(add_info, NUM_ENVS, infos, codec, result, rows)
    _assert_same(expected, got)


PAIRS = [(case, case) for case in sorted(CASES)] + [
    ("atari-like", "no info at all"),
    ("atari-like", "metadata that differs by row"),
    ("nested dict extra", "atari-like"),
    ("ints then floats", "stacked array extra"),
    ("metadata on some rows only", "atari-like"),
]


@pytest.mark.parametrize(("first", "second"), PAIRS)
@pytest.mark.parametrize("order", ["in turn", "second server first", "every sub-env in order"])
def test_replies_merged_at_once_equal_reply_by_reply(
    add_info: Any, first: str, second: str, order: str
) -> None:
    """A vector step's replies (one per server) merged once give what merging each reply,
    and each row of it, one by one gives: keys, their order, ``_key`` masks, dtypes, values
    (also when they cover every sub-env in order: new keys get whole columns at once)."""
    codec = observation_codec(SCREEN_SCHEMA)
    parts = []
    second_targets = [3, 4, 5] if order == "every sub-env in order" else [5, 3, 4]
    for case, targets in [(first, [0, 1, 2]), (second, second_targets)]:
        rows_data, metadata = CASES[case]
        result = _result(rows_data[:3], metadata[:3])
        parts.append((result, list(zip(range(3), targets, strict=True))))
    if order == "second server first":
        parts.reverse()
    expected: dict[str, Any] = {"earlier": np.ones(NUM_ENVS), "_earlier": np.ones(NUM_ENVS, bool)}
    for result, rows in parts:
        for position, index in rows:
            info = reply_info(codec, result.reply(position))
            if info:
                expected = add_info(expected, info, index)
    infos = {"earlier": np.ones(NUM_ENVS), "_earlier": np.ones(NUM_ENVS, bool)}
    _assert_same(expected, merge_results_infos(add_info, NUM_ENVS, infos, codec, parts))


def test_a_subset_of_rows_merges_only_those(add_info: Any) -> None:
    codec = observation_codec(SCREEN_SCHEMA)
    rows_data, metadata = CASES["atari-like"]
    result = _result(rows_data, metadata)
    rows = [(1, 4), (3, 2)]
    expected = _row_by_row(add_info, codec, result, rows)
    infos = {"earlier": np.ones(NUM_ENVS), "_earlier": np.ones(NUM_ENVS, bool)}
    _assert_same(expected, merge_result_infos(add_info, NUM_ENVS, infos, codec, result, rows))


def test_real_atari_replies_merge_like_add_info(add_info: Any) -> None:
    pytest.importorskip("ale_py")
    from openenv_gym.envs.atari import AtariEnvironment

    envs = [AtariEnvironment("pong", obs_type="ram") for _ in range(3)]
    try:
        for k, env in enumerate(envs):
            env.reset(seed=k)
        replies = [env.step_reply({"action_id": k}) for k, env in enumerate(envs)]
        result = parse_batch_result(encode_batch_result([0, 1, 2], replies, {}))
        schema = envs[0].observation_model.model_json_schema()  # what the server publishes
    finally:
        for env in envs:
            env.close()
    codec = observation_codec(schema)
    assert codec.plain_extras
    rows = [(0, 3), (1, 0), (2, 5)]
    expected = _row_by_row(add_info, codec, result, rows)
    assert {"lives", "legal_actions", "game_name", "action_meanings"} <= set(expected)
    infos = {"earlier": np.ones(NUM_ENVS), "_earlier": np.ones(NUM_ENVS, bool)}
    _assert_same(expected, merge_result_infos(add_info, NUM_ENVS, infos, codec, result, rows))


#: Columns of one info key over every sub-env, each a case of ``_add_info``'s rules.
COLUMNS: dict[str, list[Any]] = {
    "ints": [3, 2, 1, 0, 5, 4],
    "floats": [0.5, 1.0, -2.0, 0.0, 3.25, 1e300],
    "bools": [True, False, True, True, False, False],
    "ints then a float": [1, 2, 3, 4, 5, 6.5],
    "a float then ints": [1.5, 2, 3, 4, 5, 6],
    "a bool then ints": [True, 2, 3, 4, 5, 6],
    "ints then a bool": [1, 2, 3, 4, 5, True],
    "ints then None": [1, 2, 3, 4, 5, None],
    "ints then a list": [1, 2, 3, 4, 5, [6]],
    "ints then a string": [1, 2, 3, 4, 5, "6"],
    "an int past int64": [1, 2, 3, 4, 5, 1 << 70],
    "numpy numbers": [np.int32(k) for k in range(6)],
    "strings": ["a", "b", "c", "d", "e", "f"],
    "a string then ints": ["a", 1, 2, 3, 4, 5],
    "lists of one length": [[k, k] for k in range(6)],
    "lists of two lengths": [[k] * (k % 2 + 1) for k in range(6)],
    "None then numbers": [None, 1, 2.5, True, "x", [1]],
    "dicts": [{"a": k} for k in range(6)],
    "a list then a dict": [[1], {"a": 2}, [3], [4], [5], [6]],
    "arrays": [np.full(2, k, np.float32) for k in range(6)],
}


def _outcome(merge: Any) -> Any:
    """What ``merge()`` returned, or the type of the error it raised."""
    try:
        return merge()
    except Exception as exc:
        return type(exc)


@pytest.mark.parametrize("case", sorted(COLUMNS))
@pytest.mark.parametrize("earlier", ["new key", "key merged before"])
def test_a_column_of_every_sub_env_merges_like_add_info(
    add_info: Any, case: str, earlier: str
) -> None:
    """Rows covering every sub-env in order: a key new to the infos is built in one numpy
    call when ``_add_info`` would give that column; its dtype, values and mask (or the
    refusal) equal merging the rows one by one, whatever the values' types."""
    codec = observation_codec(SCREEN_SCHEMA)
    values = COLUMNS[case]
    fields = {"screen": np.zeros((NUM_ENVS, 4), np.uint8), "value": values}
    result = BatchResult(list(range(NUM_ENVS)), fields, [0.0] * NUM_ENVS, [False] * NUM_ENVS)
    rows = [(k, k) for k in range(NUM_ENVS)]

    def start() -> dict[str, Any]:
        infos: dict[str, Any] = {"earlier": np.ones(NUM_ENVS), "_earlier": np.ones(NUM_ENVS, bool)}
        if earlier == "key merged before":
            infos = add_info(infos, {"value": values[0]}, 0)
        return infos

    def one_by_one() -> dict[str, Any]:
        infos = start()
        for position, index in rows:
            infos = add_info(infos, reply_info(codec, result.reply(position)), index)
        return infos

    expected = _outcome(one_by_one)
    got = _outcome(lambda: merge_result_infos(add_info, NUM_ENVS, start(), codec, result, rows))
    if isinstance(expected, type):  # refused (numpy's error may differ: a list in an int array)
        assert got is expected or {got, expected} <= {TypeError, ValueError}, (got, expected)
    else:
        _assert_same(expected, got)
