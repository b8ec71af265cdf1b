"""Interpreter exit and Ctrl-C with open envs end promptly, leaving no server behind.

Once, ``sys.exit(0)`` (or Ctrl-C) with a vector env open took 30 s, then printed "Exception
ignored in VectorEnv.__del__ ... TimeoutError" (issue 14, case 10): the embedded server, told
to stop, waited for closing handshakes from a client whose event loop no longer ran. Now a
session nobody closed drops its socket at once. Real processes on 127.0.0.1.
"""

from __future__ import annotations

import gc
import signal
import subprocess
import sys
import time

import pytest

from openenv_gym.client import AsyncSession, run_sync
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.server import ServerThread
from tests.conftest import process_running, wait_for

pytestmark = pytest.mark.timeout(120)

CHILD = """
import sys, gymnasium as gym, openenv_gym
envs = gym.make_vec("openenv/CartPole-v1", num_envs=4)
envs.reset(seed=0)
print(" ".join(str(s.pid) for s in envs.unwrapped.servers), flush=True)
while {forever}:
    envs.step(envs.action_space.sample())
sys.exit(0)  # without close()
"""


@pytest.mark.parametrize("how", ["sys.exit", "ctrl-c"])
def test_exit_with_an_open_vector_env_is_clean(how: str) -> None:
    code = CHILD.format(forever=how == "ctrl-c")
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    server_pids = [int(pid) for pid in child.stdout.readline().split()]
    assert server_pids, "the child did not start its env"
    if how == "ctrl-c":
        time.sleep(0.5)  # stepping
        child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert "Exception ignored" not in err, err
    assert "TimeoutError" not in err, err
    assert all(not process_running(pid) for pid in server_pids)  # the child waited for them


def test_a_forgotten_session_is_dropped_at_once() -> None:
    """No loop runs for a forgotten session (interpreter exit, Ctrl-C): its socket is shut
    down by its finalizer, so the server sees it end instead of waiting for it."""
    with ServerThread(gymnasium_server("CartPole-v1")) as running:
        session = run_sync(AsyncSession.open(running.url))
        run_sync(session.request({"type": "reset", "data": {"seed": 0}}))
        assert running.server.active_sessions == 1
        del session
        gc.collect()
        assert wait_for(lambda: running.server.active_sessions == 0)
