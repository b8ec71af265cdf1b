"""RLlib's new API stack trains PPO on remote CartPole: via the ``openenv_gym:`` id form
(stepped natively by OpenEnvVectorEnv) and via ``tune.register_env``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

pytest.importorskip("ray.rllib")

from openenv_gym import OpenEnvVectorEnv
from openenv_gym.integrations.rllib import env_creator, openenv_config, register_env, rllib_env_id


@pytest.fixture(scope="module")
def ray_local() -> Iterator[None]:
    import ray

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield
    ray.shutdown()


def _small_ppo(config: Any) -> Any:
    return (
        config.env_runners(num_env_runners=0, num_envs_per_env_runner=2)
        .learners(num_learners=0)
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
        .debugging(seed=0)
    )


def test_rllib_env_id() -> None:
    assert rllib_env_id("openenv/CartPole-v1") == "openenv_gym:openenv/CartPole-v1"
    assert rllib_env_id("openenv_gym:openenv/CartPole-v1") == "openenv_gym:openenv/CartPole-v1"


def test_env_creator_builds_vector_and_single_envs(cartpole_url: str) -> None:
    create = env_creator("openenv/CartPole-v1")
    vector = create({"base_url": cartpole_url, "num_envs": 3})
    try:
        assert isinstance(vector, OpenEnvVectorEnv)
        assert vector.num_envs == 3
    finally:
        vector.close()
    single = create({"base_url": cartpole_url})
    try:
        assert isinstance(single, gym.Env)
        assert single.reset(seed=0)[0].shape == (4,)
    finally:
        single.close()


@pytest.mark.slow
def test_ppo_trains_on_remote_cartpole(ray_local: None, cartpole_url: str) -> None:
    from ray.rllib.algorithms.ppo import PPOConfig

    env_config = {"base_url": cartpole_url}
    config = openenv_config(PPOConfig(), "openenv/CartPole-v1", env_config=env_config)
    algo = _small_ppo(config).build_algo()
    try:
        env = algo.env_runner.env.unwrapped
        assert isinstance(env, OpenEnvVectorEnv)  # native, not a SyncVectorEnv of single envs
        for _ in range(2):
            result = algo.train()
        runners = result["env_runners"]
        assert runners["num_env_steps_sampled_lifetime"] >= 256
        assert runners["num_episodes_lifetime"] > 0
    finally:
        algo.stop()


@pytest.mark.slow
def test_ppo_trains_through_tune_register_env(ray_local: None, cartpole_url: str) -> None:
    from ray.rllib.algorithms.ppo import PPOConfig

    name = register_env("openenv/CartPole-v1", name="openenv-cartpole-test")
    config = PPOConfig().environment(name, env_config={"base_url": cartpole_url})
    algo = _small_ppo(config.env_runners(gym_env_vectorize_mode="vector_entry_point")).build_algo()
    try:
        assert isinstance(algo.env_runner.env.unwrapped, OpenEnvVectorEnv)
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 128
    finally:
        algo.stop()


@pytest.mark.slow
def test_image_observations_give_rllib_float_frames_channels_last() -> None:
    import numpy as np

    from openenv_gym.envs.atari.preprocessing import ATARI_WRAPPER_OPTIONS
    from openenv_gym.integrations.rllib_images import ImageObservations

    envs = gym.make_vec("openenv/Atari-v0", num_envs=2, game="pong", **ATARI_WRAPPER_OPTIONS)
    try:
        frames, _ = envs.reset(seed=0)
        piece = ImageObservations()
        space = piece.recompute_output_observation_space(
            envs.single_observation_space, envs.single_action_space
        )
        assert space == gym.spaces.Box(0.0, 1.0, (84, 84, 4), np.float32)
        seen = piece.preprocess(frames[1], None)
        assert seen.dtype == np.float32
        assert space.contains(seen)
        np.testing.assert_allclose(seen * 255, np.moveaxis(frames[1], 0, -1), atol=1e-3)
        assert seen.std() > 0  # a real screen, not a blank one
    finally:
        envs.close()
    raw = gym.spaces.Box(0, 255, (210, 160, 3), np.uint8)  # ALE v5 frames: already HWC
    assert piece.recompute_output_observation_space(raw, gym.spaces.Discrete(6)).shape == (
        210,
        160,
        3,
    )
    cartpole = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    assert piece.recompute_output_observation_space(cartpole, gym.spaces.Discrete(2)) is cartpole
    batch = {"obs": "untouched"}
    assert piece(rl_module=None, batch=batch, episodes=[]) is batch  # no image: no work


@pytest.mark.slow
def test_ppo_trains_on_server_preprocessed_atari(ray_local: None) -> None:
    import numpy as np
    from ray.rllib.algorithms.ppo import PPOConfig

    from openenv_gym.envs.atari.preprocessing import ATARI_WRAPPER_OPTIONS

    env_config = {"game": "pong", **ATARI_WRAPPER_OPTIONS}
    config = openenv_config(PPOConfig(), "openenv/Atari-v0", env_config=env_config)
    algo = _small_ppo(config).build_algo()
    try:
        env = algo.env_runner.env.unwrapped
        assert isinstance(env, OpenEnvVectorEnv)
        assert env.batched
        assert env.single_observation_space.shape == (4, 84, 84)  # preprocessed on the server
        module = algo.get_module()
        assert module.observation_space == gym.spaces.Box(0.0, 1.0, (84, 84, 4), np.float32)
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 128
        assert np.isfinite(result["learners"]["default_policy"]["total_loss"])
    finally:
        algo.stop()
