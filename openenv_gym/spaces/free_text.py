"""Free text: a ``Text`` observation that holds any character a server sends.

A server's string (a chat reply, a tool's output, upper-cased text with combining marks) may
hold any Unicode character, so an observation string field maps to :class:`FreeText`: its
members are the strings of ``min_length .. max_length`` characters, whatever they are. Its
charset is only what :meth:`~gymnasium.spaces.Text.sample` draws from.

Under Gymnasium's ``AsyncVectorEnv`` with shared memory (its default) every ``Text``,
:class:`FreeText` included, travels in the layout of :mod:`openenv_gym.spaces.text_memory`
(code points, so any character survives).

Example:
    >>> space = FreeText(10, charset="abc")
    >>> space.contains("ÉCOLE\u0301"), space.contains("x" * 11), space.contains(3)
    (True, False, False)
    >>> space
    FreeText(0, 10)
"""

from __future__ import annotations

from typing import Any

from gymnasium import spaces

import openenv_gym.spaces.text_memory  # noqa: F401  (every Text's shared-memory layout)


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


__all__ = ["FreeText"]
