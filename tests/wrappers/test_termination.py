"""Termination conditions on real servers: bounds, reward droughts, vector autoreset modes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv

from openenv_gym import OpenEnvEnv, OpenEnvVectorEnv
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.errors import WrapperConfigError
from openenv_gym.server import ServerThread
from openenv_gym.wrappers import FieldBound, NoRewardFor, TerminateWhen, VectorTerminateWhen

BOUND = FieldBound("observation", 0, low=-0.04, high=0.04)  # cart position


@pytest.fixture(scope="module")
def frozenlake_url() -> Iterator[str]:
    server = gymnasium_server("FrozenLake-v1", make_kwargs={"is_slippery": False})
    with ServerThread(server) as thread:
        yield thread.url


def test_a_field_bound_truncates_or_terminates_and_names_itself(cartpole_url: str) -> None:
    for outcome in ("truncated", "terminated"):
        bound = FieldBound("observation", 0, high=0.05, outcome=outcome)  # type: ignore[arg-type]
        env = TerminateWhen(OpenEnvEnv(cartpole_url), [bound])
        try:
            env.reset(seed=0)
            steps, terminated, truncated = 0, False, False
            while not (terminated or truncated):
                obs, _, terminated, truncated, info = env.step(1)
                steps += 1
            assert obs[0] > 0.05
            assert (terminated, truncated) == (outcome == "terminated", outcome == "truncated")
            assert info["termination_condition"] == "conditions[0]: observation[0] > 0.05"
            assert steps < 30
        finally:
            env.close()


def test_no_reward_for_k_steps_ends_the_episode(frozenlake_url: str) -> None:
    env = TerminateWhen(OpenEnvEnv(frozenlake_url), [NoRewardFor(steps=4)])
    try:
        env.reset(seed=0)
        # Left into the wall: no reward, never terminal.
        flags = [env.step(0)[2:4] for _ in range(4)]
        assert flags[:3] == [(False, False)] * 3
        assert flags[3] == (False, True)
        env.reset()
        right_down = [2, 2, 1, 1, 1, 2]  # reaches the goal (reward 1) at step 6
        results = [env.step(a) for a in right_down[:4]]
        assert results[3][3] is True  # 4 dry steps before the reward
    finally:
        env.close()


def _run(venv: VectorEnv, steps: int) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    venv.reset(seed=[1, 2, 3])
    actions = np.array([1, 0, 1])
    for _ in range(steps):
        obs, reward, terminated, truncated, info = venv.step(actions)
        final = info.get("final_obs")
        finals = [None if final is None else final[i] for i in range(3)]
        out.append((obs.copy(), reward, terminated, truncated, finals))
    venv.close()
    return out


@pytest.mark.parametrize("native", [False, True])
def test_vector_same_step_equals_the_single_env_wrapper_on_each_sub_env(
    cartpole_url: str, native: bool
) -> None:
    def make() -> gym.Env[Any, Any]:
        return OpenEnvEnv(cartpole_url)

    inner: VectorEnv
    if native:
        inner = OpenEnvVectorEnv(
            None, 3, base_url=cartpole_url, autoreset_mode=AutoresetMode.SAME_STEP
        )
    else:
        inner = SyncVectorEnv([make] * 3, autoreset_mode=AutoresetMode.SAME_STEP)
    vector = _run(VectorTerminateWhen(inner, [BOUND]), 40)
    per_env = _run(
        SyncVectorEnv(
            [lambda: TerminateWhen(make(), [BOUND])] * 3, autoreset_mode=AutoresetMode.SAME_STEP
        ),
        40,
    )
    cut = 0
    for ours, theirs in zip(vector, per_env, strict=True):
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
        for k in (1, 2, 3):
            np.testing.assert_array_equal(ours[k], theirs[k])
        for i in range(3):
            if theirs[3][i]:
                cut += 1
                assert abs(ours[4][i][0]) > 0.04  # the final observation crossed the bound
                assert np.abs(ours[0][i]).max() <= 0.05  # a fresh reset observation
                np.testing.assert_allclose(ours[4][i], theirs[4][i], rtol=1e-6)
    assert cut >= 6


def test_vector_disabled_mode_leaves_the_reset_to_the_caller(cartpole_url: str) -> None:
    inner = SyncVectorEnv(
        [lambda: OpenEnvEnv(cartpole_url)] * 2, autoreset_mode=AutoresetMode.DISABLED
    )
    venv = VectorTerminateWhen(inner, [BOUND])
    try:
        venv.reset(seed=[0, 1])
        truncated = np.zeros(2, dtype=bool)
        while not truncated.any():
            obs, _, _, truncated, info = venv.step(np.array([1, 1]))
        assert info["_termination_condition"].tolist() == truncated.tolist()
        ended = truncated.copy()
        obs, _ = venv.reset(options={"reset_mask": ended})
        assert np.abs(obs[ended]).max() <= 0.05
    finally:
        venv.close()


def test_bad_conditions_are_typed_errors(cartpole_url: str) -> None:
    with pytest.raises(WrapperConfigError, match="NEXT_STEP"):
        VectorTerminateWhen(SyncVectorEnv([lambda: gym.make("CartPole-v1")]), [BOUND])
    with pytest.raises(WrapperConfigError, match="out of range"):
        TerminateWhen(gym.make("CartPole-v1"), [FieldBound("observation", 9, high=1.0)])
    with pytest.raises(WrapperConfigError, match="low, high or both"):
        FieldBound("observation", 0)
    with pytest.raises(WrapperConfigError, match="low must be <= high"):
        FieldBound("observation", 0, low=1.0, high=0.0)
    with pytest.raises(WrapperConfigError, match="positive int"):
        NoRewardFor(steps=0)
    with pytest.raises(WrapperConfigError, match="at least one condition"):
        TerminateWhen(gym.make("CartPole-v1"), [])
