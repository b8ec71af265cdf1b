"""``serve --workers K`` supervises its workers: a dead one is logged and restarted, the
sessions it held free their budget slots, and a server whose workers keep dying exits 1.

Once, ``kill -9`` of one worker stopped the whole server in 0.3 s with exit code 0 and no log
line (issue 14, case 7). Real child processes on 127.0.0.1.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

import httpx
import pytest

from openenv_gym import OpenEnvEnv
from openenv_gym.errors import ServerConnectionError
from openenv_gym.server.budget import SharedSessionBudget
from openenv_gym.server.workers import describe_exit
from tests.conftest import process_running, wait_for
from tests.server.conftest import ServedProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def _workers(served: ServedProcess) -> list[int]:
    path = f"/proc/{served.pid}/task/{served.pid}/children"
    with open(path) as children:
        return [int(pid) for pid in children.read().split() if process_running(int(pid))]


def _capacity(served: ServedProcess) -> dict[str, int]:
    return dict(httpx.get(served.url + "/capacity", timeout=10).json())


@pytest.fixture
def served(serve_process: Callable[..., ServedProcess]) -> ServedProcess:
    """``openenv-gym serve gymnasium --workers 2`` as a child, its stderr collected (TCP only:
    the test finds the worker holding the session among the TCP connections)."""
    return serve_process("--workers", "2", "--unix-socket", "off")


def test_a_killed_worker_is_logged_and_restarted(served: ServedProcess) -> None:
    env = OpenEnvEnv(served.url)
    try:
        env.reset(seed=0)
        assert _capacity(served)["active_sessions"] == 1
        workers = _workers(served)
        assert len(workers) == 2
        # The worker holding the session: the one whose /capacity is never answered by the other
        holder = next(pid for pid in workers if _has_tcp_session(pid))
        os.kill(holder, signal.SIGKILL)
        with pytest.raises(ServerConnectionError):  # its session is gone, with a typed error
            env.step(env.action_space.sample())
    finally:
        env.close()
    assert wait_for(lambda: len(_workers(served)) == 2 and holder not in _workers(served), 30)
    assert served.process.poll() is None  # the server lives on
    # The dropped session's budget slot was freed; the restarted worker serves sessions.
    assert wait_for(lambda: _capacity(served)["active_sessions"] == 0, 30)
    assert wait_for(lambda: len({_capacity(served)["pid"] for _ in range(20)}) == 2, 30)
    again = OpenEnvEnv(served.url)
    try:
        again.reset(seed=0)
        again.step(again.action_space.sample())
    finally:
        again.close()
    log = served.stop()
    assert f"(pid {holder}) was killed by signal 9 (SIGKILL)" in log
    assert "1 session(s) were dropped; restarting it" in log
    assert served.process.returncode == 0  # stopped on request


def test_workers_that_keep_dying_stop_the_server_with_exit_code_1(served: ServedProcess) -> None:
    for _ in range(20):
        if served.process.poll() is not None:
            break
        killed = _workers(served)
        for pid in killed:
            os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not any(process_running(pid) for pid in killed), 10)  # noqa: B023
        # wait for the restarts (or for the parent to give up)
        wait_for(lambda: served.process.poll() is not None or len(_workers(served)) == 2, 20)
    log = served.stop()
    assert served.process.returncode == 1, log
    assert "giving up" in log
    assert "ServerWorkerError" in log


def _has_tcp_session(pid: int) -> bool:
    """Whether ``pid`` holds an established TCP connection (a client session)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        target = os.readlink(f"/proc/{pid}/fd/{fd}")
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    with open(f"/proc/{pid}/net/tcp") as table:
        rows = [line.split() for line in table.readlines()[1:]]
    return any(row[3] == "01" and row[9] in inodes for row in rows)  # 01: ESTABLISHED


def test_shared_budget_frees_the_slots_of_a_dead_worker() -> None:
    budget = SharedSessionBudget(3, slots=2)
    first, second = budget.for_worker(0), budget.for_worker(1)
    assert [first.try_acquire() for _ in range(2)] == [True, True]
    assert second.try_acquire()
    assert not second.try_acquire()
    budget.clear(0)
    assert budget.active == 1
    assert second.try_acquire()


@pytest.mark.parametrize(
    ("exitcode", "text"),
    [(-9, "was killed by signal 9 (SIGKILL)"), (3, "exited with code 3"), (0, "code 0")],
)
def test_describe_exit(exitcode: int, text: str) -> None:
    assert text in describe_exit(exitcode)
