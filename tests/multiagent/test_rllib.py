"""RLlib self-play over the example's tic-tac-toe server: RLlib's PettingZoo wrapper with
masked observations, misuse errors, and PPO with one shared, action-masked policy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces

pytest.importorskip("pettingzoo")
pytest.importorskip("ray.rllib")

from openenv_gym.errors import NotYourTurnError, ServerReplyError, SpaceMappingError
from openenv_gym.multiagent.rllib import (
    SHARED_POLICY,
    RLlibSelfPlayEnv,
    _rllib_space,
    selfplay_config,
    shared_policy,
)
from openenv_gym.server import ServerThread
from tests.multiagent.conftest import tictactoe_example


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with ServerThread(tictactoe_example().tictactoe_server(max_sessions=8)) as server:
        yield server.url


@pytest.fixture
def env(url: str) -> Iterator[RLlibSelfPlayEnv]:
    game = RLlibSelfPlayEnv.make("openenv/Remote-v0", base_url=url)
    try:
        yield game
    finally:
        game.close()


def test_masked_observations_and_a_full_game(env: RLlibSelfPlayEnv) -> None:
    space = env.observation_spaces["player_0"]
    assert space["observations"] == spaces.Box(-1.0, 1.0, (9,), np.float32)
    assert space["action_mask"] == spaces.Box(0.0, 1.0, (9,), np.float32)
    observations, _ = env.reset(seed=0)
    assert list(observations) == ["player_0"]
    assert observations["player_0"]["action_mask"].tolist() == [1.0] * 9
    assert observations["player_0"] in space
    moves = {"player_0": [0, 1, 2], "player_1": [3, 4]}  # X takes the top row
    for turn in range(5):
        mover = ("player_0", "player_1")[turn % 2]
        assert list(observations) == [mover]
        observations, rewards, terminateds, truncateds, _ = env.step({mover: moves[mover].pop(0)})
    assert rewards == {"player_1": -1.0, "player_0": 1.0}
    assert terminateds["__all__"]
    assert not truncateds["__all__"]
    assert observations["player_0"]["observations"].tolist() == [1, 1, 1, -1, -1, 0, 0, 0, 0]


def test_a_move_for_the_wrong_seat_is_refused_before_sending(env: RLlibSelfPlayEnv) -> None:
    env.reset()
    with pytest.raises(NotYourTurnError, match=r"player_0's turn.*\['player_1'\]"):
        env.step({"player_1": 4})
    observations, *_ = env.step({"player_0": 4})  # nothing was played: X still moves first
    assert observations["player_1"]["observations"][4] == 1.0


def test_an_illegal_move_gets_the_servers_typed_error(env: RLlibSelfPlayEnv) -> None:
    env.reset()
    env.step({"player_0": 4})
    with pytest.raises(ServerReplyError, match=r"VALIDATION_ERROR.*cell 4 is taken"):
        env.step({"player_1": 4})
    observations, *_ = env.step({"player_1": 0})  # the game goes on
    assert observations["player_0"]["action_mask"].tolist() == [0, 1, 1, 1, 0, 1, 1, 1, 1]


def test_an_observation_that_does_not_flatten_to_a_box_is_refused() -> None:
    space = spaces.Dict(
        {
            "observation": spaces.Sequence(spaces.Discrete(3)),
            "action_mask": spaces.Box(0, 1, (3,), np.int8),
        }
    )
    with pytest.raises(SpaceMappingError, match="flattens to a Box"):
        _rllib_space(space)


def test_every_seat_maps_to_the_shared_policy() -> None:
    assert shared_policy("player_0", None) == shared_policy("player_1", None) == SHARED_POLICY


@pytest.fixture(scope="module")
def ray_local() -> Iterator[None]:
    import ray

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield
    ray.shutdown()


def _small_ppo(config: Any, batch: int) -> Any:
    """One env runner in this process, one learner, one epoch of ``batch`` moves."""
    return (
        config.env_runners(num_env_runners=0)
        .learners(num_learners=0)
        .training(train_batch_size_per_learner=batch, minibatch_size=batch // 2, num_epochs=1)
        .debugging(seed=0)
    )


@pytest.mark.slow
def test_ppo_self_play_trains_one_masked_policy(ray_local: None, url: str) -> None:
    from ray.rllib.algorithms.ppo import PPOConfig

    config = _small_ppo(
        selfplay_config(PPOConfig(), "openenv/Remote-v0", env_config={"base_url": url}), 128
    )
    algo = config.build_algo()
    try:
        assert set(config.policies) == {SHARED_POLICY}
        for _ in range(2):
            result = algo.train()
        runners = result["env_runners"]
        # Every move sampled was legal: the server refuses an illegal one with an error.
        assert runners["num_env_steps_sampled_lifetime"] >= 256
        assert runners["num_episodes_lifetime"] > 0
        returns = runners["agent_episode_returns_mean"]
        assert set(returns) == {"player_0", "player_1"}
        assert returns["player_0"] == pytest.approx(-returns["player_1"])  # zero-sum
        assert SHARED_POLICY in result["learners"]
    finally:
        algo.stop()


@pytest.mark.slow
def test_ppo_self_play_on_embedded_chess(ray_local: None) -> None:
    """Chess: 4672 moves, few legal (RLlib's env check, which plays an unmasked random move,
    would fail on its first step; selfplay_config turns it off)."""
    from ray.rllib.algorithms.ppo import PPOConfig

    config = _small_ppo(
        selfplay_config(PPOConfig(), "openenv/Chess-v0", env_config={"max_moves": 10}), 64
    )
    algo = config.build_algo()
    try:
        runners = algo.train()["env_runners"]
        assert runners["num_env_steps_sampled_lifetime"] >= 64
        assert runners["num_episodes_lifetime"] > 0  # games reach the 10-move limit
    finally:
        algo.stop()
