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

import argparse
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
_positive = int_argument("an integer", minimum=1, bound="at least 1")
_count = int_argument("an integer", minimum=0, bound="at least 0")
_TRUE: Final = ("true", "1", "yes", "on")
_FALSE: Final = ("false", "0", "no", "off")


def _truth(text: str) -> bool:
    """``true``/``false`` (also ``1``/``0``, ``yes``/``no``, ``on``/``off``) -> bool."""
    word = text.strip().lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _preprocessing(name: str, help: str, kind: str) -> ServerOption:
    """An envpool preprocessing option: unset (``None``) unless given."""
    converter = {"bool": _truth, "positive": _positive, "count": _count}[kind]
    return ServerOption(
        name,
        None,
        f"{help} (preprocessing)",
        type=converter,
        metavar=kind.upper(),
    )


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
    # envpool's preprocessing (openenv_gym.envs.atari.preprocessing): any one given turns it
    # on, with envpool's defaults for the others; none given: raw ALE frames.
    _preprocessing(
        "frame_skip", "frames per step, max-pooled over the last two [--frameskip]", "positive"
    ),
    _preprocessing("gray_scale", "grayscale frames [true]", "bool"),
    _preprocessing("img_height", "frame height [84]", "positive"),
    _preprocessing("img_width", "frame width [84]", "positive"),
    _preprocessing("stack_num", "frames stacked, channel first [4]", "positive"),
    _preprocessing("noop_max", "at most this many no-ops on reset [30]", "count"),
    _preprocessing("use_fire_reset", "FIRE on reset in games that need it [true]", "bool"),
    _preprocessing("episodic_life", "life loss ends the episode [false]", "bool"),
    _preprocessing("reward_clip", "rewards clipped to their sign [false]", "bool"),
    _preprocessing("use_inter_area_resize", "INTER_AREA resize [true]", "bool"),
    _preprocessing(
        "zero_discount_on_life_loss", "dm_env discount flag, no effect in Gymnasium [false]", "bool"
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
