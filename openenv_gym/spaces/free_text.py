"""Free text: a ``Text`` observation that holds any character a server sends.

A server's string (a chat reply, a tool's output, upper-cased text with combining marks) may
hold any Unicode character, so an observation string field maps to :class:`FreeText`: its
members are the strings of ``min_length .. max_length`` characters, whatever they are. Its
charset is only what :meth:`~gymnasium.spaces.Text.sample` draws from.

Gymnasium's ``AsyncVectorEnv`` (shared memory, its default) stores a ``Text`` as indices into
its charset, which loses every other character (and reads an empty slot back as a string
of the first charset character). :class:`FreeText` registers its own shared-memory layout
with Gymnasium's public ``create_shared_memory`` / ``read_from_shared_memory`` /
``write_to_shared_memory``: one ``int32`` per character (code point + 1; ``0`` pads), so
``gym.make_vec(..., vectorization_mode="async")`` returns the strings the servers sent.

Example:
    >>> space = FreeText(10, charset="abc")
    >>> space.contains("ÉCOLE\u0301"), space.contains("x" * 11), space.contains(3)
    (True, False, False)
    >>> space
    FreeText(0, 10)
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Sequence
from typing import Any, overload

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import (
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)


class FreeText(spaces.Text):
    """``Text`` whose members are any strings of ``min_length .. max_length`` characters."""

    def __init__(
        self,
        max_length: int,
        *,
        min_length: int = 0,
        charset: str | frozenset[str] = "",
        seed: Any = None,
    ) -> None:
        kwargs: dict[str, Any] = {"charset": charset} if charset else {}
        super().__init__(max_length, min_length=min_length, seed=seed, **kwargs)

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a string of an allowed length (any characters)."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, FreeText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )

    def __hash__(self) -> int:
        return hash(("FreeText", self.min_length, self.max_length))

    def __repr__(self) -> str:
        return f"FreeText({self.min_length}, {self.max_length})"


@create_shared_memory.register(FreeText)
def _create_free_text_memory(space: FreeText, n: int = 1, ctx: Any = mp) -> Any:
    return ctx.Array(np.dtype(np.int32).char, n * space.max_length)


class LiveTexts(Sequence[str]):
    """The strings of a :class:`FreeText` shared-memory buffer, read when indexed.

    ``AsyncVectorEnv`` reads its shared memory once and hands out (deep copies of) what
    it read after every step: a tuple of strings would never change, so this view reads
    the buffer on access and deep-copies to a tuple of the current strings.
    """

    def __init__(self, rows: np.ndarray) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(len(self))[index])
        row = self._rows[index]
        return "".join(chr(int(c) - 1) for c in row[row > 0])

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))


@read_from_shared_memory.register(FreeText)
def _read_free_text_memory(space: FreeText, shared_memory: Any, n: int = 1) -> LiveTexts:
    rows = np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape((n, space.max_length))
    return LiveTexts(rows)


@write_to_shared_memory.register(FreeText)
def _write_free_text_memory(space: FreeText, index: int, value: str, shared_memory: Any) -> None:
    size = space.max_length
    row = np.zeros(size, dtype=np.int32)
    codes = np.frombuffer(value.encode("utf-32-le"), dtype=np.uint32).astype(np.int32) + 1
    row[: len(codes)] = codes
    destination = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)
    np.copyto(destination[index * size : (index + 1) * size], row)


__all__ = ["FreeText", "LiveTexts"]
