"""The characters of a string field's ``Text`` space: :data:`DEFAULT_TEXT_CHARSET`, and
:class:`DefaultCharsetText`, the ``Text`` over it whose repr stays one line.

A schema's string fields (:mod:`openenv_gym.spaces.field_rules`) and the tool replies of an
MCP env (:mod:`openenv_gym.spaces.tools`) take it; :mod:`openenv_gym.spaces.json_text`
builds on it.

Example:
    >>> "é" in DEFAULT_TEXT_CHARSET, "♞" in DEFAULT_TEXT_CHARSET
    (True, True)
"""

from __future__ import annotations

import string
import unicodedata
from typing import Any, Final

from gymnasium import spaces

_CHARSET_BLOCKS: Final = (
    (0x00A0, 0x024F),  # Latin-1 Supplement, Latin Extended-A and -B
    (0x0370, 0x03FF),  # Greek and Coptic
    (0x0400, 0x04FF),  # Cyrillic
    (0x2000, 0x206F),  # General Punctuation
    (0x20A0, 0x20CF),  # Currency Symbols
    (0x2190, 0x21FF),  # Arrows
    (0x2500, 0x25FF),  # Box Drawing, Block Elements, Geometric Shapes
    (0x2600, 0x26FF),  # Miscellaneous Symbols (chess pieces, card suits, ...)
)


def _default_charset() -> str:
    extra = (
        chr(code)
        for low, high in _CHARSET_BLOCKS
        for code in range(low, high + 1)
        if unicodedata.category(chr(code)) not in ("Cc", "Cn", "Cs")
    )
    return string.printable + "".join(extra)


#: The characters of a string field's Text space: ``string.printable`` (ASCII letters, digits,
#: punctuation, space, ``\t\n\r\x0b\x0c``) plus the assigned non-control characters of
#: Latin-1 Supplement, Latin Extended-A/B, Greek, Cyrillic, General Punctuation, Currency
#: Symbols, Arrows, Box Drawing/Block Elements/Geometric Shapes and Miscellaneous Symbols.
DEFAULT_TEXT_CHARSET: Final[str] = _default_charset()


class DefaultCharsetText(spaces.Text):
    """``Text`` over :data:`DEFAULT_TEXT_CHARSET` whose repr does not list ~1800 characters.

    It equals a plain ``Text`` with the same lengths and charset.

    Example:
        >>> DefaultCharsetText(90)
        Text(0, 90, charset=DEFAULT_TEXT_CHARSET)
    """

    def __init__(self, max_length: int, *, min_length: int = 0, seed: Any = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=DEFAULT_TEXT_CHARSET, seed=seed)

    def __repr__(self) -> str:
        return f"Text({self.min_length}, {self.max_length}, charset=DEFAULT_TEXT_CHARSET)"


__all__ = ["DEFAULT_TEXT_CHARSET", "DefaultCharsetText"]
