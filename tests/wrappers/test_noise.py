"""Action noise on real servers: distributions, correlation, seeding, vector streams, errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import SyncVectorEnv

from openenv_gym import OpenEnvEnv
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.errors import WrapperConfigError
from openenv_gym.server import ServerThread
from openenv_gym.wrappers import (
    ActionNoise,
    EpsilonRandom,
    GaussianNoise,
    OrnsteinUhlenbeckNoise,
    VectorActionNoise,
)


@pytest.fixture(scope="module")
def pendulum_url() -> Iterator[str]:
    with ServerThread(gymnasium_server("Pendulum-v1", max_sessions=16)) as server:
        yield server.url


class ActionTape(gym.Wrapper[Any, Any, Any, Any]):
    """Keeps the actions that reached the env (below the noise wrapper)."""

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        self.actions: list[Any] = []

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        self.actions.append(np.copy(action))
        return self.env.step(action)


def _noise_of(env: gym.Env[Any, Any], tape: ActionTape, steps: int, seed: int) -> np.ndarray:
    env.reset(seed=seed)
    clean = np.zeros(1, dtype=np.float32)
    for _ in range(steps):
        _, _, _, _, info = env.step(clean)
        np.testing.assert_array_equal(info["noise_free_action"], clean)
    return np.array(tape.actions[-steps:])[:, 0]


def test_gaussian_noise_has_its_sigma_and_is_seeded_by_reset(pendulum_url: str) -> None:
    tape = ActionTape(OpenEnvEnv(pendulum_url))
    env = ActionNoise(tape, GaussianNoise(sigma=0.2))
    try:
        first = _noise_of(env, tape, 300, seed=5)
        again = _noise_of(env, tape, 300, seed=5)
        other = _noise_of(env, tape, 300, seed=6)
    finally:
        env.close()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    assert abs(first.mean()) < 0.05
    assert 0.16 < first.std() < 0.24
    assert tape.actions[0].dtype == np.float32


def test_noisy_box_actions_are_clipped_to_the_bounds(pendulum_url: str) -> None:
    tape = ActionTape(OpenEnvEnv(pendulum_url))
    env = ActionNoise(tape, GaussianNoise(sigma=10.0))
    try:
        noise = _noise_of(env, tape, 100, seed=0)
    finally:
        env.close()
    assert noise.min() == -2.0
    assert noise.max() == 2.0


def test_ornstein_uhlenbeck_reverts_to_its_mean_and_restarts_each_episode(
    pendulum_url: str,
) -> None:
    tape = ActionTape(gym.wrappers.TimeLimit(OpenEnvEnv(pendulum_url), 10))
    env = ActionNoise(tape, OrnsteinUhlenbeckNoise(sigma=0.0, theta=0.5, dt=0.1, x0=1.0))
    try:
        env.reset(seed=0)
        for _ in range(10):
            env.step(np.zeros(1, dtype=np.float32))
        env.reset()
        env.step(np.zeros(1, dtype=np.float32))
    finally:
        env.close()
    noise = np.array(tape.actions)[:, 0]
    expected = 0.95 ** np.arange(1, 11)  # x += theta * (0 - x) * dt, from x0 = 1
    np.testing.assert_allclose(noise[:10], expected, rtol=1e-6)
    assert noise[10] == pytest.approx(0.95)  # restarted from x0 at the new episode


def test_ornstein_uhlenbeck_noise_is_correlated_in_time(pendulum_url: str) -> None:
    tape = ActionTape(OpenEnvEnv(pendulum_url))
    env = ActionNoise(tape, OrnsteinUhlenbeckNoise(sigma=0.3, clip=False))
    try:
        noise = _noise_of(env, tape, 400, seed=1)
    finally:
        env.close()
    white = np.random.default_rng(1).normal(size=400)
    assert np.corrcoef(noise[:-1], noise[1:])[0, 1] > 0.9
    assert abs(np.corrcoef(white[:-1], white[1:])[0, 1]) < 0.2


def test_epsilon_random_replaces_a_fraction_of_discrete_actions(cartpole_url: str) -> None:
    tape = ActionTape(OpenEnvEnv(cartpole_url))
    env = ActionNoise(tape, EpsilonRandom(epsilon=0.4))
    try:
        env.reset(seed=3)
        for _ in range(400):
            _, _, terminated, truncated, info = env.step(0)
            assert info["noise_free_action"] == 0
            if terminated or truncated:
                env.reset()
    finally:
        env.close()
    changed = np.mean(np.array(tape.actions) != 0)
    assert 0.13 < changed < 0.27  # epsilon / 2: a random pick is the same action half the time


def test_vector_noise_gives_each_sub_env_its_own_reproducible_stream(pendulum_url: str) -> None:
    def run() -> np.ndarray:
        tapes = [ActionTape(OpenEnvEnv(pendulum_url)) for _ in range(3)]
        venv = VectorActionNoise(
            SyncVectorEnv([lambda t=t: t for t in tapes]), GaussianNoise(sigma=0.5)
        )
        venv.reset(seed=9)
        clean = np.zeros((3, 1), dtype=np.float32)
        for _ in range(20):
            _, _, _, _, info = venv.step(clean)
            np.testing.assert_array_equal(info["noise_free_action"], clean)
        venv.close()
        return np.array([np.array(t.actions)[:, 0] for t in tapes])

    first = run()
    second = run()
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first[0], first[1])
    # Sub-env 0 of a vector env seeded 9 draws what a single env reset with seed 9 draws.
    tape = ActionTape(OpenEnvEnv(pendulum_url))
    single = ActionNoise(tape, GaussianNoise(sigma=0.5))
    try:
        np.testing.assert_allclose(_noise_of(single, tape, 20, seed=9), first[0], rtol=1e-6)
    finally:
        single.close()


def test_noise_that_does_not_fit_the_action_space_is_refused() -> None:
    with pytest.raises(WrapperConfigError, match="needs a Box action space"):
        ActionNoise(gym.make("CartPole-v1"), GaussianNoise(sigma=0.1))
    with pytest.raises(WrapperConfigError, match="Discrete or MultiDiscrete"):
        ActionNoise(gym.make("Pendulum-v1"), EpsilonRandom(epsilon=0.1))
    with pytest.raises(WrapperConfigError, match="does not fit the action shape"):
        ActionNoise(gym.make("Pendulum-v1"), GaussianNoise(sigma=[0.1, 0.2]))
    with pytest.raises(WrapperConfigError, match="epsilon must be in"):
        EpsilonRandom(epsilon=1.5)
    with pytest.raises(WrapperConfigError, match="sigma must be >= 0"):
        OrnsteinUhlenbeckNoise(sigma=-1.0)
    multi = spaces.MultiDiscrete([3, 4])
    noisy = EpsilonRandom(1.0).apply(np.array([0, 0]), multi, np.random.default_rng(0))
    assert noisy in multi
