"""The embedded server process: started on demand, never left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import gymnasium as gym
import pytest

from openenv_gym import OpenEnvEnv
from openenv_gym.client import is_healthy
from openenv_gym.errors import ServerStartError, UnsupportedRenderModeError
from openenv_gym.providers import LocalServerProcess
from openenv_gym.providers.base import GivenServer


def processes_with_mark(mark: str) -> list[int]:
    """Pids of live processes whose environment holds OPENENV_GYM_TEST_MARK=mark."""
    needle = f"OPENENV_GYM_TEST_MARK={mark}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                status = (entry / "status").read_text()
                if "\nState:\tZ" not in status:  # zombies are already dead
                    pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def wait_until_gone(mark: str, timeout: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (pids := processes_with_mark(mark)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return pids


def marked_provider() -> tuple[LocalServerProcess, str]:
    mark = uuid.uuid4().hex
    provider = LocalServerProcess(
        ["gymnasium", "--env-id", "CartPole-v1"], env={"OPENENV_GYM_TEST_MARK": mark}
    )
    return provider, mark


def test_embedded_server_starts_and_stops_on_close() -> None:
    env = gym.make("openenv/CartPole-v1")
    provider = env.unwrapped.provider
    assert isinstance(provider, LocalServerProcess)
    pid, url = provider.pid, env.unwrapped.base_url
    assert url.startswith("http://127.0.0.1:")
    assert is_healthy(url)
    env.reset(seed=0)
    env.close()
    assert not is_healthy(url)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_single_env_goes_through_its_embedded_servers_unix_socket() -> None:
    env = gym.make("openenv/CartPole-v1")
    try:
        sockets = env.unwrapped.provider.unix_sockets
        assert len(sockets) == 1
        assert Path(sockets[0]).is_socket()
        assert env.unwrapped.unix_path == sockets[0]
        env.reset(seed=0)
        _, reward, _, _, _ = env.step(0)
        assert reward == 1.0
    finally:
        env.close()
    assert env.unwrapped.unix_path is None  # no session any more
    assert not Path(sockets[0]).exists()  # the server removed its socket


def test_unix_socket_false_keeps_the_session_on_tcp() -> None:
    with gym.make("openenv/CartPole-v1", unix_socket=False) as env:
        assert env.unwrapped.provider.unix_sockets == []
        assert env.unwrapped.unix_path is None
        env.reset(seed=0)
        assert env.step(1)[1] == 1.0
        # A second env on the same server, by URL: TCP, since nothing was started for it.
        url, token = env.unwrapped.base_url, env.unwrapped.provider.token
        with gym.make("openenv/CartPole-v1", base_url=url, token=token) as other:
            assert other.unwrapped.unix_path is None
            other.reset(seed=0)
            assert other.step(1)[1] == 1.0


def test_given_servers_have_no_unix_sockets() -> None:
    assert GivenServer("http://127.0.0.1:1").unix_sockets == []
    provider = LocalServerProcess(["gymnasium", "--env-id", "CartPole-v1"], unix_socket=True)
    assert provider.unix_sockets == []  # not started yet


def test_server_is_stopped_when_env_construction_fails() -> None:
    provider, mark = marked_provider()
    with pytest.raises(UnsupportedRenderModeError):
        OpenEnvEnv(provider=provider, render_mode="human")
    assert wait_until_gone(mark) == []


def test_a_server_that_cannot_start_reports_its_output() -> None:
    mark = uuid.uuid4().hex
    provider = LocalServerProcess(
        ["gymnasium", "--env-id", "NoSuchEnv-v9"], env={"OPENENV_GYM_TEST_MARK": mark}
    )
    with pytest.raises(ServerStartError, match="exited with code") as info:
        provider.start()
    assert "NoSuchEnv" in info.value.log
    assert wait_until_gone(mark) == []


def test_provider_is_a_context_manager_and_stop_is_idempotent() -> None:
    provider, mark = marked_provider()
    with provider as running:
        assert processes_with_mark(mark)
        assert is_healthy(str(running.base_url))
    provider.stop()
    assert wait_until_gone(mark) == []


SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, uuid
    from openenv_gym import OpenEnvEnv
    from openenv_gym.providers import LocalServerProcess
from openenv_gym.providers.base import GivenServer
    provider = LocalServerProcess(["gymnasium", "--env-id", "CartPole-v1"],
                                  env={"OPENENV_GYM_TEST_MARK": sys.argv[1]})
    env = OpenEnvEnv(provider=provider)
    env.reset(seed=0)
    print("READY", flush=True)
    if sys.argv[2] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)   # no atexit, no finalizers
    elif sys.argv[2] == "raise":
        raise RuntimeError("crash without close()")
    # "exit": plain interpreter exit without close()
    """
)


@pytest.mark.parametrize("how", ["exit", "raise", "kill"])
def test_no_orphan_server_after_the_parent_ends(how: str, tmp_path: Path) -> None:
    mark = uuid.uuid4().hex
    script = tmp_path / "parent.py"
    script.write_text(SCRIPT)
    result = subprocess.run(
        [sys.executable, str(script), mark, how],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "READY" in result.stdout, result.stderr
    if how == "kill":
        assert result.returncode == -signal.SIGKILL
    assert wait_until_gone(mark) == []
