"""A chess move as a free string field: the space of every UCI move.

A server whose action is ONE required string field with no enum (``{"action": "e2e4"}``,
``{"move": ...}``) and whose observation lists the legal moves in UCI (a field named like
``legal_moves``) beside a FEN position (a ``fen`` field, at the top level or one object
down, e.g. ``board_state.fen``) plays chess. The field then maps to the values of
:data:`UCI_MOVES` (an enum, so ``Discrete(4208)`` with a legal-move mask from
``legal_moves``): every from-square to every other square (4,032, which holds every move of
every piece, castling as the king's two-square move or, in Chess960, king-takes-rook),
plus the 176 promotions (a pawn from the seventh rank to the eighth, or the second to the
first, straight or one file aside, to a knight, bishop, rook or queen). The space is never
smaller than the game; most of its values are illegal in a given position, which the
mask says.

The match needs all three facts from the observation (a list of UCI strings, a valid
FEN): a string field next to a list of names is not enough.

Example:
    >>> len(UCI_MOVES), UCI_MOVES[:2], "e7e8q" in UCI_MOVE_SET
    (4208, ('a1b1', 'a1c1'), True)
    >>> sample = {"board_state": {"fen": "8/8/8/8/8/8/8/K6k w - - 0 1"},
    ...           "legal_moves": ["a1a2", "a1b1", "a1b2"]}
    >>> action = {"properties": {"action": {"type": "string"}}, "required": ["action"]}
    >>> uci_move_field(action, sample)
    'action'
    >>> uci_move_field(action, {"legal_moves": ["left", "right"]}) is None
    True
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from openenv_gym.spaces.inference import is_legal_actions_name

_FILES: Final = "abcdefgh"
_SQUARES: Final = tuple(f + r for r in "12345678" for f in _FILES)


def _promotions() -> tuple[str, ...]:
    moves = []
    for start, end in (("7", "8"), ("2", "1")):
        for index, file in enumerate(_FILES):
            for target in _FILES[max(index - 1, 0) : index + 2]:
                moves += [f"{file}{start}{target}{end}{piece}" for piece in "nbrq"]
    return tuple(moves)


#: Every UCI move: each square to each other square, then the 176 promotions.
UCI_MOVES: Final = tuple(a + b for a in _SQUARES for b in _SQUARES if a != b) + _promotions()
UCI_MOVE_SET: Final = frozenset(UCI_MOVES)
#: A FEN's placement and side to move (the rest is not checked).
_FEN: Final = re.compile(r"^([pnbrqkPNBRQK1-8]{1,8}/){7}[pnbrqkPNBRQK1-8]{1,8} [wb](\s|$)")
FEN_NAME: Final = "fen"
#: The JSON Schema keyword naming a string field's vocabulary (``check`` and logs say it).
X_VOCABULARY: Final = "x-vocabulary"
UCI_VOCABULARY: Final = "UCI chess moves"


def is_fen(value: Any) -> bool:
    """Whether ``value`` is a FEN position string.

    Example:
        >>> is_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"), is_fen("8/8")
        (True, False)
    """
    return isinstance(value, str) and _FEN.match(value) is not None


def _has_fen(sample: Mapping[str, Any]) -> bool:
    """A ``fen`` field at the top level or one object down."""
    if is_fen(sample.get(FEN_NAME)):
        return True
    return any(isinstance(v, Mapping) and is_fen(v.get(FEN_NAME)) for v in sample.values())


def _lists_uci_moves(sample: Mapping[str, Any]) -> bool:
    """A legal-moves field listing UCI moves only (an empty list says nothing)."""
    for name, value in sample.items():
        if is_legal_actions_name(name) and isinstance(value, list) and value:
            return all(isinstance(m, str) and m in UCI_MOVE_SET for m in value)
    return False


def lone_string_field(action_schema: Mapping[str, Any]) -> str | None:
    """The action's one field when it is a required free string (no enum, const or
    format), else ``None``.

    Example:
        >>> lone_string_field({"properties": {"move": {"type": "string"}}, "required": ["move"]})
        'move'
        >>> lone_string_field({"properties": {"n": {"type": "integer"}}, "required": ["n"]})
    """
    properties = action_schema.get("properties")
    if not isinstance(properties, Mapping) or len(properties) != 1:
        return None
    ((name, field),) = properties.items()
    free = isinstance(field, Mapping) and field.get("type") == "string"
    if not free or {"enum", "const", "format"} & set(field):
        return None
    return name if name in (action_schema.get("required") or ()) else None


def uci_move_field(action_schema: Mapping[str, Any], sample: Mapping[str, Any]) -> str | None:
    """The action field that is a chess move (see the module docstring), else ``None``."""
    name = lone_string_field(action_schema)
    if name is None or not (_lists_uci_moves(sample) and _has_fen(sample)):
        return None
    return name


def as_uci_move_schema(action_schema: Mapping[str, Any], name: str) -> dict[str, Any]:
    """``action_schema`` with field ``name`` as the enum of :data:`UCI_MOVES`.

    Example:
        >>> schema = as_uci_move_schema({"properties": {"move": {"type": "string"}}}, "move")
        >>> len(schema["properties"]["move"]["enum"]), schema["properties"]["move"][X_VOCABULARY]
        (4208, 'UCI chess moves')
    """
    field = {**action_schema["properties"][name], "enum": list(UCI_MOVES)}
    field[X_VOCABULARY] = UCI_VOCABULARY
    return {**action_schema, "properties": {**action_schema["properties"], name: field}}


def may_be_chess(schema: Mapping[str, Any]) -> bool:
    """Whether a sample observation could make the action a chess move: the action is a
    lone free string and the observation is untyped or has a legal-moves field."""
    if lone_string_field(schema["action"]) is None:
        return False
    observation = schema["observation"]
    names = observation.get("properties") or {}
    return not names or any(is_legal_actions_name(n) for n in names)


def with_uci_moves(schema: Mapping[str, Any], sample: Mapping[str, Any]) -> Mapping[str, Any]:
    """``schema`` with its action field as :data:`UCI_MOVES` when ``sample`` shows chess
    (:func:`uci_move_field`), else ``schema`` unchanged."""
    name = uci_move_field(schema["action"], sample)
    if name is None:
        return schema
    return {**schema, "action": as_uci_move_schema(schema["action"], name)}


__all__ = [
    "UCI_MOVES",
    "UCI_MOVE_SET",
    "X_VOCABULARY",
    "as_uci_move_schema",
    "is_fen",
    "lone_string_field",
    "may_be_chess",
    "uci_move_field",
    "with_uci_moves",
]
