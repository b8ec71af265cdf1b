"""A small probe environment, helpers for driving our server over raw WebSocket frames, and
``openenv-gym serve`` started as a child process (:class:`ServedProcess`)."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

import numpy as np
import pytest
from pydantic import Field
from websockets.sync.client import ClientConnection, connect

from openenv_gym.providers.ready_line import read_ready_line
from openenv_gym.server import (
    Action,
    Environment,
    Observation,
    OpenEnvServer,
    ServerThread,
    State,
)
from openenv_gym.wire.messages import http_to_ws_url


class ProbeAction(Action):
    value: int = Field(ge=0, le=100, description="echoed back")
    fail: bool = Field(default=False, description="raise in step")
    break_state: bool = Field(default=False, description="make the next state call raise")
    output: Literal["normal", "dict", "object", "numpy"] = Field(
        default="normal", description="what step returns"
    )


class ProbeObservation(Observation):
    value: int = 0
    seed: int | None = None
    episode_id: str | None = None


class ProbeEnvironment(Environment[ProbeAction, ProbeObservation, State]):
    """Echoes the action value; fails on request."""

    def __init__(self, registry: ProbeRegistry) -> None:
        self._registry = registry
        self._state = State(step_count=0)
        self._state_broken = False
        self.closed = False

    def reset(self, seed: int | None = None, episode_id: str | None = None) -> ProbeObservation:
        # No **kwargs on purpose: unknown reset keys must be dropped by the server.
        if seed == 666:
            raise RuntimeError("reset failed on purpose")
        self._state = State(episode_id=episode_id, step_count=0)
        return ProbeObservation(seed=seed, episode_id=episode_id)

    def step(self, action: ProbeAction) -> ProbeObservation:
        if action.fail:
            raise RuntimeError("step failed on purpose")
        self._state_broken = action.break_state
        self._state.step_count += 1
        if action.output == "dict":
            return {"value": action.value}  # type: ignore[return-value]
        if action.output == "object":
            return ProbeObservation(value=action.value, metadata={"thing": object()})
        if action.output == "numpy":
            return ProbeObservation(value=action.value, metadata={"array": np.arange(3)})
        return ProbeObservation(
            value=action.value,
            reward=float(action.value),
            done=action.value == 100,
            metadata={"echo": action.value} if action.value else {},
        )

    @property
    def state(self) -> State:
        if self._state_broken:
            self._state_broken = False
            raise RuntimeError("state failed on purpose")
        return self._state

    def close(self) -> None:
        self.closed = True
        self._registry.closed.append(self)


class ProbeRegistry:
    """Counts the environments a factory built and records which were closed."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.created: list[ProbeEnvironment] = []
        self.closed: list[ProbeEnvironment] = []
        self._lock = threading.Lock()

    def factory(self) -> ProbeEnvironment:
        if self.fail:
            raise OSError("no environment today")
        env = ProbeEnvironment(self)
        with self._lock:
            self.created.append(env)
        return env


def probe_server(registry: ProbeRegistry, **kwargs: Any) -> OpenEnvServer:
    return OpenEnvServer(
        registry.factory,
        action_type=ProbeAction,
        observation_type=ProbeObservation,
        metadata=kwargs.pop("metadata", None),
        **kwargs,
    )


@pytest.fixture
def registry() -> ProbeRegistry:
    return ProbeRegistry()


@pytest.fixture
def probe_url(registry: ProbeRegistry) -> Iterator[str]:
    with ServerThread(probe_server(registry, max_sessions=8)) as running:
        yield running.url


@pytest.fixture
def start_probe() -> Iterator[Callable[..., tuple[str, ProbeRegistry, ServerThread]]]:
    """Start a probe server with custom options; stopped after the test."""
    started: list[ServerThread] = []

    def start(**kwargs: Any) -> tuple[str, ProbeRegistry, ServerThread]:
        registry = kwargs.pop("registry", None) or ProbeRegistry()
        thread = ServerThread(probe_server(registry, **kwargs)).start()
        started.append(thread)
        return thread.url, registry, thread

    yield start
    for thread in started:
        thread.stop()


class Wire:
    """Raw WebSocket helpers: open a session, send any frame, check the session still works."""

    probe_action = ProbeAction
    probe_observation = ProbeObservation

    @staticmethod
    def open(base_url: str, path: str = "/ws", **kwargs: Any) -> ClientConnection:
        url = http_to_ws_url(base_url)
        if path != "/ws":
            url = url[: -len("/ws")] + path
        return connect(url, open_timeout=10, close_timeout=5, **kwargs)

    @staticmethod
    def ask(ws: ClientConnection, frame: str | bytes | dict[str, Any]) -> dict[str, Any]:
        """Send one frame, return the parsed reply (which must be a text frame)."""
        ws.send(json.dumps(frame) if isinstance(frame, dict) else frame)
        reply = ws.recv(timeout=10)
        assert isinstance(reply, str), f"expected a text frame, got {reply!r:.100}"
        return dict(json.loads(reply))

    @classmethod
    def assert_session_works(cls, ws: ClientConnection, value: int = 7) -> None:
        """A valid step after whatever came before still gets its observation."""
        reply = cls.ask(ws, {"type": "step", "data": {"value": value}})
        assert reply["type"] == "observation", reply
        assert reply["data"]["observation"]["value"] == value
        assert reply["data"]["reward"] == float(value)


@pytest.fixture
def wire() -> type[Wire]:
    return Wire


class ServedProcess:
    """``openenv-gym serve gymnasium --env-id CartPole-v1 --host 127.0.0.1 --port 0 ARGS`` as
    a child process, started and read up to its READY line.

    Args:
        args: More ``serve`` flags (``["--workers", "2"]``, ``["--token", T]``).
        nofile: Lower the child's ``RLIMIT_NOFILE`` to this many descriptors.
        env: The child's environment (default: this process's).
        stderr: Collect the child's stderr (:meth:`stop` returns it); else it is discarded.
    """

    def __init__(
        self,
        args: Sequence[str] = (),
        *,
        nofile: int | None = None,
        env: dict[str, str] | None = None,
        stderr: bool = True,
    ) -> None:
        command = [sys.executable, "-m", "openenv_gym.cli", "serve", "gymnasium"]
        command += ["--env-id", "CartPole-v1", "--host", "127.0.0.1", "--port", "0", *args]

        def limit() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if stderr else subprocess.DEVNULL,
            text=True,
            env=env,
            preexec_fn=limit if nofile is not None else None,
        )
        try:
            assert self.process.stdout is not None
            self.info = read_ready_line(self.process.stdout)
        except BaseException:
            self.process.kill()
            self.process.communicate(timeout=30)
            raise
        self.url = str(self.info["url"])
        self.port = int(self.info["port"])

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, sig: int = signal.SIGTERM) -> str:
        """Send ``sig`` (if it still runs), wait for the exit; its stderr (or ``""``)."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            _out, err = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _out, err = self.process.communicate(timeout=30)
        return err or ""


@pytest.fixture
def serve_process() -> Iterator[Callable[..., ServedProcess]]:
    """Start ``openenv-gym serve`` children (:class:`ServedProcess` arguments); each is
    killed after the test if it still runs."""
    started: list[ServedProcess] = []

    def start(*args: str, **kwargs: Any) -> ServedProcess:
        served = ServedProcess(args, **kwargs)
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop(signal.SIGKILL)
