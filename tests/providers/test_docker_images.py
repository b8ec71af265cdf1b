"""The atari and chess images against a real engine, through the registered ids.

The images are built when missing (``openenv-gym build`` builds them all).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.client import fetch_schema
from openenv_gym.errors import AuthenticationError
from openenv_gym.providers import DockerProvider
from tests.conftest import image


@pytest.mark.slow
def test_atari_image_serves_the_official_atari_schema(docker_engine: Any) -> None:
    tag = image(docker_engine, "atari")
    with DockerProvider.serving(tag, ["atari"]) as provider:
        assert provider.base_url is not None
        schema = fetch_schema(provider.base_url)
    assert "action_id" in schema["action"]["properties"]
    assert {"screen", "legal_actions", "lives"} <= set(schema["observation"]["properties"])


@pytest.mark.slow
def test_chess_image_serves_the_official_chess_schema(docker_engine: Any) -> None:
    tag = image(docker_engine, "chess")
    with DockerProvider.serving(tag, ["chess"]) as provider:
        assert provider.base_url is not None
        schema = fetch_schema(provider.base_url)
    assert "move" in schema["action"]["properties"]
    assert {"fen", "legal_moves"} <= set(schema["observation"]["properties"])


@pytest.mark.slow
def test_atari_id_in_a_container_matches_the_child_process_server(docker_engine: Any) -> None:
    tag = image(docker_engine, "atari")
    actions = [0, 1, 2, 3, 4, 5] * 5
    frames = []
    for extra in ({"image": tag}, {}):
        env = gym.make("openenv/Atari-v0", game="pong", repeat_action_probability=0.0, **extra)
        try:
            obs, _ = env.reset(seed=3)
            assert obs.shape == (210, 160, 3)
            assert obs.dtype == np.uint8
            for action in actions:
                obs, *_ = env.step(action)
            frames.append(obs)
        finally:
            env.close()
    np.testing.assert_array_equal(frames[0], frames[1])


@pytest.mark.slow
def test_chess_id_in_a_container_with_a_token(docker_engine: Any) -> None:
    tag = image(docker_engine, "chess")
    env = gym.make("openenv/Chess-v0", opponent="material", image=tag, token="s3cret")
    try:
        _, info = env.reset(seed=0)
        assert "fen" in info
        mask = env.unwrapped.action_masks()  # type: ignore[attr-defined]
        _, _, terminated, truncated, _ = env.step(int(np.flatnonzero(mask)[0]))
        assert not terminated
        assert not truncated
        with pytest.raises(AuthenticationError):
            gym.make("openenv/Chess-v0", base_url=env.unwrapped.base_url, token="wrong")  # type: ignore[attr-defined]
    finally:
        env.close()


@pytest.mark.slow
def test_vector_env_runs_one_container_per_group_of_sessions(docker_engine: Any) -> None:
    from openenv_gym.providers.docker import LABEL
    from openenv_gym.vector import OpenEnvVectorEnv

    tag = image(docker_engine, "gymnasium")
    venv = OpenEnvVectorEnv("openenv/CartPole-v1", num_envs=4, image=tag, sessions_per_server=2)
    try:
        ids = {server.container_id for server in venv.servers}  # type: ignore[attr-defined]
        assert len(ids) == 2
        running = {
            c.id
            for c in docker_engine.containers.list(filters={"label": LABEL}, ignore_removed=True)
        }
        assert ids <= running
        obs, _ = venv.reset(seed=1)
        assert obs.shape == (4, 4)
        venv.step(np.ones(4, dtype=np.int64))
    finally:
        venv.close()
    left = {
        c.id
        for c in docker_engine.containers.list(
            all=True, filters={"label": LABEL}, ignore_removed=True
        )
    }
    assert not ids & left
