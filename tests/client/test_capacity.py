"""Capacity before opening a vector env's sessions: our servers' ``GET /capacity`` and the
official server's one-session default, found by opening sessions. Real servers on 127.0.0.1."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import httpx
import pytest

from openenv_gym import OpenEnvVectorEnv
from openenv_gym.client.capacity import fetch_capacity
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.errors import InsufficientCapacityError
from openenv_gym.server import ServerThread
from tests.official_peer import serve_official_app


@pytest.fixture
def two_small_servers() -> Iterator[tuple[ServerThread, ServerThread]]:
    with (
        ServerThread(gymnasium_server("CartPole-v1", max_sessions=2)) as a,
        ServerThread(gymnasium_server("CartPole-v1", max_sessions=3)) as b,
    ):
        yield a, b


def test_capacity_route_counts_sessions(two_small_servers: tuple[ServerThread, ...]) -> None:
    a, _ = two_small_servers
    body = httpx.get(a.url + "/capacity").json()
    cost = body.pop("step_seconds")  # timed on a throwaway CartPole (server.step_cost)
    assert isinstance(cost, float)
    assert 0 < cost < 0.01
    assert body == {"max_sessions": 2, "active_sessions": 0, "workers": 1, "pid": os.getpid()}
    envs = OpenEnvVectorEnv(None, 2, base_url=a.url)
    try:
        capacity = fetch_capacity(a.url)
        assert (capacity.max_sessions, capacity.active_sessions, capacity.free) == (2, 2, 0)
    finally:
        envs.close()
    deadline = time.monotonic() + 5
    while fetch_capacity(a.url).active_sessions and time.monotonic() < deadline:
        time.sleep(0.02)
    assert fetch_capacity(a.url).active_sessions == 0


def test_exactly_full_servers_are_fine(two_small_servers: tuple[ServerThread, ...]) -> None:
    a, b = two_small_servers
    envs = OpenEnvVectorEnv(None, 4, base_url=[a.url, b.url])
    try:
        envs.reset(seed=0)
        assert a.server.active_sessions == 2
        assert b.server.active_sessions == 2
    finally:
        envs.close()


def test_too_few_slots_name_each_url(two_small_servers: tuple[ServerThread, ...]) -> None:
    a, b = two_small_servers
    with pytest.raises(InsufficientCapacityError) as caught:
        OpenEnvVectorEnv(None, 6, base_url=[a.url, b.url])  # a needs 3 of 2, b 3 of 3
    error = caught.value
    assert error.requested == 6
    assert error.accepted == {a.url: 2, b.url: 3}
    message = str(error)
    assert f"{a.url}: needs 3, accepts 2" in message
    assert f"{b.url}: needs 3, accepts 3" in message
    assert "--max-sessions" in message
    assert "base_url=[...]" in message
    # Nothing was left open on either server.
    deadline = time.monotonic() + 5
    while (a.server.active_sessions or b.server.active_sessions) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert a.server.active_sessions == 0
    assert b.server.active_sessions == 0


def test_one_session_on_a_full_server(two_small_servers: tuple[ServerThread, ...]) -> None:
    a, _ = two_small_servers
    holder = OpenEnvVectorEnv(None, 2, base_url=a.url)
    try:
        with pytest.raises(InsufficientCapacityError, match="needs 1, accepts 0"):
            OpenEnvVectorEnv(None, 1, base_url=a.url)
    finally:
        holder.close()


def test_sessions_held_by_others_count(two_small_servers: tuple[ServerThread, ...]) -> None:
    a, _ = two_small_servers
    holder = OpenEnvVectorEnv(None, 1, base_url=a.url)
    try:
        with pytest.raises(InsufficientCapacityError, match="needs 2, accepts 1"):
            OpenEnvVectorEnv(None, 2, base_url=a.url)
    finally:
        holder.close()


# --------------------------------------------------------------------------- official server


@pytest.fixture(scope="module")
def official_url() -> Iterator[str]:
    """The official openenv FastAPI server (0.10.0) with its default of ONE session."""
    pytest.importorskip("openenv")
    from openenv.core.env_server import create_fastapi_app

    from tests.test_official_server_compat import (
        GuessAction,
        GuessEnvironment,
        GuessObservation,
    )

    app = create_fastapi_app(GuessEnvironment, GuessAction, GuessObservation)
    with serve_official_app(app, ws="websockets") as url:
        yield url


def test_official_server_has_no_capacity_route(official_url: str) -> None:
    capacity = fetch_capacity(official_url)
    assert not capacity.known
    assert capacity.free is None


def test_official_one_session_default_is_found_by_opening(official_url: str) -> None:
    with pytest.raises(InsufficientCapacityError) as caught:
        OpenEnvVectorEnv(None, 3, base_url=official_url)
    assert caught.value.accepted == {official_url: 1}
    assert f"{official_url}: needs 3, accepts 1 (found by opening sessions)" in str(caught.value)
    # The refused and the accepted sessions were closed: one session works again.
    deadline = time.monotonic() + 5
    while True:
        try:
            envs = OpenEnvVectorEnv(None, 1, base_url=official_url)
            break
        except InsufficientCapacityError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    try:
        obs, _ = envs.reset(seed=5)
        assert envs.observation_space.contains(obs)
    finally:
        envs.close()


@pytest.mark.parametrize("reported", [-0.001, True, "fast", None, [1e-5]])
def test_a_bad_step_cost_is_unknown_and_sessions_spread_as_before(reported: object) -> None:
    server = gymnasium_server("CartPole-v1", max_sessions=2)

    def capacity() -> dict[str, object]:
        budget = server.sessions.budget
        return {
            "max_sessions": budget.limit,
            "active_sessions": budget.active,
            "workers": 1,
            "step_seconds": reported,
        }

    server.routes.add_route("/capacity", capacity)
    with ServerThread(server) as thread:
        capacity = fetch_capacity(thread.url)
        assert capacity.step_seconds is None
        assert (capacity.max_sessions, capacity.workers) == (2, 1)
        envs = OpenEnvVectorEnv(None, 2, base_url=thread.url)
        try:
            envs.reset(seed=0)
            assert envs.batched
            assert len(envs.connections) == 1
        finally:
            envs.close()
