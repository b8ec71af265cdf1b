"""``openenv/Chess-v0`` on ``OpenEnvEnv`` with the move codec: native vectorization,
per-sub-env action masks, and sb3-contrib's MaskablePPO on a vector of chess envs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("chess")

import openenv_gym  # registers the ids
from openenv_gym.env import OpenEnvEnv
from openenv_gym.envs.chess import encoding
from openenv_gym.envs.chess.codec import ChessBoardCodec, ChessMoveCodec
from openenv_gym.vector import OpenEnvVectorEnv
from tests.envs.official_chess import official_chess_server


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


PROMOTION_FEN = "8/4P3/8/8/8/8/k7/7K w - - 0 1"
E7E8 = 52 * 64 + 60  # the plain index of e7 -> e8 (a queen promotion for a pawn)


def test_vector_promotions_reach_an_official_server_with_their_piece() -> None:
    with official_chess_server() as url:
        # What the official server does with a bare e7e8: refuses it, nothing moves.
        refused = gym.make("openenv/Chess-v0", base_url=url)
        try:
            refused.reset(options={"fen": PROMOTION_FEN})
            session = refused.unwrapped._session  # type: ignore[attr-defined]
            reply = session.request_observation({"type": "step", "data": {"move": "e7e8"}})
            assert reply.reward == -0.1
            assert reply.observation["fen"] == PROMOTION_FEN
        finally:
            refused.close()
        vec = gym.make_vec("openenv/Chess-v0", num_envs=2, base_url=url)
        try:
            vec.reset(seed=0, options={"fen": PROMOTION_FEN})
            _, rewards, _, _, info = vec.step(np.array([E7E8, E7E8]))
            for fen in info["fen"]:
                assert fen.split()[0].count("Q") == 1
            assert rewards.tolist() == [0.0, 0.0]
        finally:
            vec.close()


def play_to_the_end(env: gym.Env, seed: int) -> tuple[bool, bool, dict]:
    """Random legal moves until the game ends; its last ``(terminated, truncated, info)``."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    while True:
        mask = env.unwrapped.action_masks()  # type: ignore[attr-defined]
        _, _, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        if terminated or truncated:
            return terminated, truncated, info


def test_a_move_limit_draw_from_an_official_server_is_truncated_single_and_vector() -> None:
    with official_chess_server(max_moves=6) as url:
        env = gym.make("openenv/Chess-v0", base_url=url)
        try:
            terminated, truncated, info = play_to_the_end(env, seed=1)
            assert (terminated, truncated) == (False, True)
            assert info["result"] == "1/2-1/2"
        finally:
            env.close()
        vec = gym.make_vec("openenv/Chess-v0", num_envs=2, base_url=url)
        try:
            vec.reset(seed=3)
            rng = np.random.default_rng(3)
            for _ in range(3):  # 3 agent moves + 3 replies = the 6 half-moves
                masks = vec.action_masks()
                actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
                _, _, terminations, truncations, _ = vec.step(actions)
            assert terminations.tolist() == [False, False]
            assert truncations.tolist() == [True, True]
        finally:
            vec.close()


def test_the_truncation_rule_tells_the_move_limit_from_the_rules() -> None:
    codec = ChessBoardCodec()
    drawn_midgame = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    stalemate = "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"
    mate = "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3"
    assert codec.truncates({"fen": drawn_midgame, "result": "1/2-1/2"})
    assert not codec.truncates({"fen": stalemate, "result": "1/2-1/2"})
    assert not codec.truncates({"fen": mate, "result": "0-1"})
    # Our server says it exactly (it always sends agent_color).
    assert not codec.truncates(
        {"fen": drawn_midgame, "result": "1/2-1/2", "metadata": {"agent_color": "white"}}
    )
    assert codec.truncates(
        {"fen": drawn_midgame, "result": "1/2-1/2", "metadata": {"truncated": True}}
    )


@pytest.mark.parametrize("batch_size", [None, 1], ids=["synchronous", "asynchronous"])
def test_pool_promotions_reach_an_official_server_with_their_piece(batch_size: int | None) -> None:
    with official_chess_server() as url:
        pool = openenv_gym.make_pool(
            "openenv/Chess-v0", 2, batch_size, base_url=url, reset_kwargs={"fen": PROMOTION_FEN}
        )
        try:
            if batch_size is None:
                pool.reset(seed=0)
                _, rewards, _, _, info = pool.step(np.array([E7E8, E7E8]))
            else:
                pool.async_reset(seed=0)
                first = pool.recv()[4]["env_id"]
                pool.recv()  # the other sub-env's reset
                pool.send(np.array([E7E8]), first)
                _, rewards, _, _, info = pool.recv()
                assert info["env_id"].tolist() == first.tolist()
            for fen in info["fen"]:
                assert fen.split()[0].count("Q") == 1, fen
            assert rewards.tolist() == [0.0] * len(rewards)
        finally:
            pool.close()
