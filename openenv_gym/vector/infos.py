"""The infos of one batch reply, merged column by column as ``VectorEnv._add_info`` would
merge them row by row.

Gymnasium's vector envs merge each sub-env's ``info`` into the batched ``infos`` one sub-env
at a time (``VectorEnv._add_info``). A batch reply already carries its info fields as
columns (one value per sub-env), so when every row's info has the same keys (an Atari
reply's lives, frame numbers, legal actions and game metadata) the merge is one numpy
assignment per numeric key and one short loop per other key, with no per-row ``info`` dict
built in between. Anything else (rows whose metadata differ, nested dicts, an observation
space whose extras nest inside its fields) takes the row-by-row path. Either way the
result is what ``_add_info`` gives: for each key an array over all sub-envs (its dtype
from the first value's type: ``int``, ``float``, ``bool`` and numpy numbers make a numeric
array, numpy arrays one of their shape and dtype, anything else an object array) and the
boolean mask ``_key`` of the sub-envs that had it.

Example:
    >>> import gymnasium as gym
    >>> envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 3)
    >>> infos = merge_column(envs._add_info, 3, {}, "lives", [0, 2], [3, 1])
    >>> infos["lives"], infos["_lives"]
    (array([3, 0, 1]), array([ True, False,  True]))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import Any, Final, cast

import numpy as np

from openenv_gym.env_mapping import reply_info
from openenv_gym.spaces import ObservationCodec
from openenv_gym.wire.batch import BatchResult

#: ``VectorEnv._add_info``: merge one sub-env's info into the batched infos.
AddInfo = Callable[[dict[str, Any], dict[str, Any], int], dict[str, Any]]
#: The observation field whose object is merged into the info (as in the single env).
_METADATA: Final = "metadata"
#: Types of info values that are no dicts (the common ones, checked without ``issubclass``).
_NOT_DICTS: Final = frozenset({int, float, bool, str, list, type(None)})
#: The dtype of ``_add_info``'s column for a first value of a Python number type.
_NUMBER_DTYPES: Final = {int: np.dtype(int), float: np.dtype(float), bool: np.dtype(np.bool_)}
#: Plain values whose column ``_add_info`` makes an object array.
_OBJECTS: Final = frozenset({str, list, type(None)})


def empty_column(first: Any, num_envs: int) -> np.ndarray:
    """An info column for ``num_envs`` sub-envs whose first value is ``first``, as
    ``VectorEnv._add_info`` makes it: numbers in a numeric array, arrays stacked, anything
    else in an object array.

    Example:
        >>> empty_column(1.5, 2), empty_column("x", 2)
        (array([0., 0.]), array([None, None], dtype=object))
    """
    kind = type(first)
    if kind in (int, float, bool) or issubclass(kind, np.number):
        return np.zeros(num_envs, dtype=kind)
    if isinstance(first, np.ndarray):
        return np.zeros((num_envs, *first.shape), dtype=first.dtype)
    return np.full(num_envs, fill_value=None, dtype=object)


def merge_column(
    add_info: AddInfo,
    num_envs: int,
    infos: dict[str, Any],
    key: str,
    targets: Sequence[int],
    values: Sequence[Any],
) -> dict[str, Any]:
    """``infos`` with ``values[k]`` merged in as sub-env ``targets[k]``'s ``key``."""
    return _merge(add_info, num_envs, infos, key, targets, row_index(targets), values)


def row_index(indices: Sequence[int]) -> slice | list[int]:
    """``indices`` as a numpy index: a slice when they run one by one (no fancy indexing),
    else a list (``indices`` itself when it is one).

    Example:
        >>> row_index([2, 3, 4]), row_index((0, 2, 1))
        (slice(2, 5, None), [0, 2, 1])
    """
    first = indices[0]
    end = first + len(indices)
    rows = indices if type(indices) is list else list(indices)
    return slice(first, end) if rows == list(range(first, end)) else rows


def _merge(
    add_info: AddInfo,
    num_envs: int,
    infos: dict[str, Any],
    key: str,
    targets: Sequence[int],
    where: slice | list[int],
    values: Sequence[Any],
) -> dict[str, Any]:
    """:func:`merge_column` with ``where``, the index of ``targets``, worked out."""
    kinds = set(map(type, values))
    if key == "final_obs" or (
        not kinds <= _NOT_DICTS and any(issubclass(kind, dict) for kind in kinds)
    ):
        for index, value in zip(targets, values, strict=True):  # _add_info's own cases
            infos = add_info(infos, {key: value}, index)
        return infos
    column = infos.get(key)
    if column is None:
        column = empty_column(values[0], num_envs)
    if column.dtype == object:
        for index, value in zip(targets, values, strict=True):
            column[index] = value
    else:
        column[where] = values
    return _store(infos, key, column, where, num_envs)


def _store(
    infos: dict[str, Any], key: str, column: Any, rows: Any, num_envs: int
) -> dict[str, Any]:
    """Put ``column`` under ``key`` and mark ``rows`` in its ``_key`` mask."""
    mask = infos.get(f"_{key}")
    if mask is None:
        mask = np.zeros(num_envs, dtype=np.bool_)
    mask[rows] = True
    infos[key], infos[f"_{key}"] = column, mask
    return infos


def merge_result_infos(
    add_info: AddInfo,
    num_envs: int,
    infos: dict[str, Any],
    codec: ObservationCodec,
    result: BatchResult,
    rows: Sequence[tuple[int, int]],
) -> dict[str, Any]:
    """``infos`` with the info of each ``(position in result, sub-env index)`` row merged
    in, as ``add_info(infos, reply_info(codec, result.reply(position)), index)`` for each
    row (with a non-empty info) in order would."""
    return merge_results_infos(add_info, num_envs, infos, codec, [(result, rows)])


#: One batch reply and its ``(position in the reply, sub-env index)`` rows to merge.
ResultRows = tuple[BatchResult, Sequence[tuple[int, int]]]


def merge_results_infos(
    add_info: AddInfo,
    num_envs: int,
    infos: dict[str, Any],
    codec: ObservationCodec,
    parts: Sequence[ResultRows],
) -> dict[str, Any]:
    """:func:`merge_result_infos` for several batch replies (one per server of a vector
    step) in order, merged once per key when their rows share the same keys in the same
    order (each key's values one after another; what merging them reply by reply gives)."""
    parts = [(result, rows) for result, rows in parts if rows]
    if not parts:
        return infos
    every = [_info_columns(codec, result, [p for p, _ in rows]) for result, rows in parts]
    first = every[0]
    if first is None or any(c is None or list(c) != list(first) for c in every[1:]):
        for part, columns in zip(parts, every, strict=True):
            infos = _merge_part(add_info, num_envs, infos, codec, part, columns)
        return infos
    targets = [index for _, rows in parts for _, index in rows]
    if len(every) == 1:
        columns = first
    else:
        columns = {key: _joined([c[key] for c in every if c is not None]) for key in first}
    return _merge_columns(add_info, num_envs, infos, columns, targets)


def _joined(parts: list[Sequence[Any]]) -> Sequence[Any]:
    """The values of one key in several replies, one after another (an array when they
    are arrays of one dtype, so the merged column's dtype is the one it would have been)."""
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2 and type(parts[0]) is list and type(parts[1]) is list:
        return parts[0] + parts[1]  # a vector env on one server of two workers
    if all(type(part) is list for part in parts):
        return list(chain.from_iterable(parts))
    arrays = [np.asarray(part) for part in parts if isinstance(part, np.ndarray)]
    if len(arrays) == len(parts) and len({array.dtype for array in arrays}) == 1:
        return cast(Sequence[Any], np.concatenate(arrays))
    return [value for part in parts for value in part]


def _merge_part(
    add_info: AddInfo,
    num_envs: int,
    infos: dict[str, Any],
    codec: ObservationCodec,
    part: ResultRows,
    columns: dict[str, Sequence[Any]] | None,
) -> dict[str, Any]:
    """The rows of one reply merged: column by column, or one by one (``columns`` None)."""
    result, rows = part
    if columns is None:  # rows that differ: one by one
        for position, index in rows:
            info = reply_info(codec, result.reply(position))
            if info:
                infos = add_info(infos, info, index)
        return infos
    return _merge_columns(add_info, num_envs, infos, columns, [index for _, index in rows])


def _merge_columns(
    add_info: AddInfo,
    num_envs: int,
    infos: dict[str, Any],
    columns: Mapping[str, Sequence[Any]],
    targets: Sequence[int],
) -> dict[str, Any]:
    """``infos`` with each key's ``columns`` values merged in as sub-envs ``targets``' (in
    key order). When the targets are every sub-env in order, a key new to ``infos`` gets its
    column in one numpy call (:func:`full_column`), equal to ``_add_info``'s."""
    where = row_index(targets)
    every_mask = np.ones(num_envs, dtype=np.bool_) if where == slice(0, num_envs) else None
    for key, values in columns.items():
        if every_mask is not None and key not in infos and key != "final_obs":
            mask_key = f"_{key}"
            column = None if mask_key in infos else full_column(values, num_envs)
            if column is not None:
                infos[key], infos[mask_key] = column, every_mask.copy()
                continue
        infos = _merge(add_info, num_envs, infos, key, targets, where, values)
    return infos


def full_column(values: Sequence[Any], num_envs: int) -> np.ndarray | None:
    """The info column of one value per sub-env, as ``_add_info`` would fill it value by
    value: Python numbers of the first one's type (a numeric array; a later value numpy
    casts to another dtype, e.g. a float after ints, is left to the general path), or plain
    values, no dicts, whose first is a string, a list or ``None`` (an object array). ``None``
    for anything else.

    Example:
        >>> full_column([1, 2], 2), full_column([1, 2.5], 2), full_column(["a", [1]], 2)
        (array([1, 2]), None, array(['a', list([1])], dtype=object))
    """
    first = type(values[0])
    dtype = _NUMBER_DTYPES.get(first)
    if dtype is not None:
        try:
            column = np.array(values)
        except (ValueError, TypeError, OverflowError):  # sequences among numbers
            return None
        return column if column.dtype == dtype and column.shape == (num_envs,) else None
    if first in _OBJECTS and _NOT_DICTS.issuperset(map(type, values)):
        return np.fromiter(values, dtype=object, count=num_envs)
    return None


def _info_columns(
    codec: ObservationCodec, result: BatchResult, positions: list[int]
) -> dict[str, Sequence[Any]] | None:
    """The info of the rows ``positions`` as key -> one value per row, in the key order of
    one row's info; ``None`` when the rows' infos do not share their keys."""
    if not codec.plain_extras or (_METADATA in result.fields and not result.metadata_field):
        return None  # extras nested in the observation, or a metadata field of its own
    skipped = {codec.key, codec.truncated_key, codec.terminated_key, _METADATA}
    every_row = positions == list(range(len(result.indices)))
    columns: dict[str, Sequence[Any]] = {}
    for name, column in result.fields.items():
        if name not in skipped:
            columns[name] = column if every_row else [column[p] for p in positions]
    metadata = [result.metadata.get(p, {}) for p in positions]
    keys = metadata[0].keys()
    if any(m.keys() != keys for m in metadata):
        return None
    for key in keys:  # the metadata wins over a field of the same name, as in reply_info
        columns[key] = [m[key] for m in metadata]
    return columns


def info_adder(num_envs: int) -> AddInfo:
    """An :data:`AddInfo` for ``num_envs`` sub-envs that merges as ``VectorEnv._add_info``
    does (for a pool, which is no ``VectorEnv``).

    Example:
        >>> add = info_adder(3)
        >>> infos = add({}, {"lives": 2, "game": {"name": "pong"}}, 1)
        >>> infos["lives"], infos["_lives"], infos["game"]["name"]
        (array([0, 2, 0]), array([False,  True, False]), array([None, 'pong', None], dtype=object))
    """

    def add_info(infos: dict[str, Any], info: dict[str, Any], index: int) -> dict[str, Any]:
        for key, value in info.items():
            array: Any
            if isinstance(value, dict):
                array = add_info(infos.get(key, {}), value, index)
            else:
                array = infos.get(key)
                if array is None:
                    array = empty_column(value, num_envs)
                array[index] = value
            infos = _store(infos, key, array, index, num_envs)
        return infos

    return add_info


def take_info_rows(infos: dict[str, Any], rows: np.ndarray) -> dict[str, Any]:
    """The rows ``rows`` of merged infos (each key's array and its ``_key`` mask), keeping
    the keys that any of those rows has; their masks are cleared in ``infos``.

    Example:
        >>> infos = info_adder(3)({}, {"lives": 2}, 1)
        >>> taken = take_info_rows(infos, np.array([1, 2]))
        >>> taken["lives"], taken["_lives"], bool(infos["_lives"].any())
        (array([2, 0]), array([ True, False]), False)
    """
    taken: dict[str, Any] = {}
    for key, value in infos.items():
        if key.startswith("_"):
            continue
        mask = infos.get(f"_{key}")
        if mask is None or not mask[rows].any():
            continue
        if isinstance(value, dict):
            taken[key] = take_info_rows(value, rows)
        else:
            taken[key] = value[rows]
        taken[f"_{key}"] = mask[rows]
        mask[rows] = False
    return taken


__all__ = [
    "AddInfo",
    "ResultRows",
    "empty_column",
    "full_column",
    "info_adder",
    "merge_column",
    "merge_result_infos",
    "merge_results_infos",
    "row_index",
    "take_info_rows",
]
