"""``openenv-gym serve chess``: the options and the server builder of the chess target.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_arguments(parser)
    >>> args = parser.parse_args(["--opponent", "material"])
    >>> args.opponent, args.illegal_move, args.agent_color
    ('material', 'penalty', 'white')
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Final

from openenv_gym.commands.argument_types import int_argument
from openenv_gym.envs.chess.options import (
    AGENT_COLORS,
    DEFAULT_ILLEGAL_MOVE,
    DEFAULT_MAX_MOVES,
    ILLEGAL_MOVE_POLICIES,
    OPPONENTS,
)

if TYPE_CHECKING:
    from openenv_gym.server.app import OpenEnvServer

HELP: Final = "serve chess (python-chess) with the official OpenEnv chess schema"
_half_moves = int_argument("a number of half-moves", minimum=1, bound="at least 1 half-move")
DESCRIPTION: Final = (
    "Serve chess over OpenEnv against a built-in opponent (random, material = 2-ply material "
    "search, uci = an engine on PATH), one game per WebSocket session, with the official "
    "OpenEnv chess schema. Needs python-chess (openenv-gym[chess])."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The chess target's own options."""
    parser.add_argument(
        "--opponent", choices=OPPONENTS, default="random", help="opponent (default: random)"
    )
    parser.add_argument(
        "--illegal-move",
        choices=ILLEGAL_MOVE_POLICIES,
        default=DEFAULT_ILLEGAL_MOVE,
        help="penalty: -0.1 and no move (the official behaviour); loss: forfeit with -1; "
        f"error: a VALIDATION_ERROR reply (default: {DEFAULT_ILLEGAL_MOVE})",
    )
    parser.add_argument(
        "--agent-color", choices=AGENT_COLORS, default="white", help="the agent's color"
    )
    parser.add_argument(
        "--max-moves",
        type=_half_moves,
        default=DEFAULT_MAX_MOVES,
        metavar="N",
        help=f"half-moves before a draw is declared (default: {DEFAULT_MAX_MOVES})",
    )
    parser.add_argument(
        "--uci-engine", default=None, metavar="PATH", help="UCI engine for --opponent uci"
    )


def build(args: argparse.Namespace) -> OpenEnvServer:
    """The server for parsed ``serve chess`` arguments."""
    from openenv_gym.cli import server_kwargs
    from openenv_gym.envs.chess.server import chess_server

    return chess_server(
        opponent=args.opponent,
        illegal_move=args.illegal_move,
        agent_color=args.agent_color,
        max_moves=args.max_moves,
        uci_engine=args.uci_engine,
        **server_kwargs(args),
    )


__all__ = ["DESCRIPTION", "HELP", "add_arguments", "build"]
