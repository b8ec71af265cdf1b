"""The native vector env on our Atari server, and its binary observation path."""

from __future__ import annotations

import os
import time

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("ale_py")

import openenv_gym
from openenv_gym.vector import OpenEnvVectorEnv


@pytest.mark.slow
def test_make_vec_atari_is_native_and_matches_single_envs() -> None:
    actions = np.array([[0, 1], [2, 3], [4, 5], [1, 0]] * 4)
    venv = gym.make_vec("openenv/Atari-v0", num_envs=2, game="pong", repeat_action_probability=0.0)
    try:
        assert isinstance(venv, OpenEnvVectorEnv)
        assert venv.single_observation_space == gym.spaces.Box(0, 255, (210, 160, 3), np.uint8)
        assert venv.single_action_space == gym.spaces.Discrete(6)
        obs, _ = venv.reset(seed=[5, 6])
        for step_actions in actions:
            obs, *_ = venv.step(step_actions)
    finally:
        venv.close()
    for i, seed in enumerate((5, 6)):
        env = gym.make("openenv/Atari-v0", game="pong", repeat_action_probability=0.0)
        try:
            single, _ = env.reset(seed=seed)
            for step_actions in actions:
                single, *_ = env.step(int(step_actions[i]))
        finally:
            env.close()
        np.testing.assert_array_equal(obs[i], single)


@pytest.mark.parametrize("encoding", ["json", "binary"])
def test_vector_cartpole_encodings_match_raw_gymnasium(encoding: str) -> None:
    venv = OpenEnvVectorEnv("openenv/CartPole-v1", num_envs=3, encoding=encoding)
    raw = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 3)
    try:
        assert all(s.binary == (encoding == "binary") for s in venv.connections)
        obs, _ = venv.reset(seed=11)
        expected, _ = raw.reset(seed=11)
        np.testing.assert_array_equal(obs, expected)
        rng = np.random.default_rng(0)
        for _ in range(60):
            actions = rng.integers(0, 2, size=3)
            obs, rewards, terminated, truncated, _ = venv.step(actions)
            e_obs, e_rewards, e_terminated, e_truncated, _ = raw.step(actions)
            np.testing.assert_array_equal(obs, e_obs)
            np.testing.assert_array_equal(rewards, e_rewards)
            np.testing.assert_array_equal(terminated, e_terminated)
            np.testing.assert_array_equal(truncated, e_truncated)
    finally:
        venv.close()
        raw.close()


def test_unknown_vector_encoding_is_a_usage_error() -> None:
    with pytest.raises(openenv_gym.errors.VectorUsageError, match="encoding"):
        OpenEnvVectorEnv("openenv/CartPole-v1", num_envs=2, encoding="msgpack")


def test_sessions_per_server_starts_one_embedded_server_per_group() -> None:
    venv = OpenEnvVectorEnv("openenv/CartPole-v1", num_envs=5, sessions_per_server=2)
    try:
        servers = venv.servers
        assert len(servers) == 3
        pids = {server.pid for server in servers}  # type: ignore[attr-defined]
        assert len(pids) == 3
        assert len(set(venv.base_urls)) == 3
        venv.reset(seed=0)
        _, rewards, *_ = venv.step(np.zeros(5, dtype=np.int64))
        np.testing.assert_array_equal(rewards, np.ones(5))
    finally:
        venv.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"sessions_per_server": 0}, "positive int"),
        ({"sessions_per_server": "2"}, "positive int"),
        ({"sessions_per_server": 2, "base_url": "http://127.0.0.1:9"}, "one or the other"),
    ],
)
def test_bad_sessions_per_server_is_a_usage_error(kwargs: dict, match: str) -> None:
    with pytest.raises(openenv_gym.errors.VectorUsageError, match=match):
        OpenEnvVectorEnv("openenv/CartPole-v1", num_envs=4, **kwargs)


@pytest.mark.slow
def test_frames_travel_through_shared_memory_on_one_machine_and_are_removed() -> None:
    from openenv_gym.envs.atari import atari_server
    from openenv_gym.server.thread import ServerThread
    from openenv_gym.wire.shared_memory import SHM_DIR

    if SHM_DIR is None:
        pytest.skip("this system has no /dev/shm")

    def server_files() -> set[str]:
        return {n for n in os.listdir(SHM_DIR) if n.startswith(f"openenv-gym-{os.getpid()}-")}

    with ServerThread(atari_server("pong", repeat_action_probability=0.0)) as server:
        venv = OpenEnvVectorEnv("openenv/Atari-v0", 2, base_url=server.url, game="pong")
        try:
            obs, _ = venv.reset(seed=3)
            for _ in range(5):
                obs, *_ = venv.step(np.array([2, 3]))
            assert server_files(), "a batch of two Atari frames should use shared memory"
        finally:
            venv.close()
        single = gym.make("openenv/Atari-v0", base_url=server.url, game="pong")
        try:
            expected, _ = single.reset(seed=3)
            for _ in range(5):
                expected, *_ = single.step(2)
        finally:
            single.close()
        np.testing.assert_array_equal(obs[0], expected)
        deadline = time.monotonic() + 10
        while server_files() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not server_files()
