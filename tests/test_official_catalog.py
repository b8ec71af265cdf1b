"""The official catalog with no keyword: profiles matched on the server's identity.

Servers: tests/official_catalog.py (official ``openenv`` package, models field for field the
catalog's). A profile gives the whole action set of the game (never the legal actions of one
position); another name, another schema or another game falls back to the refusal that
names ``action_field_spaces``.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import SpaceMappingError
from openenv_gym.spaces.catalog import PROFILES, UNSIZED, match_profile, schema_fingerprint
from tests.official_catalog import (
    SPIEL_ACTIONS,
    Connect4Action,
    Connect4Observation,
    MazeAction,
    MazeObservation,
    OpenSpielAction,
    OpenSpielObservation,
    SnakeAction,
    SnakeObservation,
    SumoAction,
    SumoObservation,
    WiderMazeObservation,
    serve_catalog,
)


def _make(url: str, **kwargs: Any) -> gym.Env[Any, Any]:
    return gym.make("openenv/Remote-v0", base_url=url, **kwargs)


def _schema(action: Any, observation: Any) -> dict[str, Any]:
    return {"action": action.model_json_schema(), "observation": observation.model_json_schema()}


@pytest.mark.parametrize(
    ("env", "models"),
    [
        ("maze_env", (MazeAction, MazeObservation)),
        ("connect4_env", (Connect4Action, Connect4Observation)),
        ("openspiel_env", (OpenSpielAction, OpenSpielObservation)),
        ("snake_env", (SnakeAction, SnakeObservation)),
        ("sumo_rl_env", (SumoAction, SumoObservation)),
    ],
)
def test_each_profile_holds_the_fingerprint_of_the_official_models(
    env: str, models: tuple[Any, Any]
) -> None:
    fingerprint = schema_fingerprint(_schema(*models))
    assert {p.fingerprint for p in (*PROFILES, *UNSIZED) if p.env == env} == {fingerprint}


def test_no_profile_is_smaller_than_its_game() -> None:
    sizes = {(p.env, p.game): p.actions for p in PROFILES if p.count_key is None}
    assert sizes[("connect4_env", None)] == 7
    assert sizes[("maze_env", None)] == 4
    for game, actions in SPIEL_ACTIONS.items():
        if ("openspiel_env", game) in sizes:
            assert sizes[("openspiel_env", game)] == actions
    for profile in PROFILES:
        assert "envs/" in profile.facts  # each cites the env's source


def test_matching_needs_name_fingerprint_and_game() -> None:
    schema = _schema(OpenSpielAction, OpenSpielObservation)
    name = {"name": "OpenSpielEnvironment"}
    state = {"game_name": "tic_tac_toe", "game_params": {}}
    profile = match_profile(name, schema, state)
    assert profile is not None
    assert (profile.field, profile.actions) == ("action_id", 9)
    assert match_profile({"name": "SpielEnvironment"}, schema, state) is None
    assert match_profile(None, schema, state) is None
    assert match_profile(name, schema, {"game_name": "go"}) is None
    assert match_profile(name, schema, {**state, "game_params": {"rows": 4}}) is None
    assert match_profile(name, schema, None) is None
    wider = _schema(MazeAction, WiderMazeObservation)
    assert match_profile({"name": "MazeEnvironment"}, wider, None) is None


def test_maze_needs_no_keyword_and_passes_check_env_on_its_one_session_server() -> None:
    with serve_catalog("maze_env") as url:
        env = _make(url)
        try:
            assert env.action_space == spaces.Discrete(4)
            inferred = env.unwrapped.inferred_spaces[0]
            assert inferred.path == "action"
            assert inferred.source.startswith("the catalog profile of maze_env")
            assert "envs/maze_env/server/maze.py" in inferred.source
            assert env.unwrapped.space_sources.action == "GET /schema"
            _, info = env.reset(seed=0)
            assert info["legal_actions"] == [1, 3]  # down, right from the corner
            np.testing.assert_array_equal(env.unwrapped.action_masks(), [0, 1, 0, 1])
            obs, *_ = env.step(3)
            np.testing.assert_array_equal(obs["current_position"], [1, 0])
        finally:
            env.close()
        env = _make(url)
        try:
            check_env(env.unwrapped)
        finally:
            env.close()


def test_connect4_gets_all_seven_columns() -> None:
    with serve_catalog("connect4_env") as url:
        env = _make(url)
        try:
            assert env.action_space == spaces.Discrete(7)
            assert "COLUMNS = 7" in env.unwrapped.inferred_spaces[0].source
            env.reset(seed=0)
            for _ in range(6):
                _, _, terminated, _, info = env.step(6)
            assert not terminated
            assert info["legal_actions"] == [0, 1, 2, 3, 4, 5]
            np.testing.assert_array_equal(env.unwrapped.action_masks(), [1] * 6 + [0])
        finally:
            env.close()


@pytest.mark.parametrize("game", ["tic_tac_toe", "catch"])
def test_openspiel_games_get_the_whole_action_set_not_the_sample(game: str) -> None:
    with serve_catalog("openspiel_env", game=game) as url:
        env = _make(url)
        try:
            actions = SPIEL_ACTIONS[game]
            assert env.action_space == spaces.Discrete(actions)
            _, info = env.reset(seed=0)
            assert len(info["legal_actions"]) == actions - 1  # one reset shows fewer
            assert f"({game})" in env.unwrapped.inferred_spaces[0].source
            env.step(0)
        finally:
            env.close()


@pytest.mark.slow
@pytest.mark.parametrize("game", ["kuhn_poker", "cliff_walking", "2048", "blackjack"])
def test_every_profiled_openspiel_game_needs_no_keyword(game: str) -> None:
    with serve_catalog("openspiel_env", game=game) as url:
        env = _make(url)
        try:
            assert env.action_space == spaces.Discrete(SPIEL_ACTIONS[game])
        finally:
            env.close()


@pytest.mark.parametrize(
    "variant",
    [
        {"env": "maze_env", "metadata_name": "MyMazeEnvironment"},
        {"env": "maze_env", "observation": WiderMazeObservation},
        {"env": "openspiel_env", "game": "leduc_poker"},
        {"env": "openspiel_env", "game": "tic_tac_toe", "game_params": {"rows": 3}},
    ],
    ids=["renamed", "changed-schema", "unprofiled-game", "game-params"],
)
def test_any_mismatch_falls_back_to_the_refusal(variant: dict[str, Any]) -> None:
    with serve_catalog(**variant) as url, pytest.raises(SpaceMappingError) as info:
        _make(url)
    message = str(info.value)
    assert "action_field_spaces={" in message
    assert "catalog profile" not in message
    # No size presented as fact: a placeholder, or what one reset showed, labelled observed.
    assert message.splitlines()[-1].startswith(("Paste and edit: ", "Paste (observed"))


def test_snake_is_refused_quoting_both_of_its_action_sets() -> None:
    with serve_catalog("snake_env") as url:
        with pytest.raises(SpaceMappingError) as info:
            _make(url)
        lines = str(info.value).splitlines()
        assert lines[-2].startswith("Known facts: the catalog profile of snake_env")
        assert "Discrete(3) for its app as shipped, Discrete(5) for observer='human'" in lines[-2]
        call = lines[-1].removeprefix("Paste and edit: ").replace("Discrete(n)", "Discrete(3)")
        env = eval(call, {"gym": gym, "gymnasium": gymnasium, "numpy": np})
        try:
            assert env.action_space == spaces.Discrete(3)
            env.reset(seed=0)
            env.step(2)
        finally:
            env.close()


@pytest.mark.parametrize("phases", [2, 4])
def test_sumo_takes_the_phase_count_its_code_reports(phases: int) -> None:
    with serve_catalog("sumo_rl_env", phases=phases) as url:
        env = _make(url)
        try:
            assert env.action_space == spaces.Discrete(phases)
            assert "num_green_phases" in env.unwrapped.inferred_spaces[0].source
            env.reset(seed=0)
            obs, reward, *_ = env.step(phases - 1)
            assert obs["observation"][phases - 1] == 1.0
            assert reward == -1.0
        finally:
            env.close()


def test_sumo_without_its_phase_count_is_refused() -> None:
    with (
        serve_catalog("sumo_rl_env", report=False) as url,
        pytest.raises(SpaceMappingError) as info,
    ):
        _make(url)
    assert "action_field_spaces={'phase_id': gymnasium.spaces.Discrete(n)}" in str(info.value)
