"""The openenv/... ids: registered on import, and reachable without the import."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import gymnasium as gym
import pytest

import openenv_gym
from openenv_gym.registration import register_all


@pytest.mark.parametrize(
    "env_id",
    [f"openenv/{i}" for i in openenv_gym.SERVED_GYMNASIUM_IDS]
    + ["openenv/Gymnasium-v0", "openenv/Remote-v0"],
)
def test_ids_are_registered(env_id: str) -> None:
    assert env_id in gym.registry


def test_register_envs_is_idempotent() -> None:
    ours = {i: spec for i, spec in gym.registry.items() if i.startswith("openenv/")}
    assert "openenv/CartPole-v1" in ours
    register_all()
    register_all()
    after = {i: spec for i, spec in gym.registry.items() if i.startswith("openenv/")}
    assert after.keys() == ours.keys()
    # The same spec objects: a second registration neither replaces nor duplicates one, and
    # the vector entry points set on import stay.
    assert all(after[i] is spec for i, spec in ours.items())
    assert after["openenv/CartPole-v1"].vector_entry_point is not None


def test_module_prefixed_id_works_without_importing_the_package() -> None:
    # A fresh interpreter (as in a spawned worker) that never imports openenv_gym itself.
    code = textwrap.dedent(
        """
        import sys, gymnasium as gym
        assert "openenv_gym" not in sys.modules
        env = gym.make("openenv_gym:openenv/CartPole-v1")
        obs, info = env.reset(seed=0)
        print("OBS", obs.shape, obs.dtype)
        env.close()
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "OBS (4,) float32" in result.stdout


def test_served_pendulum_has_a_continuous_action_space() -> None:
    env = gym.make("openenv/Pendulum-v1")
    try:
        raw = gym.make("Pendulum-v1")
        assert env.action_space == raw.action_space
        assert env.observation_space == raw.observation_space
        obs, _ = env.reset(seed=1)
        ref, _ = raw.reset(seed=1)
        assert (obs == ref).all()
        action = env.action_space.sample()
        assert env.step(action)[1] == raw.step(action)[1]
    finally:
        env.close()
