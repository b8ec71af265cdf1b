"""Short, readable descriptions of spaces and values for error messages.

``repr`` of a :class:`gymnasium.spaces.Text` prints its whole character set, and the repr of
a long observation list runs to megabytes; error messages use these helpers instead.

Example:
    >>> from gymnasium import spaces
    >>> describe_space(spaces.Dict([("fen", spaces.Text(90)), ("turn", spaces.Discrete(2))]))
    "Dict('fen': Text(1..90 chars), 'turn': Discrete(2))"
    >>> describe_value(list(range(1000)))
    '[0, 1, 2, 3, 4, 5, ...] (list of 1000 items)'
"""

from __future__ import annotations

import reprlib
from typing import Any

import numpy as np
from gymnasium import spaces

_REPR = reprlib.Repr()
_REPR.maxstring = 80
_REPR.maxother = 120
_REPR.maxlist = 6
_REPR.maxtuple = 6
_REPR.maxdict = 6
_REPR.maxlevel = 3


def describe_space(space: spaces.Space[Any]) -> str:
    """A one-line description of ``space`` (Text without its character set)."""
    if isinstance(space, spaces.Text):
        return f"Text({space.min_length}..{space.max_length} chars)"
    if isinstance(space, spaces.Dict):
        inner = ", ".join(f"{key!r}: {describe_space(sub)}" for key, sub in space.spaces.items())
        return f"Dict({inner})"
    if isinstance(space, spaces.Tuple):
        return f"Tuple({', '.join(describe_space(sub) for sub in space.spaces)})"
    return repr(space)


def describe_value(value: Any) -> str:
    """A shortened repr of ``value`` with its type and size when that helps."""
    if isinstance(value, np.ndarray):
        head = value.ravel()[: _REPR.maxlist].tolist()
        more = ", ..." if value.size > len(head) else ""
        return f"array({str(head)[1:-1]}{more}; shape={value.shape}, dtype={value.dtype})"
    text = _REPR.repr(value)
    if isinstance(value, list | tuple) and len(value) > _REPR.maxlist:
        text += f" ({type(value).__name__} of {len(value)} items)"
    elif isinstance(value, np.generic):
        text += f" ({type(value).__name__})"
    return text
