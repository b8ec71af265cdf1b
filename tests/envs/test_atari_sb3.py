"""Stable-Baselines3 PPO with its AtariWrapper on remote Pong (a real server, real ALE)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("ale_py")
pytest.importorskip("cv2")
sb3 = pytest.importorskip("stable_baselines3")

from stable_baselines3.common.atari_wrappers import AtariWrapper  # noqa: E402
from stable_baselines3.common.env_checker import check_env  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack  # noqa: E402

import openenv_gym  # noqa: E402, F401  (registers the ids)
from openenv_gym.envs.atari import atari_server  # noqa: E402
from openenv_gym.server import ServerThread  # noqa: E402


def test_remote_pong_passes_sb3_check_env() -> None:
    with ServerThread(atari_server("pong")) as server:
        env = gym.make("openenv/Atari-v0", base_url=server.url)
        try:
            check_env(env.unwrapped)
        finally:
            env.close()


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
def test_ppo_with_atari_wrapper_runs_2000_steps_on_remote_pong() -> None:
    with ServerThread(atari_server("pong", max_sessions=4)) as server:

        def make() -> gym.Env[np.ndarray, int]:
            env = gym.make("openenv/Atari-v0", base_url=server.url, encoding="binary")
            # The server already skips 4 frames per step (ALE/Pong-v5 settings).
            return AtariWrapper(env, frame_skip=1)

        # Two sessions: half the policy forward passes for the same 2,000 steps.
        venv = VecFrameStack(DummyVecEnv([make, make]), n_stack=4)
        try:
            assert venv.observation_space.shape == (84, 84, 4)
            model = sb3.PPO(
                "CnnPolicy",
                venv,
                n_steps=250,
                batch_size=500,
                policy_kwargs={"features_extractor_kwargs": {"features_dim": 128}},
                n_epochs=1,
                seed=0,
                device="cpu",
                verbose=0,
            )
            model.learn(total_timesteps=2000)
            assert model.num_timesteps >= 2000
        finally:
            venv.close()
