"""Same-host servers through their Unix sockets: listed by GET /health, reached if visible."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator

import gymnasium as gym
import httpx
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.client.local_sockets import (
    advertised_unix_sockets,
    is_unix_socket,
    local_unix_socket,
)
from openenv_gym.errors import AuthenticationError
from openenv_gym.providers import LocalServerProcess
from tests.conftest import plain_http_server

CARTPOLE = ["gymnasium", "--env-id", "CartPole-v1"]


def assert_steps_over_tcp(url: str) -> None:
    """A single env on ``url`` opens its session over TCP, and steps."""
    with gym.make("openenv/CartPole-v1", base_url=url) as env:
        assert env.unwrapped.unix_path is None
        env.reset(seed=0)
        assert env.step(0)[1] == 1.0


@pytest.fixture(scope="module")
def two_workers() -> Iterator[LocalServerProcess]:
    """Our CartPole server with two workers and the default ``--unix-socket auto``."""
    with LocalServerProcess([*CARTPOLE, "--workers", "2"]) as server:
        yield server


def test_health_lists_one_socket_per_worker_and_envs_go_through_them(
    two_workers: LocalServerProcess,
) -> None:
    url = two_workers.base_url
    assert url is not None
    listed = httpx.get(url + "/health").json()["unix_sockets"]
    assert listed == two_workers.unix_sockets
    assert len(listed) == 2
    assert all(is_unix_socket(path) for path in listed)
    with gym.make("openenv/CartPole-v1", base_url=url) as env:
        assert env.unwrapped.unix_path in listed
        env.reset(seed=0)
        assert env.step(0)[1] == 1.0
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=4, base_url=url)
    try:
        assert {c.unix_path for c in envs.unwrapped.connections} <= set(listed)
        envs.reset(seed=0)
        _, rewards, _, _, _ = envs.step(np.zeros(4, dtype=np.int64))
        assert rewards.tolist() == [1.0] * 4
    finally:
        envs.close()


def test_unix_socket_off_lists_none_and_sessions_stay_on_tcp() -> None:
    with LocalServerProcess(CARTPOLE, unix_socket=False) as server:
        url = server.base_url
        assert url is not None
        assert httpx.get(url + "/health").json() == {"status": "healthy"}  # as the official
        assert server.unix_sockets == []
        assert_steps_over_tcp(url)


@pytest.fixture
def socket_gone() -> Iterator[tuple[str, str]]:
    """A server whose listed Unix socket is not on this side (as a server in a container,
    or behind an emulated link): its URL and the path it lists."""
    with LocalServerProcess(CARTPOLE) as server:
        assert server.base_url is not None
        (path,) = server.unix_sockets
        os.unlink(path)
        yield server.base_url, path


def test_a_listed_socket_not_visible_here_leaves_the_session_on_tcp(
    socket_gone: tuple[str, str],
) -> None:
    url, path = socket_gone
    assert advertised_unix_sockets(url) == [path]
    assert local_unix_socket(url) is None
    assert_steps_over_tcp(url)
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=2, base_url=url)
    try:
        assert [c.unix_path for c in envs.unwrapped.connections] == [None]
        envs.reset(seed=0)
    finally:
        envs.close()


def test_a_stale_socket_file_falls_back_to_tcp(socket_gone: tuple[str, str]) -> None:
    url, path = socket_gone
    with socket.socket(socket.AF_UNIX) as stale:  # bound, never listening: refused
        stale.bind(path)
    try:
        assert local_unix_socket(url) == path  # it looks reachable ...
        assert_steps_over_tcp(url)  # ... the connect is refused: TCP
    finally:
        os.unlink(path)


def test_the_token_is_checked_on_the_unix_socket_too() -> None:
    with LocalServerProcess(CARTPOLE, token="s3cret") as server:
        url = server.base_url
        assert url is not None
        with gym.make("openenv/CartPole-v1", base_url=url, token="s3cret") as env:
            assert env.unwrapped.unix_path == server.unix_sockets[0]
            env.reset(seed=0)
        with pytest.raises(AuthenticationError):
            gym.make("openenv/CartPole-v1", base_url=url, token="wrong")


@pytest.fixture
def health_body() -> Iterator[tuple[str, list[bytes]]]:
    """A plain HTTP server whose ``GET /health`` answers 200 with the body the test sets."""
    bodies = [b""]
    with plain_http_server(lambda: (200, bodies[0])) as url:
        yield url, bodies


@pytest.mark.parametrize(
    ("body", "advertised"),
    [
        (b"ok", []),  # a plain FastAPI app's text
        (b'{"status": "ok"}', []),
        (b'{"unix_sockets": "/not/a/list"}', []),
        (b"[1, 2]", []),
        (json.dumps({"unix_sockets": [1, None, "/no/such.sock"]}).encode(), ["/no/such.sock"]),
    ],
)
def test_health_bodies_that_list_nothing_usable(
    health_body: tuple[str, list[bytes]], body: bytes, advertised: list[str]
) -> None:
    url, bodies = health_body
    bodies[0] = body
    assert advertised_unix_sockets(url) == advertised
    assert local_unix_socket(url) is None


def test_an_unreachable_server_lists_nothing() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert advertised_unix_sockets(f"http://127.0.0.1:{port}", timeout=1.0) == []
