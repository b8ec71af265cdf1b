"""Faults with real server processes: a killed or frozen server gives a typed SubEnvError
naming the sub-env and URL (never a hang); reconnect=True reopens and reports truncation."""

from __future__ import annotations

import functools
import os
import signal
from collections.abc import Iterator

import httpx
import numpy as np
import pytest

from openenv_gym import OpenEnvVectorEnv
from openenv_gym.errors import (
    ConnectionLostError,
    ReplyTimeoutError,
    ServerConnectionError,
    SubEnvError,
)
from openenv_gym.providers.local import LocalServerProcess
from openenv_gym.vector import RECONNECTED_KEY
from openenv_gym.vector import connections as fleet_module
from openenv_gym.vector.backoff import Backoff

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def server_process() -> Iterator[LocalServerProcess]:
    """A CartPole server in a child process the test may kill."""
    with LocalServerProcess(["gymnasium", "--env-id", "CartPole-v1"]) as server:
        yield server  # type: ignore[misc]


def _pid(server: LocalServerProcess) -> int:
    assert server.pid is not None
    return server.pid


def test_killed_server_raises_sub_env_error(server_process: LocalServerProcess) -> None:
    url = server_process.base_url
    assert url is not None
    envs = OpenEnvVectorEnv(None, 3, base_url=url, reply_timeout=30)
    try:
        envs.reset(seed=0)
        envs.step(np.array([0, 1, 0]))
        os.kill(_pid(server_process), signal.SIGKILL)
        with pytest.raises(SubEnvError) as caught:
            envs.step(np.array([1, 1, 1]))
        error = caught.value
        assert isinstance(error, ServerConnectionError)
        assert error.index == 0
        assert error.url == envs.base_urls[0].replace("http://", "ws://") + "/ws"
        assert "sub-env 0" in str(error)
        assert "reconnect=True" in str(error)
        assert isinstance(error.__cause__, ConnectionLostError)
        with pytest.raises(SubEnvError):  # the session stays broken, and says so again
            envs.step(np.array([1, 1, 1]))
    finally:
        envs.close()


def test_frozen_server_times_out(server_process: LocalServerProcess) -> None:
    url = server_process.base_url
    assert url is not None
    envs = OpenEnvVectorEnv(None, 2, base_url=url, reply_timeout=1.0)
    pid = _pid(server_process)
    try:
        envs.reset(seed=0)
        os.kill(pid, signal.SIGSTOP)
        try:
            with pytest.raises(SubEnvError, match="sub-env 0") as caught:
                envs.step(np.array([0, 1]))
            assert isinstance(caught.value.__cause__, ReplyTimeoutError)
        finally:
            os.kill(pid, signal.SIGCONT)
    finally:
        envs.close()


def test_reconnect_restarts_the_embedded_server() -> None:
    envs = OpenEnvVectorEnv("openenv/CartPole-v1", 2, reconnect=True, reply_timeout=30)
    try:
        (server,) = envs.servers
        assert isinstance(server, LocalServerProcess)
        old_pid, old_url = _pid(server), envs.base_urls[0]
        envs.reset(seed=0)
        envs.step(np.array([0, 1]))
        # The embedded server may have workers (it requires its provider's token).
        for pid in {old_pid, *_worker_pids(old_url, server.token)}:
            os.kill(pid, signal.SIGKILL)
        obs, rewards, terminations, truncations, infos = envs.step(np.array([1, 0]))
        # The broken episodes end as truncated, and info says why.
        assert truncations.tolist() == [True, True]
        assert terminations.tolist() == [False, False]
        assert rewards.tolist() == [0.0, 0.0]
        assert infos[RECONNECTED_KEY].tolist() == [True, True]
        assert infos[f"_{RECONNECTED_KEY}"].tolist() == [True, True]
        assert obs.shape == (2, 4)
        # A new server process, at a new URL, serves both sessions.
        assert _pid(server) != old_pid
        assert envs.base_urls[0] != old_url
        assert envs.base_urls == [server.base_url] * 2
        # NEXT_STEP: the next step resets the sub-envs on the new sessions, then play goes on.
        obs, rewards, terminations, truncations, infos = envs.step(np.array([1, 0]))
        assert rewards.tolist() == [0.0, 0.0]
        assert not truncations.any()
        assert RECONNECTED_KEY not in infos
        obs, rewards, *_ = envs.step(np.array([1, 0]))
        assert rewards.tolist() == [1.0, 1.0]
    finally:
        envs.close()
    assert server.pid is None or not _alive(server)


def test_reconnect_to_a_dead_server_it_does_not_own_fails_clearly(
    server_process: LocalServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Retried for a shortened budget (tests/vector/test_reconnect_backoff.py covers it).
    monkeypatch.setattr(fleet_module, "Backoff", functools.partial(Backoff, budget=1.0))
    url = server_process.base_url
    assert url is not None
    envs = OpenEnvVectorEnv(None, 2, base_url=url, reconnect=True, connect_timeout=2)
    try:
        envs.reset(seed=0)
        os.kill(_pid(server_process), signal.SIGKILL)
        with pytest.raises(SubEnvError, match="reconnecting failed") as caught:
            envs.step(np.array([0, 1]))
        assert caught.value.index == 0
    finally:
        envs.close()


def _worker_pids(url: str, token: str | None = None) -> set[int]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return {
        httpx.get(url + "/capacity", headers=headers, timeout=10).json()["pid"] for _ in range(24)
    }


def _alive(server: LocalServerProcess) -> bool:
    try:
        os.kill(_pid(server), 0)
    except OSError:
        return False
    return True
