"""The native SB3 VecEnv against real servers: same transitions as DummyVecEnv over raw
CartPole, SB3's wrappers on top, SB3's own make_vec_env, and a short PPO run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env as sb3_make_vec_env
from stable_baselines3.common.vec_env import (
    DummyVecEnv,
    VecFrameStack,
    VecMonitor,
    VecNormalize,
)

from openenv_gym import OpenEnvVectorEnv
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.errors import VectorUsageError
from openenv_gym.integrations.sb3 import OpenEnvVecEnv, make_vec_env
from openenv_gym.server import ServerThread

LIMIT = 12


@pytest.fixture(scope="module")
def short_url() -> Iterator[str]:
    server = gymnasium_server("CartPole-v1", make_kwargs={"max_episode_steps": LIMIT})
    with ServerThread(server) as running:
        yield running.url


def test_transitions_match_dummy_vec_env(short_url: str) -> None:
    n = 3
    ours = make_vec_env("openenv/CartPole-v1", n, seed=9, env_kwargs={"base_url": short_url})
    theirs = DummyVecEnv([lambda: gym.make("CartPole-v1", max_episode_steps=LIMIT)] * n)
    theirs.seed(9)
    try:
        assert isinstance(ours, VecMonitor)
        assert isinstance(ours.venv, OpenEnvVecEnv)
        assert ours.observation_space == theirs.observation_space
        assert ours.action_space == theirs.action_space
        np.testing.assert_array_equal(ours.reset(), theirs.reset())
        rng = np.random.default_rng(3)
        lengths = np.zeros(n, dtype=int)
        done_count = 0
        for _ in range(100):
            actions = rng.integers(0, 2, n)
            obs, rewards, dones, infos = ours.step(actions)
            ref_obs, ref_rewards, ref_dones, ref_infos = theirs.step(actions)
            lengths += 1
            np.testing.assert_array_equal(obs, ref_obs)
            np.testing.assert_array_equal(rewards, ref_rewards)
            np.testing.assert_array_equal(dones, ref_dones)
            assert rewards.dtype == np.float32
            for i in np.flatnonzero(dones):
                done_count += 1
                np.testing.assert_array_equal(
                    infos[i]["terminal_observation"], ref_infos[i]["terminal_observation"]
                )
                ours_cut = infos[i]["TimeLimit.truncated"]
                if ref_infos[i]["TimeLimit.truncated"]:
                    assert ours_cut is True
                elif ours_cut:
                    # Terminated on the last allowed step: the wire reports truncation only.
                    assert lengths[i] == LIMIT
                assert infos[i]["episode"]["l"] == lengths[i]  # VecMonitor saw the episode
                lengths[i] = 0
        assert done_count > n
    finally:
        ours.close()
        theirs.close()


def test_under_vec_normalize_and_frame_stack(cartpole_url: str) -> None:
    vec = make_vec_env(
        "openenv/CartPole-v1",
        2,
        seed=0,
        env_kwargs={"base_url": cartpole_url},
        wrapper_class=VecFrameStack,
        wrapper_kwargs={"n_stack": 4},
    )
    vec = VecNormalize(vec)
    try:
        obs = vec.reset()
        assert obs.shape == (2, 16)
        for _ in range(30):
            obs, _rewards, _dones, infos = vec.step(np.array([0, 1]))
            assert obs.shape == (2, 16)
            assert np.isfinite(obs).all()
            assert len(infos) == 2
    finally:
        vec.close()


def test_attributes_methods_seeds_and_options(cartpole_url: str) -> None:
    vec = make_vec_env("openenv/CartPole-v1", 2, env_kwargs={"base_url": cartpole_url})
    inner = vec.venv
    assert isinstance(inner, OpenEnvVecEnv)
    try:
        assert inner.get_attr("observation_space") == [vec.observation_space] * 2
        assert inner.get_attr("render_mode", indices=1) == [None]
        assert inner.env_is_wrapped(gym.Wrapper) == [False, False]
        inner.set_attr("copy", True)
        with pytest.raises(VectorUsageError, match="share"):
            inner.set_attr("copy", False, indices=[0])
        vec.seed(5)
        vec.set_options([{"low": -0.001, "high": 0.001}, {}])
        obs = vec.reset()
        assert np.abs(obs[0]).max() <= 0.001  # the options reached sub-env 0 only
        assert np.abs(obs[1]).max() > 0.001
        reference = gym.make("CartPole-v1")
        np.testing.assert_array_equal(obs[1], reference.reset(seed=6)[0])  # seed 5 + 1
        vec.step(np.array([1, 1]))
        states = inner.env_method("state")
        assert [s["step_count"] for s in states] == [1, 1]
        assert inner.env_method("state", indices=[1])[0]["step_count"] == 1
    finally:
        vec.close()


def test_sb3_own_make_vec_env_still_works(cartpole_url: str) -> None:
    vec = sb3_make_vec_env("openenv/CartPole-v1", n_envs=4, env_kwargs={"base_url": cartpole_url})
    try:
        assert isinstance(vec, DummyVecEnv)
        assert vec.reset().shape == (4, 4)
        vec.step(np.array([0, 1, 0, 1]))
    finally:
        vec.close()


def test_bad_arguments(cartpole_url: str) -> None:
    with pytest.raises(VectorUsageError, match="VecEnvWrapper"):
        make_vec_env(
            "openenv/CartPole-v1",
            1,
            env_kwargs={"base_url": cartpole_url},
            wrapper_class=gym.wrappers.TimeLimit,  # type: ignore[arg-type]
        )
    vector = OpenEnvVectorEnv(None, 1, base_url=cartpole_url)
    try:
        with pytest.raises(VectorUsageError, match="SAME_STEP"):
            OpenEnvVecEnv(vector)
    finally:
        vector.close()
    with pytest.raises(VectorUsageError, match="OpenEnvVectorEnv"):
        OpenEnvVecEnv(object())  # type: ignore[arg-type]
    vec = make_vec_env(None, 1, env_kwargs={"base_url": cartpole_url}, monitor=False)
    try:
        with pytest.raises(VectorUsageError, match="step_async"):
            vec.step_wait()
    finally:
        vec.close()


@pytest.mark.slow
def test_ppo_learns_a_little_on_remote_cartpole(cartpole_url: str) -> None:
    vec = make_vec_env("openenv/CartPole-v1", 4, seed=0, env_kwargs={"base_url": cartpole_url})
    try:
        model = PPO("MlpPolicy", vec, n_steps=64, batch_size=64, n_epochs=2, seed=0, device="cpu")
        model.learn(total_timesteps=1024)
        assert model.num_timesteps >= 1024
        info: Any = model.ep_info_buffer
        assert len(info) > 0  # VecMonitor episodes reached SB3's logger
    finally:
        vec.close()


def test_unbatched_infos_are_the_sub_envs_infos() -> None:
    """Gymnasium's batched infos (as ``VectorEnv._add_info`` merges them) back to one dict per
    sub-env: numbers as Python scalars, arrays and objects as they were, keys only where a
    sub-env had them, nested dicts unbatched too."""
    from openenv_gym.integrations.sb3 import _unbatch_infos

    rows: list[dict[str, Any]] = [
        {"lives": 3, "raw_reward": 1.5, "over": False, "name": "pong", "legal": [0, 1]},
        {"lives": 2, "raw_reward": -1.0, "over": True, "name": "pong", "legal": [0, 1, 2]},
        {"lives": 0, "raw_reward": 0.0, "over": False, "name": "breakout", "legal": []},
    ]
    rows[0]["ram"] = np.arange(4, dtype=np.uint8)
    rows[2]["ram"] = np.arange(4, 8, dtype=np.uint8)
    rows[1]["only_here"] = 7
    rows[2]["nested"] = {"depth": 2, "tag": "x"}
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 3)
    try:
        batched: dict[str, Any] = {}
        for i, row in enumerate(rows):
            batched = envs._add_info(batched, row, i)
    finally:
        envs.close()
    unbatched = _unbatch_infos(batched, 3)
    assert [sorted(info) for info in unbatched] == [sorted(row) for row in rows]
    for info, row in zip(unbatched, rows, strict=True):
        for key, value in row.items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(info[key], value)
            else:
                assert info[key] == value
                assert type(info[key]) is type(value), key
