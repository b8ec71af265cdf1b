"""Run one server as K worker processes sharing a port (``SO_REUSEPORT``).

CPU-bound environments do not scale past the GIL inside one process. With
``openenv-gym serve ... --workers K`` the parent reserves the port, forks K workers that each
build the server and listen on that port with ``SO_REUSEPORT``; the kernel spreads incoming
connections over them. A session is one WebSocket connection, so it stays on the worker that
accepted it. The session budget (``--max-sessions``) is one counter in shared memory
(:class:`~openenv_gym.server.budget.SharedSessionBudget`), so ``GET /capacity`` is true
whichever worker answers; it also names the answering worker's ``pid``.

The parent prints the READY line once every worker listens, then supervises: a worker that
dies (a crash, ``kill -9``, the OOM killer) is logged at WARNING with how it died and how many
sessions it dropped, its slots in the session budget are freed, and it is restarted on the
same port (and Unix socket). Its sessions' connections were closed by the kernel with the
process: clients see the connection drop (no close frame) and a reconnecting vector env
reopens them. A worker dying more than :data:`DEFAULT_MAX_RESTARTS` times within
:data:`DEFAULT_RESTART_WINDOW` seconds stops the server with exit code 1, never 0. On a
stop request the parent stops them all (SIGTERM, then SIGKILL). Workers stop when the
parent dies.

Linux only (``SO_REUSEPORT`` with load balancing, and ``fork``).
"""

from __future__ import annotations

import collections
import contextlib
import gc
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.context import ForkProcess
from typing import Any, Final, cast

from openenv_gym.busy_poll import usable_cores
from openenv_gym.errors import PicklableError, ServerWorkerError
from openenv_gym.server.app import OpenEnvServer
from openenv_gym.server.budget import SharedSessionBudget

#: Seconds the workers get to build their server and listen.
DEFAULT_WORKER_STARTUP_TIMEOUT: Final = 120.0
#: A dead worker is restarted, up to this many times within DEFAULT_RESTART_WINDOW seconds;
#: one more death stops the whole server with exit code 1.
DEFAULT_MAX_RESTARTS: Final = 5
DEFAULT_RESTART_WINDOW: Final = 60.0

logger = logging.getLogger("openenv_gym.server")


def resolve_workers(value: str | int) -> int:
    """``"auto"`` -> the usable cores; a positive int -> itself.

    Raises:
        ValueError: Not ``"auto"`` and not a positive integer.
    """
    if value == "auto":
        return usable_cores()
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
    unix_paths: list[str] | None = None,
    slot: int = 0,
    workers: int = 1,
) -> None:
    try:
        server = build()
        server.sessions.budget = budget
        gc.freeze()  # see cli.serve: cheaper collections, a prompt exit
        server.workers = workers
        server.routes.unix_sockets = list(unix_paths or [])  # GET /health lists them all
        unix_path = unix_paths[slot] if unix_paths else None

        def watch_parent() -> None:
            while os.getppid() == parent_pid:
                time.sleep(0.5)
            server.request_stop()

        threading.Thread(target=watch_parent, name="openenv-gym-parent-watch", daemon=True).start()
        server.run(
            host,
            port,
            on_ready=lambda _h, _p: ready.send(("ready", os.getpid(), "")),
            reuse_port=True,
            unix_path=unix_path,
        )
    except BaseException as exc:
        with contextlib.suppress(OSError):
            ready.send(("error", os.getpid(), f"{type(exc).__name__}: {exc}"))
        raise SystemExit(1) from None


class _WorkerDiedError(PicklableError, RuntimeError):
    """A worker died before it listened."""

    def __init__(self, process: ForkProcess) -> None:
        super().__init__(
            f"server worker {process.pid} {describe_exit(process.exitcode)} before it listened"
        )
        self.process = process


class _StopRequestedError(PicklableError):
    """The server was asked to stop while a worker was starting."""


def describe_exit(exitcode: int | None) -> str:
    """``exited with code 3`` / ``was killed by signal 9 (SIGKILL)``."""
    if exitcode is None:
        return "is still running"
    if exitcode < 0:
        try:
            name = f" ({signal.Signals(-exitcode).name})"
        except ValueError:
            name = ""
        return f"was killed by signal {-exitcode}{name}"
    return f"exited with code {exitcode}"


class WorkerGroup:
    """K forked server processes listening on one port, restarted when they die.

    Args:
        build: Builds the server in each worker (called after the fork).
        workers: How many processes.
        max_sessions: The session budget shared by all of them.
        startup_timeout: Seconds for a worker to listen.
        max_restarts: Restarts allowed within ``restart_window`` seconds; one more death
            stops the server with :class:`~openenv_gym.errors.ServerWorkerError`.
        restart_window: See ``max_restarts``.
    """

    def __init__(
        self,
        build: Callable[[], OpenEnvServer],
        *,
        workers: int,
        max_sessions: int,
        startup_timeout: float = DEFAULT_WORKER_STARTUP_TIMEOUT,
        max_restarts: int = DEFAULT_MAX_RESTARTS,
        restart_window: float = DEFAULT_RESTART_WINDOW,
    ) -> None:
        self._build = build
        self.workers = workers
        self._context = multiprocessing.get_context("fork")
        self.budget = SharedSessionBudget(max_sessions, self._context, slots=workers)
        self._startup_timeout = startup_timeout
        self.max_restarts = max_restarts
        self.restart_window = restart_window
        self._processes: list[ForkProcess] = []
        self._reserved: socket.socket | None = None
        #: Each worker reports on a pipe of its own: a worker killed while reporting cannot
        #: block the others (as a shared queue's lock would).
        self._reports: dict[int | None, Connection] = {}
        self._host = ""
        self._unix_paths: list[str] | None = None
        self._restarts: collections.deque[float] = collections.deque()
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
        self._host, self._unix_paths = host, unix_paths
        self._processes = [self._spawn(k) for k in range(self.workers)]
        try:
            self.pids = self._await_ready(self._processes)
        except (RuntimeError, _StopRequestedError):
            self.stop()
            raise
        return self.port

    def _spawn(self, slot: int) -> ForkProcess:
        reader, writer = self._context.Pipe(duplex=False)
        process = self._context.Process(
            target=_worker_main,
            args=(
                self._build,
                self.budget.for_worker(slot),
                self._host,
                self.port,
                writer,
                os.getpid(),
                self._unix_paths,
                slot,
                self.workers,
            ),
            name=f"openenv-gym-worker-{slot}",
            daemon=True,
        )
        process.start()
        writer.close()  # the worker's copy is the only one: its death closes the pipe
        self._reports[process.pid] = reader
        return process

    def _await_ready(
        self, processes: list[ForkProcess], stop: threading.Event | None = None
    ) -> list[int]:
        """The pids of ``processes`` in order, once each listens (reports of others: skipped).

        Raises:
            RuntimeError: One failed to build or bind, or did not listen in time.
            _WorkerDiedError: One died before it listened.
            _StopRequestedError: ``stop`` was set meanwhile.
        """
        pending = {self._reports[p.pid]: p for p in processes}
        pids: dict[int | None, int] = {}
        deadline = time.monotonic() + self._startup_timeout
        while pending:
            reported = multiprocessing.connection.wait(list(pending), timeout=0.2)
            for ready in reported:
                reader = cast(Connection, ready)
                process = pending.pop(reader)
                try:
                    kind, pid, detail = reader.recv()
                except (EOFError, OSError):  # it died before it said anything
                    process.join(5)
                    raise _WorkerDiedError(process) from None
                if kind == "error":
                    raise RuntimeError(f"server worker {pid} failed: {detail}")
                pids[process.pid] = int(pid)
            if reported:
                continue
            if stop is not None and stop.is_set():
                raise _StopRequestedError
            for process in pending.values():
                if not process.is_alive():
                    raise _WorkerDiedError(process)
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{len(pending)} of {len(processes)} server workers did not listen within "
                    f"{self._startup_timeout:g}s"
                )
        return [pids[p.pid] for p in processes]

    def wait(self, stop: threading.Event) -> None:
        """Serve until ``stop`` is set, restarting workers that die.

        Raises:
            ServerWorkerError: Workers died more than ``max_restarts`` times within
                ``restart_window`` seconds, or a restarted worker failed to build or listen.
        """
        try:
            while not stop.wait(0.2):
                for slot, process in enumerate(self._processes):
                    if not process.is_alive() and not stop.wait(0.05):
                        self._restart(slot, process, stop)
        except _StopRequestedError:
            return

    def _restart(self, slot: int, dead: ForkProcess, stop: threading.Event) -> None:
        """Replace the dead worker of ``slot``; a replacement that dies too counts again."""
        while True:
            self._record_death(slot, dead)
            self._processes[slot] = self._spawn(slot)
            try:
                (pid,) = self._await_ready([self._processes[slot]], stop)
            except _WorkerDiedError as died:
                dead = died.process
                continue
            except RuntimeError as exc:
                raise ServerWorkerError(
                    f"server worker {slot} could not be restarted: {exc}"
                ) from exc
            self.pids[slot] = pid
            logger.warning("server worker %d restarted (pid %d)", slot, pid)
            return

    def _record_death(self, slot: int, dead: ForkProcess) -> None:
        """Log a worker's death and free its budget slot; give up past the restart budget."""
        dead.join(0)
        how = describe_exit(dead.exitcode)
        dropped = self.budget.sessions_of(slot)
        self.budget.clear(slot)
        now = time.monotonic()
        while self._restarts and self._restarts[0] < now - self.restart_window:
            self._restarts.popleft()
        if len(self._restarts) >= self.max_restarts:
            logger.error("server worker %d (pid %s) %s; giving up", slot, dead.pid, how)
            raise ServerWorkerError(
                f"server worker {slot} (pid {dead.pid}) {how}, after {len(self._restarts)} "
                f"restarts within {self.restart_window:g}s; the server stops. Its log above "
                "names the cause (run with --log-level debug for tracebacks)."
            )
        self._restarts.append(now)
        logger.warning(
            "server worker %d (pid %s) %s; its %d session(s) were dropped; restarting it",
            slot,
            dead.pid,
            how,
            dropped,
        )

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
    """Serve with ``workers`` processes until ``stop`` is set, restarting dead workers.

    With ``unix_paths`` worker k also serves on ``unix_paths[k]``.

    Raises:
        RuntimeError: The workers did not start.
        ServerWorkerError: Workers kept dying (see :class:`WorkerGroup`).
    """
    group = WorkerGroup(build, workers=workers, max_sessions=max_sessions)
    try:
        bound = group.start(host, port, unix_paths)
        on_ready(host, bound)
        group.wait(stop)
    finally:
        group.stop()


__all__ = [
    "DEFAULT_MAX_RESTARTS",
    "DEFAULT_RESTART_WINDOW",
    "DEFAULT_WORKER_STARTUP_TIMEOUT",
    "WorkerGroup",
    "describe_exit",
    "resolve_workers",
    "run_workers",
]
