"""``openenv/Chess-v0`` on ``OpenEnvEnv`` with the move codec: native vectorization,
per-sub-env action masks, and sb3-contrib's MaskablePPO on a vector of chess envs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("chess")

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.env import OpenEnvEnv
from openenv_gym.envs.chess import encoding
from openenv_gym.envs.chess.codec import ChessMoveCodec
from openenv_gym.vector import OpenEnvVectorEnv


def test_the_single_env_is_an_openenv_env_with_masks() -> None:
    env = gym.make("openenv/Chess-v0", opponent="random")
    try:
        assert isinstance(env.unwrapped, OpenEnvEnv)
        _, info = env.reset(seed=0)
        mask = env.unwrapped.action_masks()
        assert mask.shape == (encoding.N_ACTIONS,)
        assert int(mask.sum()) == len(info["legal_moves"]) == 20
    finally:
        env.close()


def test_make_vec_is_native_with_one_mask_per_sub_env() -> None:
    vec = gym.make_vec("openenv/Chess-v0", num_envs=8, opponent="random")
    try:
        assert isinstance(vec, OpenEnvVectorEnv)
        obs, info = vec.reset(seed=0)
        assert obs.shape == (8, 8, 8, 18)
        rng = np.random.default_rng(0)
        for _ in range(6):
            masks = vec.action_masks()
            assert masks.shape == (8, encoding.N_ACTIONS)
            for i in range(8):
                assert int(masks[i].sum()) == len(info["legal_moves"][i])
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            obs, rewards, _, _, info = vec.step(actions)
            assert rewards.dtype == np.float64
    finally:
        vec.close()


def test_a_bare_pawn_move_to_the_last_rank_is_a_queen_promotion() -> None:
    from openenv_gym.envs.chess.environment import ChessEnvironment
    from openenv_gym.envs.chess.models import ChessAction

    fen = "8/4P3/8/8/8/8/k7/7K w - - 0 1"
    index = 52 * 64 + 60  # e7 -> e8, the plain index (queen promotion)
    # The vector env's codec knows no board: it sends e7e8, which our server reads as e7e8q.
    assert ChessMoveCodec().encode(index) == {"move": "e7e8"}
    server_env = ChessEnvironment(opponent="random")
    try:
        server_env.reset(seed=0, fen=fen)
        after = server_env.step(ChessAction(move="e7e8"))
        assert after.fen.split()[0].startswith("4Q3")
    finally:
        server_env.close()
    # The single env knows its board and sends the exact UCI move (as official servers need).
    env = gym.make("openenv/Chess-v0", opponent="random")
    try:
        env.reset(options={"fen": fen})
        _, _, _, _, info = env.step(index)
        assert "Q" in info["fen"].split()[0]
    finally:
        env.close()


@pytest.mark.slow
def test_maskable_ppo_on_a_vector_of_chess_envs(one_torch_thread: None) -> None:
    sb3_contrib = pytest.importorskip("sb3_contrib")
    from openenv_gym.integrations.sb3 import make_vec_env

    vec = make_vec_env("openenv/Chess-v0", n_envs=4, seed=0, env_kwargs={"opponent": "random"})
    try:
        model = sb3_contrib.MaskablePPO(
            "MlpPolicy", vec, n_steps=16, batch_size=32, n_epochs=1, seed=0, verbose=0
        )
        model.learn(total_timesteps=64)
        obs = vec.reset()
        masks = np.stack(vec.env_method("action_masks"))
        assert masks.shape == (4, encoding.N_ACTIONS)
        actions, _ = model.predict(obs, action_masks=masks, deterministic=True)
        assert all(masks[i, a] for i, a in enumerate(actions))  # only legal moves
    finally:
        vec.close()
