"""Compact batch results: a steady step's numbers as raw columns, without a JSON header.

Most ``batch_result`` frames of a training run say what the last one said in all but a few
numbers: the same sessions answered, the same fields in the same order, the arrays in the
same place, the constant columns repeated (:mod:`openenv_gym.wire.repeated_columns`); only
rewards, done flags and numeric info fields (lives, frame numbers, a raw reward) change.
Encoding those as JSON, then parsing the JSON and checking each value's type, was most of
what both ends did per step besides stepping the environments.

A client that offers ``"compact": true`` in ``batch_open`` (with ``"repeat": true``), to a
server that answers ``"compact": true`` in ``batch_opened`` (only without compressed frames),
gets such steps as **compact frames**. A full ``batch_result`` without ``final``, whose
rewards are all finite numbers, for the sessions the connection's last full result
answered too, **announces** the layout of the compact frames that may follow it, under
``"compact"``: one entry per observation field, in order::

    [name, "f8" | "i8" | "b1"]            # a column of finite floats, of ints, of booleans
    [name, "same"]                        # this frame's value, repeated
    [name, "shm", {"shm", "offset", "dtype", "shape"}]   # an array in shared memory
    [name, "raw", dtype, shape]           # an array in the compact frame's bytes

A compact frame then answers the same sessions with every ``"same"`` field, the metadata
and the shared-memory descriptors as announced, and no ``final``:

==========  ===============================================================================
bytes       content
==========  ===============================================================================
0..3        magic ``b"OGC1"``
4..7        the number of sessions K, unsigned 32-bit little-endian
then        the rewards (K little-endian float64), the done flags (K bytes, 0 or 1), the
            typed columns in the announced order (K values each; booleans as bytes 0 or
            1), then the raw arrays in the announced order; each part padded with zeros
            to a multiple of 8 bytes
==========  ===============================================================================

The server (:class:`CompactWriter`) sends a full frame whenever anything else changed; it
announces again if it can, and a full frame without an announcement (a reset's, whose
rewards are ``null``) leaves the last one in force. The client
(:class:`~openenv_gym.wire.compact_reader.CompactReader`) reads a compact frame as the full
result it stands for.

Example:
    >>> from openenv_gym.wire.compact_reader import CompactReader
    >>> writer, reader = CompactWriter(), CompactReader()
    >>> first = {"lives": [3, 2], "legal": [[0, 1], [0, 1]]}
    >>> def result(fields, rewards, done=(False, False)):
    ...     return Result([0, 1], fields, {}, None, rewards, done)
    >>> writer.pack(result(first, [1.0, 0.0])) is None  # no announcement
    True
    >>> writer.announce(result(first, [1.0, 0.0]), final=False) is None  # once
    True
    >>> layout = writer.announce(result(first, [1.0, 0.0]), final=False)
    >>> layout
    [['lives', 'i8'], ['legal', 'same']]
    >>> reader.remember({"indices": [0, 1], "observation": first, "reward": [1.0, 0.0],
    ...                  "done": [False, True], "metadata": None, "final": {},
    ...                  "compact": layout})
    >>> second = {"lives": [2, 2], "legal": [[0, 1], [0, 1]]}
    >>> frame = writer.pack(result(second, [0.0, 1.0]))
    >>> frame[:4], len(frame)
    (b'OGC1', 48)
    >>> data = reader.unpack(frame)
    >>> data["observation"]["lives"], data["reward"], data["done"]
    (array([2, 2]), array([0., 1.]), array([False, False]))
    >>> data["observation"]["legal"] is first["legal"]  # the announcing result's object
    True
    >>> third = {"lives": [2, 2], "legal": [[0, 1, 2], [0, 1]]}  # not the announced legal
    >>> writer.pack(result(third, [0.0, 0.0])) is None
    True
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from itertools import chain
from typing import Any, Final, NamedTuple, TypeGuard

import numpy as np

from openenv_gym.wire.messages import encode_json

#: The ``batch_open`` / ``batch_opened`` key of the agreement, and the ``batch_result`` key
#: of an announcement.
COMPACT: Final = "compact"
#: The first four bytes of a compact frame.
COMPACT_MAGIC: Final = b"OGC1"
#: A compact frame's session count, after the magic.
SESSION_COUNT: Final = struct.Struct("<I")
#: Where a compact frame's rewards start; its done flags follow them (:func:`done_at`).
REWARD_AT: Final = len(COMPACT_MAGIC) + SESSION_COUNT.size
ALIGN: Final = 8
#: The typed column codes: their dtypes in a frame, and the Python type of their values.
TYPED_DTYPES: Final[Mapping[str, np.dtype[Any]]] = {
    "f8": np.dtype("<f8"),
    "i8": np.dtype("<i8"),
    "b1": np.dtype("|u1"),
}
_TYPES: Final = {"f8": float, "i8": int, "b1": bool}
_STRUCT_CODES: Final = {"f8": "d", "i8": "q", "b1": "?"}
SAME: Final = "same"
SHM: Final = "shm"
RAW: Final = "raw"
_NUMBERS: Final = frozenset({float, int})


def is_compact_frame(frame: str | bytes) -> TypeGuard[bytes]:
    """Whether ``frame`` is a compact frame (by its magic)."""
    return isinstance(frame, bytes) and frame[:4] == COMPACT_MAGIC


def padded(size: int) -> int:
    """``size`` rounded up to a multiple of :data:`ALIGN`."""
    return size + (-size % ALIGN)


def done_at(sessions: int) -> int:
    """Where the done flags of a compact frame of ``sessions`` sessions start."""
    return REWARD_AT + 8 * sessions


def _column_code(values: Sequence[Any]) -> str | None:
    """The typed code of a column of values (``None``: it goes as JSON).

    Example:
        >>> [_column_code(c) for c in ([1, 2], [1.5, 2.0], [True], [1, 2.0])]
        ['i8', 'f8', 'b1', None]
        >>> _column_code([2**63]), _column_code([float("nan")])
        (None, None)
    """
    kinds = set(map(type, values))
    kind = kinds.pop() if len(kinds) == 1 else None
    if kind is bool:
        return "b1"
    if kind is int and all(-(2**63) <= v < 2**63 for v in values):
        return "i8"
    if kind is float and all(map(math.isfinite, values)):
        return "f8"
    return None


def _finite_numbers(values: Sequence[Any]) -> bool:
    """Whether every value is an int or a float that a float64 holds, not NaN or infinite.

    Example:
        >>> _finite_numbers([1, 0.5]), _finite_numbers([None]), _finite_numbers([10**400])
        (True, False, False)
    """
    try:
        return _NUMBERS.issuperset(map(type, values)) and all(map(math.isfinite, values))
    except OverflowError:  # an int past a float64's range
        return False


class Result(NamedTuple):
    """A batch result as the server has it before choosing its frame."""

    indices: Sequence[int]
    #: Its observation fields in order: a list of values each, ``None`` for an array field.
    columns: Mapping[str, Any]
    #: Each array field's shared-memory descriptor (with its ``path``) or stacked array.
    arrays: Mapping[str, Any]
    metadata: Any
    rewards: Sequence[Any]
    done: Sequence[bool]


class _Announced:
    """What the server announced last, in the form each step is checked against."""

    def __init__(
        self,
        indices: list[int],
        columns: Mapping[str, Any],
        layout: list[list[Any]],
        arrays: Mapping[str, Any],
        metadata: Any,
    ) -> None:
        self.indices = indices
        self.names = tuple(columns)
        kinds = [(entry[0], entry[1], entry[2:]) for entry in layout]
        #: The typed fields, their values' types one by one, and the float ones.
        self.typed = [name for name, kind, _ in kinds if kind in _TYPES]
        self.types = tuple(_TYPES[kind] for _, kind, _ in kinds if kind in _TYPES for _ in indices)
        self.floats = [name for name, kind, _ in kinds if kind == "f8"]
        #: The ``"same"`` fields, and the JSON of their values and the metadata as announced.
        self.same = [name for name, kind, _ in kinds if kind == SAME]
        self.has_metadata = metadata is not None
        self.unchanged = encode_json([*(columns[name] for name in self.same), metadata])
        #: Each shared array's descriptor as a result names it (with its ``path``).
        self.shared = {name: arrays[name] for name, kind, _ in kinds if kind == SHM}
        self.raw = {name: (extra[0], tuple(extra[1])) for name, kind, extra in kinds if kind == RAW}
        # The frame up to its raw arrays: magic, count, rewards, flags, typed columns.
        count = len(indices)
        parts = ["<4sI", f"{count}d", f"{count}?{-count % ALIGN}x"]
        for _, kind, _ in kinds:
            if kind in _TYPES:
                pad = -(count * TYPED_DTYPES[kind].itemsize) % ALIGN
                parts.append(f"{count}{_STRUCT_CODES[kind]}{pad}x")
        self.format = struct.Struct("".join(parts))


class CompactWriter:
    """The server's side: announces layouts in full frames, packs compact ones."""

    def __init__(self) -> None:
        self._announced: _Announced | None = None
        #: The sessions the last full frame answered.
        self._last: list[int] | None = None

    def announce(self, result: Result, *, final: bool) -> list[list[Any]] | None:
        """The announcement of the full frame of ``result`` (its columns before any is left
        out as repeated). ``None`` (the last
        announcement stays in force) when compact frames cannot stand on it (``final``, or
        a reward that is not a finite number, as a reset's), and when the last full frame
        answered other sessions: a pool's subsets seldom repeat, and an announcement costs
        its encoding."""
        indices, columns, arrays, metadata, rewards, _ = result
        last, self._last = self._last, list(indices)
        if final or last != self._last or not _finite_numbers(rewards):
            return None  # the last announcement stays in force on both ends
        layout: list[list[Any]] = []
        for name, values in columns.items():
            array = arrays.get(name)
            if isinstance(array, np.ndarray):
                layout.append([name, RAW, array.dtype.str, list(array.shape)])
            elif array is not None:
                layout.append([name, SHM, {k: v for k, v in array.items() if k != "path"}])
            else:
                code = _column_code(values) if type(values) is list else None
                layout.append([name, code or SAME])
        self._announced = _Announced(list(indices), columns, layout, arrays, metadata)
        return layout

    def forget(self) -> None:
        """No compact frame until the next announcement (the last one was not sent)."""
        self._announced = None

    def pack(self, result: Result) -> bytes | None:
        """The compact frame of ``result`` (one without ``final``), or ``None`` when it
        needs a full frame: no announcement, other
        sessions, fields, arrays or metadata, a ``"same"`` field whose JSON changed, or a
        number that no longer fits its column."""
        indices, columns, arrays, metadata, rewards, done = result
        announced = self._announced
        if (
            announced is None
            or indices != announced.indices
            or tuple(columns) != announced.names
            or not _finite_numbers(rewards)
        ):
            return None
        for name, descriptor in announced.shared.items():
            if arrays.get(name) != descriptor:
                return None
        for name, (dtype, shape) in announced.raw.items():
            array = arrays.get(name)
            if (
                not isinstance(array, np.ndarray)
                or array.dtype.str != dtype
                or array.shape != shape
            ):
                return None
        if (metadata is not None) != announced.has_metadata or announced.unchanged != encode_json(
            [*(columns[name] for name in announced.same), metadata]
        ):
            return None
        typed = [columns[name] for name in announced.typed]
        if tuple(map(type, chain.from_iterable(typed))) != announced.types or not all(
            math.isfinite(v) for name in announced.floats for v in columns[name]
        ):
            return None
        try:
            frame = announced.format.pack(
                COMPACT_MAGIC, len(indices), *rewards, *done, *chain.from_iterable(typed)
            )
        except struct.error:  # an int past 64 bits
            return None
        if not announced.raw:
            return frame
        parts = [frame]
        for name in announced.raw:
            data = np.ascontiguousarray(arrays[name]).tobytes()
            parts.append(data + b"\0" * (-len(data) % ALIGN))
        return b"".join(parts)


__all__ = [
    "ALIGN",
    "COMPACT",
    "COMPACT_MAGIC",
    "RAW",
    "REWARD_AT",
    "SAME",
    "SESSION_COUNT",
    "SHM",
    "TYPED_DTYPES",
    "CompactWriter",
    "Result",
    "done_at",
    "is_compact_frame",
    "padded",
]
