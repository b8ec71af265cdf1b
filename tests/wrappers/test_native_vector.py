"""The vector wrappers on our native vector env behave as on SyncVectorEnv of single envs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import SyncVectorEnv, VectorEnv

from openenv_gym import OpenEnvEnv, OpenEnvVectorEnv
from openenv_gym.trajectories import trajectory_arrays
from openenv_gym.wrappers import (
    PotentialShaping,
    Scale,
    VectorNormalize,
    VectorRecordTrajectories,
    VectorShapeReward,
)

N = 3
LIMIT = 20


def _native(url: str) -> VectorEnv:
    return OpenEnvVectorEnv(None, N, base_url=url, max_episode_steps=LIMIT)


def _sync(url: str) -> VectorEnv:
    def make() -> gym.Env[Any, Any]:
        return gym.wrappers.TimeLimit(OpenEnvEnv(url), LIMIT)

    return SyncVectorEnv([make] * N)


def _roll(venv: VectorEnv, steps: int = 45) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(7)
    out = []
    obs, _ = venv.reset(seed=[10, 11, 12])
    out.append((np.array(obs), np.zeros(N)))
    for _ in range(steps):
        obs, reward, *_ = venv.step(rng.integers(0, 2, size=N))
        out.append((np.array(obs), np.array(reward)))
    venv.close()
    return out


WRAPS: dict[str, Callable[[VectorEnv], VectorEnv]] = {
    "normalize": lambda v: VectorNormalize(v, gamma=0.9),
    "shape": lambda v: VectorShapeReward(
        v, [Scale(0.5), PotentialShaping(lambda obs: -abs(float(obs[2])), gamma=0.99)]
    ),
}


@pytest.mark.parametrize("wrap", sorted(WRAPS))
def test_wrapper_gives_the_same_stream_on_native_and_sync(cartpole_url: str, wrap: str) -> None:
    native = _roll(WRAPS[wrap](_native(cartpole_url)))
    sync = _roll(WRAPS[wrap](_sync(cartpole_url)))
    for (obs_a, rew_a), (obs_b, rew_b) in zip(native, sync, strict=True):
        np.testing.assert_allclose(obs_a, obs_b, rtol=1e-6)
        np.testing.assert_allclose(rew_a, rew_b, rtol=1e-6)


def test_recorded_trajectories_are_the_same_on_native_and_sync(
    cartpole_url: str, tmp_path: Path
) -> None:
    _roll(VectorRecordTrajectories(_native(cartpole_url), tmp_path / "native", chunk_size=16))
    _roll(VectorRecordTrajectories(_sync(cartpole_url), tmp_path / "sync", chunk_size=16))
    native, sync = trajectory_arrays(tmp_path / "native"), trajectory_arrays(tmp_path / "sync")
    assert len(native["step"]) == len(sync["step"]) > 100
    for key in ("step", "env_index", "action", "reward", "terminated", "truncated"):
        np.testing.assert_array_equal(native[key], sync[key], err_msg=key)
    np.testing.assert_allclose(native["observation"], sync["observation"], rtol=1e-6)
