"""``serve --workers K``: K processes on one port, one session budget across them.
Real child processes on 127.0.0.1."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from openenv_gym import OpenEnvEnv, OpenEnvVectorEnv
from openenv_gym.cli import main
from openenv_gym.errors import CapacityReachedError, InsufficientCapacityError
from openenv_gym.providers.local import LocalServerProcess
from openenv_gym.server.workers import resolve_workers
from openenv_gym.vector.opening import SPREAD_SECONDS, worker_connections

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
MAX_SESSIONS = 16


@pytest.fixture(scope="module")
def two_workers() -> Iterator[LocalServerProcess]:
    args = ["gymnasium", "--env-id", "CartPole-v1", "--workers", "2"]
    with LocalServerProcess([*args, "--max-sessions", str(MAX_SESSIONS)]) as server:
        yield server  # type: ignore[misc]


@pytest.fixture(scope="module")
def two_atari_workers() -> Iterator[LocalServerProcess]:
    args = ["atari", "--game", "pong", "--obs-type", "ram", "--workers", "2"]
    with LocalServerProcess([*args, "--max-sessions", str(MAX_SESSIONS)]) as server:
        yield server  # type: ignore[misc]


def _capacities(url: str, tries: int = 24) -> list[dict[str, Any]]:
    return [httpx.get(url + "/capacity", timeout=10).json() for _ in range(tries)]


def _worker_pids(server: LocalServerProcess) -> set[int]:
    assert server.base_url is not None
    pids = {c["pid"] for c in _capacities(server.base_url)}
    assert server.pid not in pids  # the parent only supervises
    return pids


def test_two_processes_serve_one_port(two_workers: LocalServerProcess) -> None:
    assert len(_worker_pids(two_workers)) == 2


def test_sessions_spread_over_workers_and_budget_is_shared(
    two_atari_workers: LocalServerProcess,
) -> None:
    url = two_atari_workers.base_url
    assert url is not None
    pids = sorted(_worker_pids(two_atari_workers))
    # An emulator step costs far more than a connection: every worker is worth one.
    costs = [c["step_seconds"] for c in _capacities(url)]
    assert all(isinstance(cost, float) and cost > 0 for cost in costs)
    assert all(worker_connections(MAX_SESSIONS, 2, cost) == 2 for cost in costs)
    envs = OpenEnvVectorEnv(None, MAX_SESSIONS, base_url=url)
    try:
        envs.reset(seed=0)
        # One batch connection per worker: both PIDs serve sessions.
        assert envs.batched
        assert sorted(int(c.worker or 0) for c in envs.connections) == pids
        # Every worker reports the same, whole-server count.
        assert {(c["active_sessions"], c["max_sessions"]) for c in _capacities(url, 20)} == {
            (MAX_SESSIONS, MAX_SESSIONS)
        }
        with pytest.raises(InsufficientCapacityError, match="accepts 0"):
            OpenEnvVectorEnv(None, 1, base_url=url)
        # Past the capacity check, whichever worker gets the connection refuses it.
        extra = OpenEnvEnv(url)
        try:
            with pytest.raises(CapacityReachedError):
                extra.reset(seed=0)
        finally:
            extra.close()
    finally:
        envs.close()
    deadline = time.monotonic() + 10
    while httpx.get(url + "/capacity").json()["active_sessions"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert httpx.get(url + "/capacity").json()["active_sessions"] == 0


def test_cheap_sessions_share_one_worker(two_workers: LocalServerProcess) -> None:
    url = two_workers.base_url
    assert url is not None
    # Two CartPole sessions step in far less than a connection costs (SPREAD_SECONDS).
    costs = [c["step_seconds"] for c in _capacities(url)]
    assert all(isinstance(cost, float) and 0 < cost < SPREAD_SECONDS / 2 for cost in costs)
    envs = OpenEnvVectorEnv(None, 2, base_url=url)
    try:
        envs.reset(seed=0)
        envs.step(envs.action_space.sample())
        assert envs.batched
        assert len(envs.connections) == 1
    finally:
        envs.close()


def test_stopping_the_parent_stops_the_workers() -> None:
    server = LocalServerProcess(["gymnasium", "--env-id", "CartPole-v1", "--workers", "2"])
    server.start()
    pids = _worker_pids(server)
    server.stop()
    deadline = time.monotonic() + 15
    while any(os.path.exists(f"/proc/{pid}") for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_running(pid) for pid in pids)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("value", ["0", "-1", "many"])
def test_bad_workers_value_is_a_usage_error(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["serve", "gymnasium", "--env-id", "CartPole-v1", "--workers", value])
    assert code == 2
    assert "--workers" in capsys.readouterr().err


def test_resolve_workers() -> None:
    assert resolve_workers("auto") >= 1
    assert resolve_workers("3") == 3
    with pytest.raises(ValueError, match="positive"):
        resolve_workers("0")


def test_unix_sockets_one_per_worker(tmp_path: Any) -> None:
    from openenv_gym.client import AsyncSession, run_sync

    base = str(tmp_path / "s")
    args = ["gymnasium", "--env-id", "CartPole-v1", "--workers", "2", "--unix-socket", base]
    with LocalServerProcess(args) as server:
        assert isinstance(server, LocalServerProcess)
        assert server.unix_sockets == [f"{base}.0", f"{base}.1"]
        assert server.base_url is not None
        sessions = [
            run_sync(AsyncSession.open(server.base_url, unix_path=path))
            for path in server.unix_sockets
        ]
        try:
            for session in sessions:
                reply = run_sync(session.request({"type": "reset", "data": {"seed": 0}}))
                assert reply.observation["observation"][0] == pytest.approx(0.0137, abs=1e-3)
            assert httpx.get(server.base_url + "/capacity").json()["active_sessions"] == 2
        finally:
            for session in sessions:
                run_sync(session.close())
