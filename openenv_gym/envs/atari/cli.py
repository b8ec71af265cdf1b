"""``openenv-gym serve atari``: the options and the server builder of the Atari target.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_arguments(parser)
    >>> args = parser.parse_args(["--game", "breakout", "--obs-type", "ram"])
    >>> args.game, args.obs_type, args.frameskip, args.repeat_action_probability
    ('breakout', 'ram', 4, 0.25)
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Final

from openenv_gym.commands.argument_types import int_argument, probability
from openenv_gym.envs.atari.environment import (
    DEFAULT_FRAMESKIP,
    DEFAULT_GAME,
    DEFAULT_MAX_FRAMES,
    DEFAULT_REPEAT_ACTION_PROBABILITY,
)
from openenv_gym.envs.atari.models import OBS_TYPES

if TYPE_CHECKING:
    from openenv_gym.server.app import OpenEnvServer

HELP: Final = "serve an Atari 2600 game (ale-py) with the official OpenEnv Atari schema"
_frames = int_argument("a number of frames", minimum=1, bound="at least 1 frame")
DESCRIPTION: Final = (
    "Serve one ALE game over OpenEnv, one emulator per WebSocket session, with the official "
    "OpenEnv Atari schema (official clients work unchanged). Defaults follow ALE/<Game>-v5: "
    "frameskip 4, sticky actions 0.25, minimal action set. Needs ale-py (openenv-gym[atari])."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The Atari target's own options."""
    parser.add_argument(
        "--game",
        default=DEFAULT_GAME,
        help=f"ALE game, e.g. pong, breakout (default: {DEFAULT_GAME})",
    )
    parser.add_argument(
        "--obs-type", choices=OBS_TYPES, default="rgb", help="observation type (default: rgb)"
    )
    parser.add_argument(
        "--frameskip",
        type=_frames,
        default=DEFAULT_FRAMESKIP,
        help=f"emulator frames per step (default: {DEFAULT_FRAMESKIP})",
    )
    parser.add_argument(
        "--repeat-action-probability",
        type=probability,
        default=DEFAULT_REPEAT_ACTION_PROBABILITY,
        metavar="P",
        help=f"sticky-action probability (default: {DEFAULT_REPEAT_ACTION_PROBABILITY})",
    )
    parser.add_argument(
        "--full-action-space", action="store_true", help="all 18 actions, not the minimal set"
    )
    parser.add_argument("--mode", type=int, default=None, help="game mode (default: the game's)")
    parser.add_argument(
        "--difficulty", type=int, default=None, help="game difficulty (default: the game's)"
    )
    parser.add_argument(
        "--max-frames",
        type=_frames,
        default=DEFAULT_MAX_FRAMES,
        metavar="N",
        help=f"truncate episodes after N frames (default: {DEFAULT_MAX_FRAMES})",
    )


def build(args: argparse.Namespace) -> OpenEnvServer:
    """The server for parsed ``serve atari`` arguments."""
    from openenv_gym.cli import server_kwargs
    from openenv_gym.envs.atari.server import atari_server

    return atari_server(
        args.game,
        obs_type=args.obs_type,
        frameskip=args.frameskip,
        repeat_action_probability=args.repeat_action_probability,
        full_action_space=args.full_action_space,
        mode=args.mode,
        difficulty=args.difficulty,
        max_num_frames_per_episode=args.max_frames,
        **server_kwargs(args),
    )


__all__ = ["DESCRIPTION", "HELP", "add_arguments", "build"]
