"""``compression=`` on the public entry points, and the official package with it on and off.

The switch is accepted by ``gym.make``, ``gym.make_vec`` and the SB3 ``VecEnv``; forced on,
a vector env's observations are exactly those of an uncompressed one. Against an official
server (no batch subprotocol, so nothing to agree) every value plays exactly as raw ALE;
an official client gets plain JSON from our server while one of our clients' connections
on it is compressed. A single env forced on gets the same screens in a fraction of the bytes
(counted by the link proxy).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import gymnasium as gym
import numpy as np
import pytest
from openenv.core import GenericEnvClient

from openenv_gym.bench.link_proxy import LinkProxy
from openenv_gym.envs.atari import atari_server
from openenv_gym.errors import UnknownCompressionError
from openenv_gym.integrations.sb3 import make_vec_env
from openenv_gym.server import ServerThread
from tests.envs.official_atari import official_atari_server

ACTIONS = [0, 2, 3, 1, 4, 5, 2, 2, 3, 0]


@pytest.fixture(scope="module")
def pong_url() -> Iterator[str]:
    with ServerThread(
        atari_server("pong", repeat_action_probability=0.0, max_sessions=16)
    ) as server:
        yield server.url


@pytest.fixture(scope="module")
def official_pong_url() -> Iterator[str]:
    with official_atari_server() as url:
        yield url


def play_vector(env: Any, seed: int = 5) -> list[np.ndarray]:
    observations = [env.reset(seed=seed)[0]]
    for action in ACTIONS:
        observations.append(env.step(np.full(env.num_envs, action))[0])
    return observations


def test_make_vec_with_compression_forced_on_gives_the_same_observations(pong_url: str) -> None:
    runs = {}
    for compression in ("zstd", "off", "auto"):
        env = gym.make_vec(
            "openenv/Atari-v0", num_envs=2, base_url=pong_url, compression=compression
        )
        try:
            runs[compression] = play_vector(env)
        finally:
            env.close()
    for packed, raw, auto in zip(runs["zstd"], runs["off"], runs["auto"], strict=True):
        np.testing.assert_array_equal(packed, raw)
        np.testing.assert_array_equal(auto, raw)


def test_the_sb3_vec_env_takes_the_switch(pong_url: str) -> None:
    vec = make_vec_env(
        "openenv/Atari-v0", n_envs=2, env_kwargs={"base_url": pong_url, "compression": "zstd"}
    )
    try:
        obs = vec.reset()
        assert isinstance(obs, np.ndarray)
        assert obs.shape == (2, 210, 160, 3)
        vec.step_async(np.array([2, 3]))
        stepped, reward, done, _infos = vec.step_wait()
        assert isinstance(stepped, np.ndarray)
        assert stepped.shape == (2, 210, 160, 3)
        assert reward.shape == done.shape == (2,)
    finally:
        vec.close()


def test_an_unknown_compression_is_a_clear_error(pong_url: str) -> None:
    with pytest.raises(UnknownCompressionError, match="'auto', 'zstd' or 'off'"):
        gym.make("openenv/Atari-v0", base_url=pong_url, compression="lz4")
    with pytest.raises(UnknownCompressionError, match="'auto', 'zstd' or 'off'"):
        gym.make_vec("openenv/Atari-v0", num_envs=2, base_url=pong_url, compression="lz4")


@pytest.mark.parametrize("compression", ["zstd", "off", "auto"])
def test_our_clients_against_an_official_server_with_compression(
    official_pong_url: str, compression: str
) -> None:
    single = gym.make("openenv/Atari-v0", base_url=official_pong_url, compression=compression)
    try:
        first, _ = single.reset(seed=9)
        steps = [single.step(action)[0] for action in ACTIONS]
    finally:
        single.close()
    # The official server holds one session: the vector env of one sub-env comes after.
    vector = gym.make_vec(
        "openenv/Atari-v0", num_envs=1, base_url=official_pong_url, compression=compression
    )
    try:
        observations = play_vector(vector, seed=9)
    finally:
        vector.close()
    np.testing.assert_array_equal(observations[0][0], first)
    for ours, theirs in zip(observations[1:], steps, strict=True):
        np.testing.assert_array_equal(ours[0], theirs)


def test_the_official_client_gets_json_beside_a_compressed_connection(pong_url: str) -> None:
    ours = gym.make_vec("openenv/Atari-v0", num_envs=2, base_url=pong_url, compression="zstd")
    client: Any = GenericEnvClient(base_url=pong_url).sync()
    try:
        ours.reset(seed=1)
        result = client.reset(seed=2)
        expected = gym.make("ALE/Pong-v5", repeat_action_probability=0.0)
        try:
            screen, _ = expected.reset(seed=2)
            got = np.asarray(result.observation["screen"], np.uint8).reshape(210, 160, 3)
            np.testing.assert_array_equal(got, screen)
            for action in ACTIONS[:4]:
                ours.step(np.full(2, action))
                result = client.step({"action_id": action})
                screen, reward, *_ = expected.step(action)
                got = np.asarray(result.observation["screen"], np.uint8).reshape(210, 160, 3)
                np.testing.assert_array_equal(got, screen)
                assert result.reward == reward
        finally:
            expected.close()
    finally:
        client.close()
        ours.close()


def test_a_single_env_gets_the_same_screens_in_far_fewer_bytes(pong_url: str) -> None:
    target = urlsplit(pong_url)
    seen: dict[str, list[np.ndarray]] = {}
    down: dict[str, int] = {}
    for compression in ("off", "zstd"):
        with LinkProxy((target.hostname, target.port), one_way_delay=0.0005) as proxy:
            host, port = proxy.address
            env = gym.make(
                "openenv/Atari-v0", base_url=f"http://{host}:{port}", compression=compression
            )
            try:
                before = proxy.bytes_down
                seen[compression] = [env.reset(seed=4)[0]]
                seen[compression] += [env.step(action)[0] for action in ACTIONS]
                down[compression] = proxy.bytes_down - before
            finally:
                env.close()
    for raw, packed in zip(seen["off"], seen["zstd"], strict=True):
        np.testing.assert_array_equal(raw, packed)
    assert down["off"] > 11 * 100_800
    assert down["zstd"] * 20 < down["off"]
