"""Shared memory against hostile files and other users, on a real server (issue 27, cases 2-3).

A FIFO named as the probe once froze the worker's event loop in ``open()``; a root server once
agreed to shared memory with a client of another user, whose ``reset()`` then failed on the
server's 0600 files. Now the probe is opened without blocking and accepted only as a regular
0600 file of the server's own user: both cases get plain frames and keep working. The second
user is ``nobody``, switched to in a forked child (root only).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from websockets.sync.client import connect

from openenv_gym.vector import OpenEnvVectorEnv
from openenv_gym.wire.batch import (
    BATCH_SUBPROTOCOL,
    batch_open_message,
    batch_step_message,
    check_batch_opened,
    parse_batch_result,
)
from openenv_gym.wire.messages import http_to_ws_url
from openenv_gym.wire.shared_memory import SHM_DIR, ProbeFile
from tests.server.conftest import Wire

pytestmark = pytest.mark.skipif(SHM_DIR is None, reason="this system has no /dev/shm")
NOBODY = 65534


def _batch_open(url: str, offer: dict[str, str] | None) -> bool:
    """Open a batch of one session offering ``offer``; whether shared memory was agreed.
    Steps it once to show the session serves."""
    with connect(http_to_ws_url(url), subprotocols=[BATCH_SUBPROTOCOL], open_timeout=10) as ws:
        ws.send(json.dumps(batch_open_message(1, None, offer)))
        agreed = check_batch_opened(ws.recv(timeout=10), 1)
        ws.send(json.dumps(batch_step_message([{"step": {"value": 3}}], None)))
        assert parse_batch_result(ws.recv(timeout=10)).fields["value"] == [3]
        return agreed


@pytest.fixture
def fifo_probe() -> Iterator[str]:
    name = f"openenv-gym-probe-{secrets.token_hex(16)}"
    assert SHM_DIR is not None
    path = os.path.join(SHM_DIR, name)
    os.mkfifo(path, 0o600)
    yield name
    with contextlib.suppress(OSError):  # unblock a reader stuck before the fix
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    os.unlink(path)


def test_a_fifo_probe_gets_plain_frames_and_the_worker_keeps_serving(
    start_probe: Callable[..., Any], fifo_probe: str
) -> None:
    url, _registry, _thread = start_probe()
    with Wire.open(url, subprotocols=[BATCH_SUBPROTOCOL]) as ws:
        ws.send(json.dumps(batch_open_message(1, None, {"probe": fifo_probe, "token": "0" * 32})))
        assert check_batch_opened(ws.recv(timeout=10), 1) is False
    assert httpx.get(url + "/health", timeout=10).json() == {"status": "healthy"}
    probe = ProbeFile()
    try:
        assert _batch_open(url, probe.offer()) is True  # a real probe still agrees
    finally:
        probe.close()


def _as_nobody(work: Callable[[], Any]) -> Any:
    """Run ``work`` in a forked child switched to user ``nobody``; what it returned."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no return from here
        status = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            result: Any = {"ok": work()}
            status = 0
        except BaseException:
            result = {"error": traceback.format_exc()}
        with os.fdopen(write_end, "w") as out:
            json.dump(result, out)
        os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end) as answer:
        text = answer.read()
    os.waitpid(pid, 0)
    outcome = json.loads(text)
    assert "ok" in outcome, outcome.get("error")
    return outcome["ok"]


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to a second local user")
def test_a_client_of_another_user_gets_plain_frames_and_plays(
    start_probe: Callable[..., Any],
) -> None:
    from openenv_gym.envs.atari import atari_server
    from openenv_gym.server.thread import ServerThread

    url, _registry, _thread = start_probe()

    def probe_as_this_user() -> bool:
        probe = ProbeFile()
        try:
            return _batch_open(url, probe.offer())
        finally:
            probe.close()

    assert probe_as_this_user() is True  # same user: shared memory (and every import done)
    assert _as_nobody(probe_as_this_user) is False  # another user: plain frames

    with ServerThread(atari_server("pong", repeat_action_probability=0.0)) as server:

        def play() -> list[int]:
            venv = OpenEnvVectorEnv("openenv/Atari-v0", 2, base_url=server.url, game="pong")
            try:
                obs, _ = venv.reset(seed=3)
                for _ in range(3):
                    obs, *_ = venv.step(np.array([2, 3]))
                return [int(x) for x in obs.reshape(2, -1).sum(axis=1)]
            finally:
                venv.close()

        mine = play()  # root, shared memory
        assert _as_nobody(play) == mine  # nobody, plain frames: the same observations
