"""The chess server's options and their checks (no python-chess import, so the CLI can
list them without the ``chess`` extra).

Example:
    >>> check_chess_options("material", "error", "black")
    >>> check_chess_options("stockfish", "error", "black")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    openenv_gym.errors.EnvConfigError: expected opponent to be one of 'random', ...
"""

from __future__ import annotations

from typing import Final

from openenv_gym.errors import EnvConfigError

OPPONENTS: Final = ("random", "material", "uci")
ILLEGAL_MOVE_POLICIES: Final = ("penalty", "loss", "error")
AGENT_COLORS: Final = ("white", "black", "random")
DEFAULT_ILLEGAL_MOVE: Final = "penalty"
ILLEGAL_MOVE_PENALTY: Final = -0.1
DEFAULT_MAX_MOVES: Final = 500


def check_chess_options(opponent: str, illegal_move: str, agent_color: str) -> None:
    """Validate the enum options.

    Raises:
        EnvConfigError: An option is not one of its values.
    """
    for name, value, allowed in (
        ("opponent", opponent, OPPONENTS),
        ("illegal_move", illegal_move, ILLEGAL_MOVE_POLICIES),
        ("agent_color", agent_color, AGENT_COLORS),
    ):
        if value not in allowed:
            raise EnvConfigError(
                f"expected {name} to be one of {', '.join(map(repr, allowed))}, got {value!r}"
            )


__all__ = [
    "AGENT_COLORS",
    "DEFAULT_ILLEGAL_MOVE",
    "DEFAULT_MAX_MOVES",
    "ILLEGAL_MOVE_PENALTY",
    "ILLEGAL_MOVE_POLICIES",
    "OPPONENTS",
    "check_chess_options",
]
