"""Every embedded server requires a fresh random token unless the user gave one, and every
client path of the package sends it (issue 27, case 8): another local client without it is
refused. Real child servers on 127.0.0.1."""

from __future__ import annotations

import gymnasium as gym
import httpx
import numpy as np
import pytest

from openenv_gym import OpenEnvEnv, OpenEnvVectorEnv
from openenv_gym.client import TOKEN_ENV_VAR
from openenv_gym.errors import AuthenticationError
from openenv_gym.providers import LocalServerProcess, embedded_server_token
from openenv_gym.vector.pool import make_pool

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture(autouse=True)
def no_token_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV_VAR, raising=False)


def _refuses_strangers(url: str) -> None:
    """A client of another user (it knows the URL, not the token) gets nothing."""
    assert httpx.get(url + "/health", timeout=10).status_code == 200  # only /health is open
    assert httpx.get(url + "/schema", timeout=10).status_code == 401
    with pytest.raises(AuthenticationError):
        OpenEnvEnv(url)


def test_an_embedded_env_s_server_refuses_a_client_without_its_token() -> None:
    with gym.make("openenv/CartPole-v1") as env:
        provider = env.unwrapped.provider
        assert isinstance(provider, LocalServerProcess)
        assert provider.token is not None
        assert len(provider.token) >= 43  # 32 random bytes
        env.reset(seed=0)
        env.step(env.action_space.sample())  # ours sends it
        _refuses_strangers(env.unwrapped.base_url)
        with OpenEnvEnv(env.unwrapped.base_url, token=provider.token) as friend:
            friend.reset(seed=0)


def test_two_embedded_servers_get_different_tokens() -> None:
    with gym.make("openenv/CartPole-v1") as first, gym.make("openenv/CartPole-v1") as second:
        assert first.unwrapped.provider.token != second.unwrapped.provider.token


def test_a_token_the_user_gives_is_the_one_required() -> None:
    with gym.make("openenv/CartPole-v1", token="users-own-token") as env:
        assert env.unwrapped.provider.token == "users-own-token"
        env.reset(seed=0)
        headers = {"Authorization": "Bearer users-own-token"}
        url = env.unwrapped.base_url
        assert httpx.get(url + "/schema", headers=headers, timeout=10).status_code == 200


def test_the_environment_variable_is_used_before_a_random_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TOKEN_ENV_VAR, "from-the-environment")
    assert embedded_server_token() == "from-the-environment"
    assert embedded_server_token("given") == "given"
    monkeypatch.delenv(TOKEN_ENV_VAR)
    assert embedded_server_token() != embedded_server_token()


@pytest.mark.parametrize("encoding", ["auto", "json"], ids=["batch", "plain"])
def test_a_vector_env_s_sessions_send_the_token_of_every_server_it_started(
    encoding: str,
) -> None:
    envs = OpenEnvVectorEnv(
        "openenv/CartPole-v1", num_envs=4, sessions_per_server=2, encoding=encoding
    )
    try:
        assert len(envs.servers) == 2
        envs.reset(seed=0)
        envs.step(np.zeros(4, dtype=np.int64))
        for url in envs.base_urls[::2]:
            _refuses_strangers(url)
            with pytest.raises(AuthenticationError):
                OpenEnvVectorEnv(None, num_envs=1, base_url=url)
    finally:
        envs.close()


def test_a_pool_s_sessions_send_the_token() -> None:
    pool = make_pool("openenv/CartPole-v1", num_envs=2)
    try:
        pool.reset(seed=0)
        pool.send(np.zeros(2, dtype=np.int64))
        pool.recv()
        _refuses_strangers(pool.base_urls[0])
    finally:
        pool.close()


def test_an_sb3_vec_env_sends_the_token() -> None:
    pytest.importorskip("stable_baselines3")
    from openenv_gym.integrations.sb3 import OpenEnvVecEnv, make_vec_env

    venv = make_vec_env("openenv/CartPole-v1", n_envs=2, monitor=False)
    try:
        assert isinstance(venv, OpenEnvVecEnv)
        venv.reset()
        venv.step(np.zeros(2, dtype=np.int64))
        _refuses_strangers(venv.vector_env.base_urls[0])
    finally:
        venv.close()
