"""The fleet of a vector env (:class:`~openenv_gym.vector.connections.Connections`) on its
own, against real servers on 127.0.0.1: opening batch and plain channels, the capacity
check, closing, and reopening after a killed server."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import httpx
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from openenv_gym.bench.link_server import PrivateShmServerProcess
from openenv_gym.client.capacity import fetch_capacity
from openenv_gym.client.options import ConnectOptions
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.errors import ConnectionLostError, InsufficientCapacityError, SubEnvError
from openenv_gym.providers.local import LocalServerProcess
from openenv_gym.server import ServerThread
from openenv_gym.vector import connections as connections_module
from openenv_gym.vector.backoff import Backoff
from openenv_gym.vector.buffers import BatchBuffers
from openenv_gym.vector.channels import BatchChannel, PlainChannel
from openenv_gym.vector.connections import Connections
from openenv_gym.vector.options import make_template
from openenv_gym.vector.round_trip import Op
from openenv_gym.wire.encoding import resolve_encoding
from tests.conftest import process_running, wait_for

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def add_info() -> Iterator[Any]:
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")])
    yield envs._add_info
    envs.close()


@pytest.fixture
def small_server() -> Iterator[ServerThread]:
    """A CartPole server that takes 3 sessions at most."""
    with ServerThread(gymnasium_server("CartPole-v1", max_sessions=3)) as server:
        yield server


def _connections(
    num_envs: int,
    url: str | None,
    *,
    encoding: str = "auto",
    id: str | None = None,
    token: str | None = None,
    per_connection: int | None = None,
) -> tuple[Connections, Any]:
    """Connections placed on ``url`` (or on the embedded server of ``id``), not yet open,
    and the observation codec of their env."""
    urls = [url] if url is not None else None
    connections = Connections(
        num_envs,
        encoding=resolve_encoding(encoding),
        connect_options=ConnectOptions(encoding=encoding, token=token),
        sessions_per_connection=per_connection,
    )
    template = make_template(id, urls, {"reply_timeout": 30.0, "token": token}, encoding)
    codec = template.observation_codec
    connections.adopt(template, urls, borrow_arrays=False)
    return connections, codec


def _resets(num_envs: int, seed: int) -> list[Op | None]:
    return [("reset", {"seed": seed + i}) for i in range(num_envs)]


def _reset_observations(
    connections: Connections, codec: Any, add_info: Any, seed: int
) -> np.ndarray:
    """Reset every sub-env with ``seed + i`` (one round trip) and return the batch."""
    num_envs = connections.num_envs
    buffers = BatchBuffers(
        codec,
        num_envs,
        autoreset_mode=AutoresetMode.NEXT_STEP,
        max_episode_steps=None,
        add_info=add_info,
        where=connections.url_of,
    )
    results, broken = connections.collect(connections.send(_resets(num_envs, seed)))
    assert broken == []
    for channel, result in results:
        buffers.take_resets(channel.indices, result, {})
    return np.array(buffers.observations)


def _gymnasium_resets(num_envs: int, seed: int) -> np.ndarray:
    env = gym.make("CartPole-v1")
    try:
        return np.stack([env.reset(seed=seed + i)[0] for i in range(num_envs)])
    finally:
        env.close()


@pytest.mark.parametrize(("encoding", "kind"), [("auto", BatchChannel), ("json", PlainChannel)])
def test_open_places_every_sub_env_on_one_channel_and_steps_them(
    cartpole_url: str, add_info: Any, encoding: str, kind: type
) -> None:
    connections, codec = _connections(5, cartpole_url, encoding=encoding)
    try:
        connections.open(range(5), check_capacity=True)
        channels = connections.channels
        assert sorted(i for c in channels for i in c.indices) == [0, 1, 2, 3, 4]
        assert all(type(c) is kind for c in channels)
        # A batch connection carries every session of the one-worker server; plain: one each.
        assert len(channels) == (1 if kind is BatchChannel else 5)
        assert connections.urls == [cartpole_url] * 5
        observations = _reset_observations(connections, codec, add_info, seed=7)
        np.testing.assert_allclose(observations, _gymnasium_resets(5, seed=7), rtol=1e-6)
        states = connections.states()
        assert len(states) == 5
        assert all(isinstance(s, dict) for s in states)
    finally:
        connections.close()


def test_the_capacity_check_refuses_before_opening_anything(small_server: ServerThread) -> None:
    url = small_server.url
    connections, _ = _connections(4, url)
    try:
        with pytest.raises(InsufficientCapacityError, match=url) as caught:
            connections.check_capacity({url: 4})
        assert caught.value.requested == 4
        with pytest.raises(InsufficientCapacityError):
            connections.open(range(4), check_capacity=True)
        assert connections.channels == []
        # Nothing was taken: all 3 sessions are still free.
        assert fetch_capacity(url).free == 3
        connections.open(range(3), check_capacity=True)
        assert sorted(i for c in connections.channels for i in c.indices) == [0, 1, 2]
    finally:
        connections.close()


def test_close_closes_every_connection_and_frees_its_sessions(
    small_server: ServerThread, add_info: Any
) -> None:
    url = small_server.url
    connections, codec = _connections(3, url)
    connections.open(range(3), check_capacity=True)
    _reset_observations(connections, codec, add_info, seed=0)
    sessions = connections.sessions
    assert fetch_capacity(url).free == 0
    connections.close()
    assert all(session.closed for session in sessions)
    assert wait_for(lambda: fetch_capacity(url).free == 3)
    connections.close()  # twice: nothing left to do, no error


def _worker_pids(url: str, token: str | None = None) -> set[int]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return {
        httpx.get(url + "/capacity", headers=headers, timeout=10).json()["pid"] for _ in range(24)
    }


def test_reopen_after_a_killed_server_restarts_it_and_close_stops_it(add_info: Any) -> None:
    connections, codec = _connections(2, None, id="openenv/CartPole-v1")
    try:
        (server,) = connections.providers
        assert isinstance(server, LocalServerProcess)
        assert server.pid is not None
        old_pid, old_url = server.pid, connections.url_of(0)
        connections.open(range(2), check_capacity=True)
        _reset_observations(connections, codec, add_info, seed=3)
        for pid in {old_pid, *_worker_pids(old_url, server.token)}:  # the server and its workers
            os.kill(pid, signal.SIGKILL)
        results, broken = connections.collect(connections.send(_resets(2, 3)))
        assert results == []
        assert broken
        assert all(isinstance(cause, ConnectionLostError) for _, cause in broken)
        reopened = connections.reopen([0], [cause for _, cause in broken])
        assert reopened == [0, 1]  # both sessions shared the broken connection
        assert server.pid is not None
        assert server.pid != old_pid
        assert connections.urls == [server.base_url] * 2 != [old_url] * 2
        observations = _reset_observations(connections, codec, add_info, seed=3)
        np.testing.assert_allclose(observations, _gymnasium_resets(2, seed=3), rtol=1e-6)
        new_pid = server.pid
    finally:
        connections.close()
    assert wait_for(lambda: not process_running(new_pid))


def test_reopen_of_a_dead_server_it_does_not_own_names_the_cause(
    monkeypatch: pytest.MonkeyPatch, add_info: Any
) -> None:
    monkeypatch.setattr(connections_module, "Backoff", functools.partial(Backoff, budget=0.5))
    server = ServerThread(gymnasium_server("CartPole-v1")).start()
    url = server.url
    connections, codec = _connections(2, url)
    try:
        connections.open(range(2), check_capacity=True)
        _reset_observations(connections, codec, add_info, seed=0)
        server.stop()
        results, broken = connections.collect(connections.send(_resets(2, 0)))
        assert results == []
        assert broken
        cause = broken[0][1]
        with pytest.raises(SubEnvError, match="reconnecting failed after") as caught:
            connections.reopen([1], [cause])
        assert caught.value.index == 0
        assert str(cause) in str(caught.value)
        assert "budget 0.5s" in str(caught.value)
        assert connections.channels == []  # the broken connection is closed, not kept
    finally:
        connections.close()


def test_a_broken_connection_without_reconnect_names_the_sub_env_and_the_fix(
    add_info: Any,
) -> None:
    server = ServerThread(gymnasium_server("CartPole-v1")).start()
    connections, codec = _connections(2, server.url, encoding="json")  # one per sub-env
    try:
        connections.open(range(2), check_capacity=True)
        _reset_observations(connections, codec, add_info, seed=0)
        server.stop()
        with pytest.raises(SubEnvError, match="pass reconnect=True") as caught:
            connections.collect_or_reopen(connections.send(_resets(2, 0)), reconnect=False)
        assert caught.value.index == 0
        assert caught.value.url.startswith(server.url.replace("http://", "ws://"))
        assert len(connections.channels) == 2  # nothing is reopened or dropped
    finally:
        connections.close()


@contextlib.contextmanager
def _cpus(count: int) -> Iterator[None]:
    """Run this process on its first ``count`` usable CPUs for a while."""
    usable = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, usable[:count])
    try:
        yield
    finally:
        os.sched_setaffinity(0, usable)


def _open_on(
    server: LocalServerProcess, num_envs: int, *, encoding: str = "auto", per_connection: int | None
) -> Connections:
    """Every sub-env's session open on ``server``, as a vector env opens them."""
    url = server.base_url
    connections, _ = _connections(
        num_envs, url, encoding=encoding, token=server.token, per_connection=per_connection
    )
    connections.check_capacity({url: num_envs})  # learns the workers, as a vector env does
    connections.open(range(num_envs), check_capacity=True)
    return connections


def test_round_trips_read_together_once_this_hosts_workers_fill_the_cores() -> None:
    serve = ["gymnasium", "--env-id", "CartPole-v1", "--workers", "2"]
    with LocalServerProcess(serve) as server:
        with _cpus(1):  # CartPole is cheap: 2 sessions a connection spreads it over both
            connections = _open_on(server, 4, per_connection=2)
        try:
            channels = connections.channels
            assert len(channels) == 2  # one per worker, each over its Unix socket
            assert len({c.session.unix_path for c in channels}) == 2
            assert connections.workers_fill_cores(channels)  # 2 workers, 1 core
            assert not connections.workers_fill_cores(channels[:1])  # one reply: nothing to wait
            results, broken = connections.collect(connections.send(_resets(4, 0)))
            assert broken == []
            assert sorted(i for c, _ in results for i in c.indices) == [0, 1, 2, 3]
        finally:
            connections.close()
        with _cpus(1):  # plain sessions (as to an official server): always as they come
            plain = _open_on(server, 2, encoding="json", per_connection=None)
        try:
            assert [c.batch for c in plain.channels] == [False, False]
            assert not plain.workers_fill_cores(plain.channels)
        finally:
            plain.close()


def test_round_trips_to_another_hosts_workers_read_each_reply_as_it_comes() -> None:
    # Its own /dev/shm and no Unix socket: a server this client reaches over TCP only.
    serve = ["gymnasium", "--env-id", "CartPole-v1", "--workers", "2"]
    with PrivateShmServerProcess(serve) as server:
        with _cpus(1):
            connections = _open_on(server, 4, per_connection=2)
        try:
            channels = connections.channels
            assert len(channels) == 2
            assert all(isinstance(c, BatchChannel) for c in channels)
            assert [c.session.unix_path for c in channels] == [None, None]
            assert not any(c.shared_memory for c in channels if isinstance(c, BatchChannel))
            assert not connections.workers_fill_cores(channels)
        finally:
            connections.close()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two usable CPUs")
def test_round_trips_read_apart_while_the_client_has_a_core_of_its_own() -> None:
    serve = ["gymnasium", "--env-id", "CartPole-v1", "--workers", "1"]
    with LocalServerProcess(serve) as server:
        with _cpus(2):
            shared = _open_on(server, 4, per_connection=2)  # two connections, one worker
            plain = _open_on(server, 2, encoding="json", per_connection=None)
        try:
            assert len(shared.channels) == 2
            assert len({c.session.unix_path for c in shared.channels}) == 1
            assert not shared.workers_fill_cores(shared.channels)
            assert not plain.workers_fill_cores(plain.channels)
        finally:
            shared.close()
            plain.close()
