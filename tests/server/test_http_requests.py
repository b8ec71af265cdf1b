"""Requests with a body (the official ``POST /reset``, ``POST /step``) on the WebSocket port."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import numpy as np
import pytest

from openenv_gym import OpenEnvEnv
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.server import ServerThread
from openenv_gym.server.http_requests import MAX_BODY_BYTES


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with ServerThread(gymnasium_server("CartPole-v1", max_sessions=4)) as running:
        yield running.url


def test_post_reset_answers_like_the_official_server(url: str) -> None:
    response = httpx.post(url + "/reset", json={"seed": 0})
    assert response.status_code == 200
    body = response.json()
    assert body["done"] is False
    assert body["reward"] is None
    assert len(body["observation"]["observation"]) == 4


def test_post_step_validates_the_action(url: str) -> None:
    response = httpx.post(url + "/step", json={"action": {"action": 7}})
    assert response.status_code == 422


def test_unknown_paths_and_methods(url: str) -> None:
    assert httpx.post(url + "/nowhere", json={}).status_code == 404
    assert httpx.put(url + "/reset", json={}).status_code == 405
    assert httpx.delete(url + "/health").status_code == 405


def test_sessions_and_get_routes_still_work_beside_posts(url: str) -> None:
    assert httpx.get(url + "/health").json() == {"status": "healthy"}
    env = OpenEnvEnv(url)
    try:
        env.reset(seed=0)
        assert httpx.post(url + "/reset", json={}).status_code == 200
        _, reward, *_ = env.step(np.int64(1))
        assert reward == 1.0
    finally:
        env.close()


def _raw(url: str, request: bytes) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_malformed_and_oversized_requests_get_an_error_status(url: str) -> None:
    assert _raw(url, b"POST /reset\r\n\r\n").startswith(b"HTTP/1.1 400")
    big = f"POST /reset HTTP/1.1\r\nContent-Length: {MAX_BODY_BYTES + 1}\r\n\r\n".encode()
    assert _raw(url, big).startswith(b"HTTP/1.1 413")
    chunked = b"POST /reset HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    assert _raw(url, chunked).startswith(b"HTTP/1.1 411")


def test_posts_need_the_token_when_the_server_has_one() -> None:
    server = gymnasium_server("CartPole-v1", max_sessions=2, token="s3cret")
    with ServerThread(server) as running:
        assert httpx.post(running.url + "/reset", json={}).status_code == 401
        headers = {"Authorization": "Bearer s3cret"}
        assert httpx.post(running.url + "/reset", json={}, headers=headers).status_code == 200
