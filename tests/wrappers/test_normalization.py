"""Normalization on real servers, checked against numpy over the same data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from openenv_gym import OpenEnvEnv
from openenv_gym.errors import NormalizationStatsError, WrapperConfigError
from openenv_gym.wrappers import Normalize, RunningMeanStd, ShapeReward, VectorNormalize
from openenv_gym.wrappers.shaping import Scale

EPS = 1e-8


class Tape(gym.Wrapper[Any, Any, Any, Any]):
    """Keeps every raw observation and reward that passes (below the wrapper under test)."""

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        self.observations: list[Any] = []
        self.rewards: list[float] = []
        self.ends: list[bool] = []

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self.observations.append(obs)
        return obs, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.observations.append(obs)
        self.rewards.append(float(reward))
        self.ends.append(terminated or truncated)
        return obs, reward, terminated, truncated, info


class SplitCartPole(gym.ObservationWrapper[Any, Any, Any]):
    """CartPole's observation as a Dict with a Box, another Box and a Discrete entry."""

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        box = env.observation_space
        assert isinstance(box, spaces.Box)
        self.observation_space = spaces.Dict(
            [
                ("cart", spaces.Box(box.low[:2], box.high[:2], dtype=np.float32)),
                ("pole", spaces.Box(box.low[2:], box.high[2:], dtype=np.float32)),
                ("side", spaces.Discrete(2)),
            ]
        )

    def observation(self, observation: Any) -> Any:
        return {"cart": observation[:2], "pole": observation[2:], "side": int(observation[0] > 0)}


def _discounted_returns(rewards: list[float], ends: list[bool], gamma: float) -> np.ndarray:
    out, running = [], 0.0
    for reward, end in zip(rewards, ends, strict=True):
        running = running * gamma + reward
        out.append(running)
        if end:
            running = 0.0
    return np.array(out)


def test_running_mean_std_matches_numpy_over_uneven_batches() -> None:
    data = np.random.default_rng(0).normal(3.0, 2.0, size=(1000, 3))
    stats = RunningMeanStd((3,))
    for start, stop in [(0, 1), (1, 7), (7, 500), (500, 501), (501, 1000)]:
        stats.update(data[start:stop])
    np.testing.assert_allclose(stats.mean, data.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(stats.var, data.var(axis=0), rtol=1e-10)
    assert stats.count == 1000


def _play(env: gym.Env[Any, Any], steps: int, seed: int = 0) -> list[Any]:
    env.action_space.seed(seed)
    outputs = [env.reset(seed=seed)[0]]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        outputs.append((obs, reward, info))
        if terminated or truncated:
            outputs.append(env.reset()[0])
    return outputs


def test_single_env_statistics_match_numpy_on_remote_cartpole(cartpole_url: str) -> None:
    tape = Tape(OpenEnvEnv(cartpole_url))
    env = Normalize(tape, gamma=0.9, clip_obs=1e6, clip_reward=1e6)
    try:
        outputs = _play(env, 300)
        raw = np.array(tape.observations, dtype=np.float64)
        stats = env.obs_stats[""]
        np.testing.assert_allclose(stats.mean, raw.mean(axis=0), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(stats.var, raw.var(axis=0), rtol=1e-9)
        obs, reward, info = outputs[-1] if isinstance(outputs[-1], tuple) else outputs[-2]
        expected = (tape.observations[-1] - raw.mean(axis=0)) / np.sqrt(raw.var(axis=0) + EPS)
        if isinstance(outputs[-1], tuple):
            np.testing.assert_allclose(obs, expected, rtol=1e-5, atol=1e-6)
        returns = _discounted_returns(tape.rewards, tape.ends, 0.9)
        np.testing.assert_allclose(env.return_stats.var, returns.var(), rtol=1e-9)
        assert info["raw_reward"] == 1.0
        assert reward == pytest.approx(1.0 / np.sqrt(returns.var() + EPS), rel=1e-9)
        assert env.observation_space.dtype == np.float32
        assert env.observation_space.contains(obs)
    finally:
        env.close()


def _taped_vector(url: str, n: int, split: bool) -> tuple[SyncVectorEnv, list[Tape]]:
    tapes: list[Tape] = []

    def make() -> gym.Env[Any, Any]:
        env: gym.Env[Any, Any] = OpenEnvEnv(url)
        tape = Tape(SplitCartPole(env) if split else env)
        tapes.append(tape)
        return tape

    return SyncVectorEnv([make] * n, autoreset_mode=AutoresetMode.NEXT_STEP), tapes


def test_vector_statistics_match_numpy_on_remote_cartpole(cartpole_url: str) -> None:
    inner, tapes = _taped_vector(cartpole_url, 3, split=False)
    venv = VectorNormalize(inner, gamma=0.95, clip_obs=1e6, clip_reward=1e6)
    try:
        venv.reset(seed=[0, 1, 2])
        for _ in range(120):
            obs, _rewards, _terminated, _truncated, info = venv.step(np.array([0, 1, 1]))
        # NEXT_STEP: every observation a sub-env produced was handed to the wrapper once.
        raw = np.concatenate([np.array(t.observations, dtype=np.float64) for t in tapes])
        stats = venv.obs_stats[""]
        assert stats.count == len(raw) == 3 * 121
        np.testing.assert_allclose(stats.mean, raw.mean(axis=0), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(stats.var, raw.var(axis=0), rtol=1e-9)
        latest = np.array([t.observations[-1] for t in tapes], dtype=np.float64)
        expected = (latest - raw.mean(axis=0)) / np.sqrt(raw.var(axis=0) + EPS)
        np.testing.assert_allclose(obs, expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(info["_raw_reward"], True)
        assert venv.observation_space.contains(obs.astype(np.float32))
    finally:
        venv.close()


def test_vector_dict_observations_normalize_box_entries_only(cartpole_url: str) -> None:
    inner, tapes = _taped_vector(cartpole_url, 2, split=True)
    venv = VectorNormalize(inner, reward=False)
    try:
        assert set(venv.obs_stats) == {"cart", "pole"}
        assert isinstance(venv.single_observation_space["side"], spaces.Discrete)
        venv.reset(seed=[0, 1])
        for _ in range(60):
            obs, rewards, *_ = venv.step(np.array([1, 1]))
        for key in ("cart", "pole"):
            raw = np.concatenate([[o[key] for o in t.observations] for t in tapes]).astype(float)
            np.testing.assert_allclose(venv.obs_stats[key].mean, raw.mean(axis=0), atol=1e-12)
            np.testing.assert_allclose(venv.obs_stats[key].var, raw.var(axis=0), rtol=1e-9)
        np.testing.assert_array_equal(obs["side"], [int(t.observations[-1]["side"]) for t in tapes])
        assert venv.observation_space.contains(obs)
        assert set(np.unique(rewards)) <= {0.0, 1.0}  # reward=False: untouched
    finally:
        venv.close()


def test_frozen_statistics_save_and_reattach_to_a_new_env(
    cartpole_url: str, tmp_path: Path
) -> None:
    train = Normalize(OpenEnvEnv(cartpole_url))
    _play(train, 200)
    path = tmp_path / "stats.npz"
    train.save(path)
    mean, var = train.obs_stats[""].mean.copy(), train.obs_stats[""].var.copy()
    train.close()
    assert not list(tmp_path.glob(".*tmp"))

    tape = Tape(OpenEnvEnv(cartpole_url))
    evaluation = Normalize.from_file(path, tape)
    try:
        assert not evaluation.training
        obs, _ = evaluation.reset(seed=9)
        for _ in range(20):
            obs, _reward, terminated, truncated, _ = evaluation.step(0)
            if terminated or truncated:
                break
        np.testing.assert_array_equal(evaluation.obs_stats[""].mean, mean)
        np.testing.assert_array_equal(evaluation.obs_stats[""].var, var)
        expected = (tape.observations[-1] - mean) / np.sqrt(var + EPS)
        np.testing.assert_allclose(obs, expected, rtol=1e-5, atol=1e-6)
        evaluation.training = True
        evaluation.step(0) if not (terminated or truncated) else evaluation.reset()
        assert evaluation.obs_stats[""].count == train.obs_stats[""].count + 1
    finally:
        evaluation.close()


def test_vector_stats_file_reattaches_to_a_single_env(cartpole_url: str, tmp_path: Path) -> None:
    venv = VectorNormalize(SyncVectorEnv([lambda: OpenEnvEnv(cartpole_url)] * 2))
    venv.reset(seed=0)
    for _ in range(30):
        venv.step(np.array([0, 1]))
    venv.save(tmp_path / "v.npz")
    single = Normalize.from_file(tmp_path / "v.npz", gym.make("CartPole-v1"))
    np.testing.assert_array_equal(single.obs_stats[""].mean, venv.obs_stats[""].mean)
    assert single.return_stats.var == venv.return_stats.var
    venv.close()


def test_bad_statistics_files_are_typed_errors(tmp_path: Path) -> None:
    with pytest.raises(NormalizationStatsError, match="cannot read"):
        Normalize.from_file(tmp_path / "missing.npz", gym.make("CartPole-v1"))
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(NormalizationStatsError, match="cannot read"):
        Normalize.from_file(tmp_path / "junk.npz", gym.make("CartPole-v1"))
    np.savez(tmp_path / "other.npz", a=np.zeros(3))
    with pytest.raises(NormalizationStatsError, match="not a normalization statistics file"):
        Normalize.from_file(tmp_path / "other.npz", gym.make("CartPole-v1"))
    acrobot = Normalize(gym.make("Acrobot-v1"))
    acrobot.save(tmp_path / "acrobot.npz")
    with pytest.raises(NormalizationStatsError, match=r"shape \(6,\), this env's is \(4,\)"):
        Normalize(gym.make("CartPole-v1")).load_stats(tmp_path / "acrobot.npz")
    dict_env = Normalize(SplitCartPole(gym.make("CartPole-v1")), keys=["pole"])
    dict_env.save(tmp_path / "dict.npz")
    with pytest.raises(NormalizationStatsError, match="observation entries"):
        Normalize(gym.make("CartPole-v1")).load_stats(tmp_path / "dict.npz")


def test_bad_settings_are_typed_errors() -> None:
    with pytest.raises(WrapperConfigError, match="Box or Dict"):
        Normalize(gym.make("FrozenLake-v1"))
    Normalize(gym.make("FrozenLake-v1"), observation=False)  # reward only is fine
    with pytest.raises(WrapperConfigError, match="not Box entries"):
        Normalize(SplitCartPole(gym.make("CartPole-v1")), keys=["side"])
    with pytest.raises(WrapperConfigError, match="only applies to Dict"):
        Normalize(gym.make("CartPole-v1"), keys=["x"])
    with pytest.raises(WrapperConfigError, match="gamma"):
        Normalize(gym.make("CartPole-v1"), gamma=2.0)
    with pytest.raises(WrapperConfigError, match="positive"):
        Normalize(gym.make("CartPole-v1"), clip_obs=0.0)


def test_raw_reward_from_shaping_below_is_kept(cartpole_url: str) -> None:
    env = Normalize(ShapeReward(OpenEnvEnv(cartpole_url), [Scale(3.0)]))
    try:
        env.reset(seed=0)
        _, _, _, _, info = env.step(0)
        assert info["raw_reward"] == 1.0
    finally:
        env.close()


def test_sb3_vecnormalize_works_on_our_envs(cartpole_url: str, tmp_path: Path) -> None:
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    venv = VecNormalize(DummyVecEnv([lambda: OpenEnvEnv(cartpole_url)] * 2), gamma=0.9)
    try:
        venv.reset()
        for _ in range(50):
            obs, _rewards, _dones, _infos = venv.step(np.array([0, 1]))
        assert obs.shape == (2, 4)
        assert venv.obs_rms.count > 50
        venv.save(str(tmp_path / "vecnormalize.pkl"))
    finally:
        venv.close()
    loaded = VecNormalize.load(
        str(tmp_path / "vecnormalize.pkl"), DummyVecEnv([lambda: OpenEnvEnv(cartpole_url)])
    )
    try:
        np.testing.assert_array_equal(loaded.obs_rms.mean, venv.obs_rms.mean)
        loaded.reset()
    finally:
        loaded.close()
