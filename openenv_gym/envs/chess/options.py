"""The chess server's options, declared once (see :mod:`openenv_gym.envs.options`), and their
checks (no python-chess import, so the CLI can list them without the ``chess`` extra).

Example:
    >>> CHESS_OPTIONS.to_argv({"opponent": "material", "max_moves": 200})
    ['--opponent', 'material', '--max-moves', '200']
    >>> check_chess_options("material", "error", "black")
    >>> check_chess_options("stockfish", "error", "black")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    openenv_gym.errors.EnvConfigError: expected opponent to be one of 'random', ...
"""

from __future__ import annotations

from typing import Final

from openenv_gym.argument_types import int_argument
from openenv_gym.envs.options import ServerOption, ServerOptions
from openenv_gym.errors import EnvConfigError

#: ``"self"``: no built-in opponent, the client moves for both colours (self-play).
SELF_PLAY: Final = "self"
OPPONENTS: Final = ("random", "material", "uci", SELF_PLAY)
ILLEGAL_MOVE_POLICIES: Final = ("penalty", "loss", "error")
AGENT_COLORS: Final = ("white", "black", "random")
DEFAULT_ILLEGAL_MOVE: Final = "penalty"
ILLEGAL_MOVE_PENALTY: Final = -0.1
DEFAULT_MAX_MOVES: Final = 500
#: Who needs python-chess, in the error when it is missing.
CHESS_PURPOSE: Final = "chess (openenv-gym serve chess, openenv/Chess-v0)"
DEFAULT_OPPONENT: Final = "random"
DEFAULT_AGENT_COLOR: Final = "white"

_half_moves = int_argument("a number of half-moves", minimum=1, bound="at least 1 half-move")

#: The chess server's options, in the order of :class:`ChessEnvironment`'s arguments.
CHESS_OPTIONS: Final = ServerOptions(
    ServerOption(
        "opponent",
        DEFAULT_OPPONENT,
        "random, material (a 2-ply material search), uci (an engine on PATH) or self (the "
        "client moves for both colours: self-play)",
        choices=OPPONENTS,
    ),
    ServerOption(
        "illegal_move",
        DEFAULT_ILLEGAL_MOVE,
        f"penalty: {ILLEGAL_MOVE_PENALTY} and no move (the official behaviour); loss: forfeit "
        "with -1; error: a VALIDATION_ERROR reply",
        choices=ILLEGAL_MOVE_POLICIES,
    ),
    ServerOption("agent_color", DEFAULT_AGENT_COLOR, "the agent's color", choices=AGENT_COLORS),
    ServerOption(
        "max_moves",
        DEFAULT_MAX_MOVES,
        "half-moves before a draw is declared",
        type=_half_moves,
        metavar="N",
    ),
    ServerOption("uci_engine", None, "UCI engine for --opponent uci", metavar="PATH"),
)


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
    "CHESS_OPTIONS",
    "CHESS_PURPOSE",
    "DEFAULT_AGENT_COLOR",
    "DEFAULT_ILLEGAL_MOVE",
    "DEFAULT_MAX_MOVES",
    "DEFAULT_OPPONENT",
    "ILLEGAL_MOVE_PENALTY",
    "ILLEGAL_MOVE_POLICIES",
    "OPPONENTS",
    "SELF_PLAY",
    "check_chess_options",
]
