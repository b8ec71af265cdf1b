"""Every ``Text`` space in Gymnasium's shared memory, its strings read when they are used.

Gymnasium's ``AsyncVectorEnv`` (``shared_memory=True``, its default) reads its observation
buffer once, when it is made, and hands out that result after every ``reset`` and ``step``.
Its own ``Text`` layout reads the buffer into a tuple of strings at that moment, so every
text observation (a :class:`~openenv_gym.spaces.json_text.JsonText`, a plain ``Text``)
arrived as the empty buffer read back: ``max_length`` copies of the charset's first
character. It also stored characters as indices into the charset, whose order depends on
the process's string hashing.

This module registers one layout for ``gymnasium.spaces.Text`` and so for every subclass
(:class:`~openenv_gym.spaces.free_text.FreeText`,
:class:`~openenv_gym.spaces.charset.DefaultCharsetText`, ``JsonText``), with Gymnasium's public
``create_shared_memory`` / ``read_from_shared_memory`` / ``write_to_shared_memory``: one
``int32`` per character (code point + 1; ``0`` pads), read through :class:`LiveTexts`, a view
that decodes the buffer when indexed. Any string of a ``Text``'s lengths survives,
whatever its characters.

Example:
    >>> from gymnasium import spaces
    >>> from gymnasium.vector.utils import (
    ...     create_shared_memory, read_from_shared_memory, write_to_shared_memory)
    >>> space = spaces.Text(8, charset="{}:ab\\"")
    >>> memory = create_shared_memory(space, n=2)
    >>> texts = read_from_shared_memory(space, memory, n=2)  # read once, like AsyncVectorEnv
    >>> write_to_shared_memory(space, 1, '{"a":"b"}'[:8], memory)
    >>> texts
    ('', '{"a":"b"')
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


@create_shared_memory.register(spaces.Text)
def _create_text_memory(space: spaces.Text, n: int = 1, ctx: Any = mp) -> Any:
    return ctx.Array(np.dtype(np.int32).char, n * space.max_length)


class LiveTexts(Sequence[str]):
    """The strings of a ``Text`` shared-memory buffer, read when indexed.

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


@read_from_shared_memory.register(spaces.Text)
def _read_text_memory(space: spaces.Text, shared_memory: Any, n: int = 1) -> LiveTexts:
    rows = np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape((n, space.max_length))
    return LiveTexts(rows)


@write_to_shared_memory.register(spaces.Text)
def _write_text_memory(space: spaces.Text, index: int, value: str, shared_memory: Any) -> None:
    size = space.max_length
    row = np.zeros(size, dtype=np.int32)
    codes = np.frombuffer(value.encode("utf-32-le"), dtype=np.uint32).astype(np.int32) + 1
    row[: len(codes)] = codes
    destination = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)
    np.copyto(destination[index * size : (index + 1) * size], row)


__all__ = ["LiveTexts"]
