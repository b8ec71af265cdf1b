"""Our clients keep their sessions under the shortest ping settings a server accepts
(issue 34, item 3): idle between steps, every kind of env answers ``--ping-interval 1
--ping-timeout 1``; ``serve`` refuses shorter settings, saying why."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym import OpenEnvEnv
from openenv_gym.cli import main
from openenv_gym.client import keepalive
from openenv_gym.providers.local import LocalServerProcess
from openenv_gym.server.heartbeat import MIN_PING_SECONDS

#: Seconds each env sits idle: four ping intervals, more than interval + timeout.
IDLE = 4.0


def test_the_keeper_answers_within_the_shortest_ping_timeout() -> None:
    # A ping comes at least one interval after the last send; the keeper reads within its
    # idle time and one period, before the shortest timeout runs out.
    assert keepalive.KEEPALIVE_IDLE < MIN_PING_SECONDS
    assert keepalive.KEEPALIVE_IDLE + keepalive.KEEPALIVE_PERIOD < MIN_PING_SECONDS


@pytest.mark.parametrize("flag", ["--ping-interval", "--ping-timeout"])
def test_serve_refuses_pings_its_clients_cannot_answer(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:  # were the flag let through, serve fails here, not hangs
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        args = ["serve", "gymnasium", "--env-id", "CartPole-v1", "--port", port, flag, "0.5"]
        assert main(args) == 2
    err = capsys.readouterr().err
    assert "expected at least 1 s (openenv-gym clients answer the pings" in err
    assert f"got '0.5': use {flag} 1" in err


@pytest.fixture(scope="module")
def short_ping_server() -> Iterator[str]:
    """``openenv-gym serve gymnasium ... --ping-interval 1 --ping-timeout 1`` (a process)."""
    pings = ["--ping-interval", "1", "--ping-timeout", "1"]
    with LocalServerProcess(["gymnasium", "--env-id", "CartPole-v1", *pings]) as server:
        assert server.base_url is not None
        yield server.base_url


@pytest.mark.slow
def test_a_single_env_idle_between_steps_keeps_its_session(short_ping_server: str) -> None:
    with OpenEnvEnv(short_ping_server) as env:
        env.reset(seed=0)
        for _ in range(2):
            time.sleep(IDLE)  # a learner training between steps
            env.step(env.action_space.sample())


@pytest.mark.slow
def test_a_vector_env_idle_between_steps_keeps_its_sessions(short_ping_server: str) -> None:
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=3, base_url=short_ping_server)
    try:
        envs.reset(seed=0)
        time.sleep(IDLE)
        envs.step(np.zeros(3, dtype=np.int64))
    finally:
        envs.close()


@pytest.mark.slow
def test_a_pool_idle_between_recv_and_send_keeps_its_sessions(short_ping_server: str) -> None:
    pool = openenv_gym.make_pool(None, 4, batch_size=2, base_url=short_ping_server)
    try:
        pool.async_reset(seed=0)
        for _ in range(2):
            *_, info = pool.recv()
            time.sleep(IDLE)  # the other two sessions' replies wait unread meanwhile
            pool.send(np.zeros(2, dtype=np.int64), info["env_id"])
        pool.recv()
    finally:
        pool.close()
