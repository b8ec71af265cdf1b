"""Idle envs keep their sessions on servers that ping (official ``openenv`` servers do).

uvicorn pings every 20 s and drops a client that has not answered within 20 s; a learner
that trains for a minute between rollouts reads nothing meanwhile. The keepalive thread
(:mod:`openenv_gym.client.keepalive`) answers for idle connections. Here the official server
pings every 0.2 s (and waits 0.5 s for the answer) and the thread looks every 0.05 s, so two
seconds of idling spans many pings; the control test shows that without the thread the server
does drop the sessions. The control waits for the server to report each session closed rather
than for a fixed time, and keeps the thread on until its sessions are open and reset (the
server would drop a session that sits unread while the next one is made, which under load can
take longer than a ping and its timeout): it proves the drop, whatever the machine's load.
Real official-package servers on 127.0.0.1; no timed assertions.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from openenv.core.env_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from openenv_gym import OpenEnvEnv, OpenEnvVectorEnv
from openenv_gym.client import keepalive
from openenv_gym.errors import ConnectionLostError, SubEnvError
from tests.official_peer import serve_official_app

pytestmark = pytest.mark.timeout(90)

PING_INTERVAL = 0.2
#: How long the server waits for the answer to a ping before it drops the connection.
PING_TIMEOUT = 0.5
#: Long enough for many pings (and the server's timeout) to pass while the env is idle.
IDLE_SECONDS = 2.0
#: How long the control waits at most for the server to drop its idle sessions.
DROP_DEADLINE = 60.0


class CountAction(Action):
    add: int = Field(default=1, ge=0, le=3)


class CountObservation(Observation):
    total: int = 0


class CountEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True
    #: The environments of the sessions that are reset and not yet closed (the server calls
    #: ``close()`` when it drops a session).
    live: set[int] = set()
    live_lock = threading.Lock()

    def __init__(self) -> None:
        super().__init__()
        self._state = State(step_count=0)
        self._total = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Any:
        self._state = State(episode_id=episode_id, step_count=0)
        self._total = 0
        with CountEnvironment.live_lock:
            CountEnvironment.live.add(id(self))
        return CountObservation(total=0)

    def step(self, action: CountAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        self._state.step_count += 1
        self._total += action.add
        return CountObservation(total=self._total, reward=1.0, done=False)

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        with CountEnvironment.live_lock:
            CountEnvironment.live.discard(id(self))
        super().close()


def wait_until_the_server_closed_every_session() -> None:
    """Wait until no session is open on the server (fails after :data:`DROP_DEADLINE`)."""
    deadline = time.monotonic() + DROP_DEADLINE
    while CountEnvironment.live:
        if time.monotonic() > deadline:
            pytest.fail(
                f"{len(CountEnvironment.live)} sessions still open on the server "
                f"{DROP_DEADLINE:.0f} s after their clients went idle; expected it to drop them"
            )
        time.sleep(0.05)


@pytest.fixture(scope="module")
def pinging_url() -> Iterator[str]:
    app = create_fastapi_app(CountEnvironment, CountAction, CountObservation, max_concurrent_envs=8)
    with serve_official_app(
        app, ws_ping_interval=PING_INTERVAL, ws_ping_timeout=PING_TIMEOUT
    ) as url:
        yield url


@pytest.fixture
def eager_keeper() -> Iterator[None]:
    keepalive.configure(idle=0.1, period=0.05)
    try:
        yield
    finally:
        keepalive.configure()


@pytest.mark.usefixtures("eager_keeper")
def test_an_idle_single_env_keeps_its_session(pinging_url: str) -> None:
    env = OpenEnvEnv(pinging_url)
    try:
        env.reset(seed=0)
        env.step(2)
        time.sleep(IDLE_SECONDS)
        obs, reward, *_ = env.step(3)
        assert obs["total"] == 5
        assert reward == 1.0
    finally:
        env.close()


@pytest.mark.usefixtures("eager_keeper")
def test_an_idle_vector_env_keeps_its_sessions(pinging_url: str) -> None:
    envs = OpenEnvVectorEnv(None, 3, base_url=pinging_url)
    try:
        assert not envs.batched  # an official server: one plain session per sub-env
        envs.reset(seed=0)
        time.sleep(IDLE_SECONDS)
        obs, rewards, *_ = envs.step(np.array([1, 2, 3]))
        assert obs["total"].tolist() == [1, 2, 3]
        assert rewards.tolist() == [1.0, 1.0, 1.0]
    finally:
        envs.close()


@pytest.mark.usefixtures("eager_keeper")
def test_without_the_keeper_the_server_drops_an_idle_session(pinging_url: str) -> None:
    """The control: the server really does drop a client that does not answer its pings."""
    env = OpenEnvEnv(pinging_url)
    envs = OpenEnvVectorEnv(None, 2, base_url=pinging_url)
    try:
        env.reset(seed=0)
        envs.reset(seed=0)
        assert len(CountEnvironment.live) >= 3
        keepalive.configure(idle=3600.0, period=0.05)  # from here on, nothing reads
        time.sleep(IDLE_SECONDS)
        wait_until_the_server_closed_every_session()
        with pytest.raises(ConnectionLostError, match="keepalive ping timeout"):
            env.step(1)
        with pytest.raises(SubEnvError, match="keepalive ping timeout"):
            envs.step(np.array([1, 1]))
    finally:
        env.close()
        envs.close()
