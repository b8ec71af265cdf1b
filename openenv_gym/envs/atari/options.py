"""The Atari server's options, declared once (see :mod:`openenv_gym.envs.options`).

``gym.make("openenv/Atari-v0", **options)``, ``openenv-gym serve atari --flags``,
:func:`~openenv_gym.envs.atari.server.atari_server` and
:class:`~openenv_gym.envs.atari.environment.AtariEnvironment` all take these names; the
defaults follow the ``ALE/<Game>-v5`` ids. Importing this module needs no ``ale-py``.

Example:
    >>> ATARI_OPTIONS.to_argv({"game": "breakout", "frameskip": 4, "full_action_space": True})
    ['--game', 'breakout', '--frameskip', '4', '--full-action-space']
    >>> ATARI_OPTIONS.names[:3]
    ('game', 'obs_type', 'frameskip')
"""

from __future__ import annotations

from typing import Final

from openenv_gym.argument_types import int_argument, probability
from openenv_gym.envs.options import ServerOption, ServerOptions

#: The observation types of the Atari server (``obs_type=``).
OBS_TYPES: Final = ("rgb", "grayscale", "ram")
DEFAULT_GAME: Final = "pong"
DEFAULT_OBS_TYPE: Final = "rgb"
DEFAULT_FRAMESKIP: Final = 4
DEFAULT_REPEAT_ACTION_PROBABILITY: Final = 0.25
DEFAULT_MAX_FRAMES: Final = 108_000

_frames = int_argument("a number of frames", minimum=1, bound="at least 1 frame")
_integer = int_argument("an integer", minimum=-(2**31), bound="a 32-bit integer")

#: The Atari server's options, in the order of :class:`AtariEnvironment`'s arguments.
ATARI_OPTIONS: Final = ServerOptions(
    ServerOption("game", DEFAULT_GAME, "ALE game, e.g. pong, breakout, space_invaders"),
    ServerOption("obs_type", DEFAULT_OBS_TYPE, "observation type", choices=OBS_TYPES),
    ServerOption("frameskip", DEFAULT_FRAMESKIP, "emulator frames per step", type=_frames),
    ServerOption(
        "repeat_action_probability",
        DEFAULT_REPEAT_ACTION_PROBABILITY,
        "sticky-action probability",
        type=probability,
        metavar="P",
    ),
    ServerOption("full_action_space", False, "all 18 actions, not the game's minimal set"),
    ServerOption("mode", None, "game mode", type=_integer, metavar="N"),
    ServerOption("difficulty", None, "game difficulty", type=_integer, metavar="N"),
    ServerOption(
        "max_num_frames_per_episode",
        DEFAULT_MAX_FRAMES,
        "truncate episodes after N frames",
        type=_frames,
        flag="--max-frames",
        metavar="N",
    ),
)

__all__ = [
    "ATARI_OPTIONS",
    "DEFAULT_FRAMESKIP",
    "DEFAULT_GAME",
    "DEFAULT_MAX_FRAMES",
    "DEFAULT_OBS_TYPE",
    "DEFAULT_REPEAT_ACTION_PROBABILITY",
]
