"""Servers reached through an HTTP proxy (``HTTP_PROXY``): the WebSocket goes through an HTTP
CONNECT tunnel, as ``websockets``' own clients do; a proxy that refuses, or one this client
does not speak (SOCKS), is a clear connection error.

The proxy is a small real one on 127.0.0.1 that sends every host it is asked for to
127.0.0.1 (so a made-up host name, which only the proxy resolves, proves the traffic went
through it). Loopback URLs never use a proxy.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

import numpy as np
import pytest

from openenv_gym import OpenEnvEnv, OpenEnvVectorEnv
from openenv_gym.client.blocking import BlockingConnection
from openenv_gym.client.options import ConnectOptions
from openenv_gym.errors import ServerConnectionError

pytestmark = pytest.mark.timeout(60)

FAKE_HOST = "openenv-gym-test.invalid"
PROXY_TEST_OPTIONS = ConnectOptions(connect_timeout=5, reply_timeout=5, max_message_size=2**20)


class TinyProxy:
    """HTTP CONNECT tunnels and plain absolute-URI requests, all to 127.0.0.1."""

    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.targets: list[str] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = self.listener.accept()
                threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with contextlib.suppress(OSError), client:
            head = b""
            while b"\r\n\r\n" not in head:
                data = client.recv(4096)
                if not data:
                    return
                head += data
            first, _, rest = head.partition(b"\r\n")
            method, target, version = first.split()
            self.targets.append(f"{method.decode()} {target.decode()}")
            if self.refuse:
                client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                return
            if method == b"CONNECT":
                port = int(target.rsplit(b":", 1)[1])
                upstream = socket.create_connection(("127.0.0.1", port))
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                parts = urlsplit(target.decode())
                upstream = socket.create_connection(("127.0.0.1", parts.port or 80))
                path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                upstream.sendall(b" ".join([method, path.encode(), version]) + b"\r\n" + rest)
            with upstream:
                back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
                back.start()
                _pipe(client, upstream)
                back.join(10)

    def close(self) -> None:
        self.listener.close()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[TinyProxy]:
    running = TinyProxy()
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{running.port}")
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{running.port}")
    try:
        yield running
    finally:
        running.close()


def test_a_vector_env_steps_through_an_http_proxy(proxy: TinyProxy, cartpole_url: str) -> None:
    port = urlsplit(cartpole_url).port
    envs = OpenEnvVectorEnv(None, 2, base_url=f"http://{FAKE_HOST}:{port}")
    try:
        envs.reset(seed=0)
        _, rewards, *_ = envs.step(np.array([0, 1]))
        assert rewards.tolist() == [1.0, 1.0]
    finally:
        envs.close()
    assert f"CONNECT {FAKE_HOST}:{port}" in proxy.targets  # the WebSocket tunnel


def test_a_refusing_proxy_is_a_clear_connection_error(monkeypatch: pytest.MonkeyPatch) -> None:
    refusing = TinyProxy(refuse=True)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{refusing.port}")
    try:
        with pytest.raises(ServerConnectionError, match=r"refused a tunnel .*403 Forbidden"):
            BlockingConnection.open(f"ws://{FAKE_HOST}:9/ws", PROXY_TEST_OPTIONS)
    finally:
        refusing.close()


def test_a_socks_proxy_is_refused_with_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.setenv("https_proxy", "socks5h://127.0.0.1:9")
    with pytest.raises(ServerConnectionError, match=r"http:// proxies .* NO_PROXY"):
        BlockingConnection.open(f"ws://{FAKE_HOST}:9/ws", PROXY_TEST_OPTIONS)


def test_loopback_urls_never_use_the_proxy(proxy: TinyProxy, cartpole_url: str) -> None:
    envs = OpenEnvVectorEnv(None, 1, base_url=cartpole_url)
    try:
        envs.reset(seed=0)
    finally:
        envs.close()
    assert proxy.targets == []


def test_a_single_env_steps_through_an_http_proxy(proxy: TinyProxy, cartpole_url: str) -> None:
    port = urlsplit(cartpole_url).port
    env = OpenEnvEnv(f"http://{FAKE_HOST}:{port}")
    try:
        env.reset(seed=0)
        _, reward, *_ = env.step(0)
        assert reward == 1.0
    finally:
        env.close()
    assert f"CONNECT {FAKE_HOST}:{port}" in proxy.targets
    assert f"GET http://{FAKE_HOST}:{port}/schema" in proxy.targets
