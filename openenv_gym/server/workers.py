"""Run one server as K worker processes sharing a port (``SO_REUSEPORT``).

CPU-bound environments do not scale past the GIL inside one process. With
``openenv-gym serve ... --workers K`` the parent reserves the port, forks K workers that each
build the server and listen on that port with ``SO_REUSEPORT``; the kernel spreads incoming
connections over them. A session is one WebSocket connection, so it stays on the worker that
accepted it. The session budget (``--max-sessions``) is one counter in shared memory
(:class:`~openenv_gym.server.budget.SharedSessionBudget`), so ``GET /capacity`` is true
whichever worker answers; it also names the answering worker's ``pid``.

The parent prints the READY line once every worker listens, and stops them all (SIGTERM,
then SIGKILL) when it is told to stop or one of them dies. Workers stop when the parent dies.

Linux only (``SO_REUSEPORT`` with load balancing, and ``fork``).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import socket
import threading
import time
from collections.abc import Callable
from multiprocessing.context import ForkProcess
from typing import Any, Final

from openenv_gym.server.app import OpenEnvServer
from openenv_gym.server.budget import SharedSessionBudget

#: Seconds the workers get to build their server and listen.
DEFAULT_WORKER_STARTUP_TIMEOUT: Final = 120.0


def resolve_workers(value: str | int) -> int:
    """``"auto"`` -> the usable cores; a positive int -> itself.

    Raises:
        ValueError: Not ``"auto"`` and not a positive integer.
    """
    if value == "auto":
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # not Linux
            return max(1, os.cpu_count() or 1)
    try:
        count = int(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"expected --workers to be 'auto' or a positive integer, got {value!r}"
        ) from None
    if count < 1:
        raise ValueError(f"expected --workers to be 'auto' or a positive integer, got {value!r}")
    return count


def _reserve_port(host: str, port: int) -> socket.socket:
    """A bound, non-listening SO_REUSEPORT socket holding ``port`` (0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def _worker_main(
    build: Callable[[], OpenEnvServer],
    budget: SharedSessionBudget,
    host: str,
    port: int,
    ready: Any,
    parent_pid: int,
    unix_path: str | None = None,
    workers: int = 1,
) -> None:
    try:
        server = build()
        server.sessions.budget = budget
        server.workers = workers

        def watch_parent() -> None:
            while os.getppid() == parent_pid:
                time.sleep(0.5)
            server.request_stop()

        threading.Thread(target=watch_parent, name="openenv-gym-parent-watch", daemon=True).start()
        server.run(
            host,
            port,
            on_ready=lambda _h, _p: ready.put(("ready", os.getpid(), "")),
            reuse_port=True,
            unix_path=unix_path,
        )
    except BaseException as exc:
        ready.put(("error", os.getpid(), f"{type(exc).__name__}: {exc}"))
        raise SystemExit(1) from None


class WorkerGroup:
    """K forked server processes listening on one port.

    Args:
        build: Builds the server in each worker (called after the fork).
        workers: How many processes.
        max_sessions: The session budget shared by all of them.
        startup_timeout: Seconds for every worker to listen.
    """

    def __init__(
        self,
        build: Callable[[], OpenEnvServer],
        *,
        workers: int,
        max_sessions: int,
        startup_timeout: float = DEFAULT_WORKER_STARTUP_TIMEOUT,
    ) -> None:
        self._build = build
        self.workers = workers
        self._context = multiprocessing.get_context("fork")
        self.budget = SharedSessionBudget(max_sessions, self._context)
        self._startup_timeout = startup_timeout
        self._processes: list[ForkProcess] = []
        self._reserved: socket.socket | None = None
        self.port: int | None = None
        self.pids: list[int] = []

    def start(self, host: str, port: int, unix_paths: list[str] | None = None) -> int:
        """Fork the workers and wait until all listen; return the port.

        Raises:
            RuntimeError: A worker failed to build or bind (its error is in the message),
                or did not listen in time.
            OSError: The port cannot be reserved.
        """
        self._reserved = _reserve_port(host, port)
        self.port = int(self._reserved.getsockname()[1])
        ready = self._context.Queue()
        for k in range(self.workers):
            unix_path = unix_paths[k] if unix_paths else None
            process = self._context.Process(
                target=_worker_main,
                args=(
                    self._build,
                    self.budget,
                    host,
                    self.port,
                    ready,
                    os.getpid(),
                    unix_path,
                    self.workers,
                ),
                daemon=True,
            )
            process.start()
            self._processes.append(process)
        deadline = time.monotonic() + self._startup_timeout
        while len(self.pids) < self.workers:
            try:
                kind, pid, detail = ready.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                self.stop()
                raise RuntimeError(
                    f"{self.workers - len(self.pids)} of {self.workers} server workers did not "
                    f"listen within {self._startup_timeout:g}s"
                ) from None
            if kind == "error":
                self.stop()
                raise RuntimeError(f"server worker {pid} failed: {detail}")
            self.pids.append(int(pid))
        return self.port

    def wait(self, stop: threading.Event) -> None:
        """Block until ``stop`` is set or a worker exits."""
        while not stop.wait(0.2):
            if any(not p.is_alive() for p in self._processes):
                return

    def stop(self, grace: float = 5.0) -> None:
        """Stop every worker (SIGTERM, then SIGKILL) and release the port. Idempotent."""
        for process in self._processes:
            if process.is_alive() and process.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in self._processes:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join(grace)
        self._processes = []
        if self._reserved is not None:
            self._reserved.close()
            self._reserved = None


def run_workers(
    build: Callable[[], OpenEnvServer],
    *,
    host: str,
    port: int,
    workers: int,
    max_sessions: int,
    on_ready: Callable[[str, int], None],
    stop: threading.Event,
    unix_paths: list[str] | None = None,
) -> None:
    """Serve with ``workers`` processes until ``stop`` is set (or a worker dies).

    With ``unix_paths`` worker k also serves on ``unix_paths[k]``.
    """
    group = WorkerGroup(build, workers=workers, max_sessions=max_sessions)
    try:
        bound = group.start(host, port, unix_paths)
        on_ready(host, bound)
        group.wait(stop)
    finally:
        group.stop()


__all__ = ["DEFAULT_WORKER_STARTUP_TIMEOUT", "WorkerGroup", "resolve_workers", "run_workers"]
