"""Each server's options are declared once: flags, command line and mapping agree."""

from __future__ import annotations

import pytest

from openenv_gym.cli.program import build_parser
from openenv_gym.envs.atari.options import ATARI_OPTIONS
from openenv_gym.envs.chess.options import CHESS_OPTIONS
from openenv_gym.envs.registry import SERVER_ENVS

NON_DEFAULT = {
    "atari": {
        "game": "breakout",
        "obs_type": "ram",
        "frameskip": 2,
        "repeat_action_probability": 0.0,
        "full_action_space": True,
        "mode": 0,
        "difficulty": 1,
        "max_num_frames_per_episode": 500,
        "frame_skip": 3,
        "gray_scale": False,
        "img_height": 64,
        "img_width": 48,
        "stack_num": 2,
        "noop_max": 0,
        "use_fire_reset": False,
        "episodic_life": True,
        "reward_clip": True,
        "use_inter_area_resize": False,
        "zero_discount_on_life_loss": True,
    },
    "chess": {
        "opponent": "material",
        "illegal_move": "error",
        "agent_color": "black",
        "max_moves": 40,
        "uci_engine": "/usr/bin/stockfish",
    },
    "gymnasium": {"env_id": "ale_py:ALE/Pong-v5", "make_kwargs": {"max_episode_steps": 7}},
}


@pytest.mark.parametrize("name", sorted(SERVER_ENVS))
def test_a_mapping_survives_the_command_line(name: str) -> None:
    target = SERVER_ENVS[name]
    options = NON_DEFAULT[name]
    assert set(options) == set(target.options.names)
    args = build_parser().parse_args(["serve", name, *target.options.to_argv(options)])
    assert target.options_of(args) == options


@pytest.mark.parametrize("name", ["atari", "chess"])
def test_defaults_survive_the_command_line(name: str) -> None:
    target = SERVER_ENVS[name]
    defaults = target.options.defaults()
    args = build_parser().parse_args(["serve", name, *target.options.to_argv(defaults)])
    assert target.options_of(args) == defaults
    assert target.options_of(build_parser().parse_args(["serve", name])) == defaults


def test_split_separates_server_options_from_env_options() -> None:
    options, rest = ATARI_OPTIONS.split({"game": "breakout", "encoding": "json"})
    assert options == {**ATARI_OPTIONS.defaults(), "game": "breakout"}
    assert rest == {"encoding": "json"}


def test_unknown_option_names_what_is_accepted() -> None:
    with pytest.raises(TypeError, match=r"unknown server option\(s\) 'depth'; expected some of"):
        CHESS_OPTIONS.to_argv({"depth": 3})
