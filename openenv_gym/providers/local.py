"""The embedded default: an ``openenv-gym serve ...`` server in a child process.

The child binds ``127.0.0.1`` on a free port (``--port 0``) and prints one
``OPENENV_GYM_READY {...}`` line naming it; the provider then polls ``GET /health`` until
the server answers. The child never outlives its parent:

* :meth:`LocalServerProcess.stop` terminates it (then kills it after a grace period);
* a ``weakref.finalize`` does the same when the provider is garbage collected or the
  interpreter exits;
* the child runs with ``--exit-with-parent`` and stops when its stdin (a pipe from the
  parent) reaches EOF, which also happens when the parent is killed with ``SIGKILL``.

Example:
    >>> serve_args = ["gymnasium", "--env-id", "CartPole-v1"]
    >>> with LocalServerProcess(serve_args) as server:
    ...     print(server.base_url)  # doctest: +ELLIPSIS
    http://127.0.0.1:...
"""

from __future__ import annotations

import collections
import contextlib
import os
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import IO, Any, Final

from openenv_gym.client import TOKEN_ENV_VAR, is_healthy
from openenv_gym.errors import ServerStartError
from openenv_gym.providers.base import ServerProvider
from openenv_gym.providers.ready_line import parse_ready_line
from openenv_gym.providers.spec import DEFAULT_STARTUP_TIMEOUT, UNIX_SOCKETS

_LOG_LINES: Final = 200


def spawn_unbuffered(
    command: Sequence[str], env: Mapping[str, str] | None = None
) -> subprocess.Popen[str]:
    """Start ``command``: stdin a pipe, stdout and stderr one text pipe, Python's output
    unbuffered (so a ready line arrives as it is printed), ``env`` over this environment."""
    return subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )


def _terminate(process: subprocess.Popen[str], grace: float = 5.0) -> None:
    """Stop a child process: SIGTERM, wait, then SIGKILL. Never raises."""
    if process.poll() is not None:
        return
    try:
        if process.stdin is not None:
            process.stdin.close()
    except OSError:
        pass
    try:
        process.terminate()
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(grace)
    except OSError:
        pass


class LocalServerProcess(ServerProvider):
    """Run ``python -m openenv_gym.cli serve <serve_args>`` on 127.0.0.1 (or ``host``) as a
    child process.

    Args:
        serve_args: Arguments after ``serve``, e.g. ``["gymnasium", "--env-id", "CartPole-v1"]``.
            ``--host``, ``--port`` and ``--exit-with-parent`` are added by the provider.
        startup_timeout: Seconds to wait for the server to be ready.
        env: Extra environment variables for the child.
        unix_socket: Also serve on Unix sockets (``--unix-socket auto``, listed in
            :attr:`unix_sockets`; the default where the platform has them): local clients
            then skip the TCP stack. ``False``: TCP only (``--unix-socket off``).
        host: The address to bind; ``127.0.0.1`` unless the server must be reached from
            other machines (a Ray node's servers bind the node's IP).
        token: The bearer token the server requires (passed as ``OPENENV_TOKEN``); clients
            find it in :attr:`token`. ``None``: the child's ``OPENENV_TOKEN``, if any.
            Embedded servers (:func:`~openenv_gym.providers.server_provider`) get a fresh
            random one unless the user gave one.
    """

    def __init__(
        self,
        serve_args: Sequence[str],
        *,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        env: Mapping[str, str] | None = None,
        unix_socket: bool = UNIX_SOCKETS,
        host: str = "127.0.0.1",
        token: str | None = None,
    ) -> None:
        self.serve_args = list(serve_args)
        self.token = token
        self.host = host
        self._unix_socket = unix_socket
        self.startup_timeout = startup_timeout
        self._env = dict(env or {})
        if token is not None:
            self._env[TOKEN_ENV_VAR] = token
        self._process: subprocess.Popen[str] | None = None
        self._base_url: str | None = None
        self._log: collections.deque[str] = collections.deque(maxlen=_LOG_LINES)
        self._ready = threading.Event()
        self._ready_info: dict[str, Any] = {}
        self._finalizer: weakref.finalize | None = None

    @property
    def base_url(self) -> str | None:
        return self._base_url

    @property
    def unix_sockets(self) -> list[str]:
        """The Unix socket paths the running server listens on (one per worker), or ``[]``."""
        if self._base_url is None:
            return []
        return [str(p) for p in self._ready_info.get("unix_sockets", [])]

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        return self._process.pid if self._process is not None else None

    @property
    def command(self) -> list[str]:
        """The full command line of the child."""
        return [
            sys.executable,
            "-m",
            "openenv_gym.cli",
            "serve",
            *self.serve_args,
            "--host",
            self.host,
            "--port",
            "0",
            "--exit-with-parent",
            "--unix-socket",
            "auto" if self._unix_socket else "off",
        ]

    def log_tail(self, lines: int = 40) -> str:
        """The last lines the server printed."""
        return "\n".join(list(self._log)[-lines:])

    def start(self) -> str:
        """Start the server and wait until ``/health`` answers; return its base URL.

        Raises:
            ServerStartError: The process exited, or was not ready within ``startup_timeout``
                (the error carries the server's last output lines).
        """
        if self._base_url is not None:
            return self._base_url
        # A provider may be started again after stop() (a reconnecting vector env does).
        self._ready = threading.Event()
        self._ready_info = {}
        process = spawn_unbuffered(self.command, self._env)
        self._process = process
        self._finalizer = weakref.finalize(self, _terminate, process)
        threading.Thread(
            target=self._read_output,
            args=(process.stdout,),
            name=f"openenv-gym-server-log-{process.pid}",
            daemon=True,
        ).start()
        with self._stop_on_failure():
            self._base_url = self._wait_until_ready(process)
        return self._base_url

    def _read_output(self, stream: IO[str] | None) -> None:
        if stream is None:
            return
        with stream:  # closed at EOF (the child exited), so no pipe is left open
            for raw_line in stream:
                line = raw_line.rstrip("\n")
                info = None
                if not self._ready.is_set():
                    with contextlib.suppress(ValueError):  # a garbled READY line is logged
                        info = parse_ready_line(line)
                if info is None:
                    self._log.append(line)
                else:
                    self._ready_info = info
                    self._ready.set()

    def _wait_until_ready(self, process: subprocess.Popen[str]) -> str:
        deadline = time.monotonic() + self.startup_timeout
        while not self._ready.wait(0.05):
            if process.poll() is not None:
                time.sleep(0.1)  # let the reader thread collect the last lines
                raise ServerStartError(
                    f"the server process exited with code {process.returncode} before it was "
                    f"ready. Command: {' '.join(self.command)}\n--- server output ---\n"
                    f"{self.log_tail()}",
                    log=self.log_tail(),
                )
            if time.monotonic() > deadline:
                raise self._timeout_error()
        url = str(self._ready_info["url"])
        while not is_healthy(url, timeout=1.0):
            if process.poll() is not None or time.monotonic() > deadline:
                raise self._timeout_error()
            time.sleep(0.05)
        return url

    def _timeout_error(self) -> ServerStartError:
        return ServerStartError(
            f"the server was not ready within {self.startup_timeout:g}s. Command: "
            f"{' '.join(self.command)}\n--- server output ---\n{self.log_tail()}",
            log=self.log_tail(),
        )

    def stop(self) -> None:
        """Terminate the server process. Idempotent."""
        sockets = self.unix_sockets
        if self._finalizer is not None:
            self._finalizer()  # runs _terminate once, then detaches
        self._base_url = None
        for path in sockets:  # a killed server leaves its socket files behind
            with contextlib.suppress(OSError):
                os.unlink(path)

    def __repr__(self) -> str:
        state = self._base_url or "not started"
        return f"LocalServerProcess({self.serve_args!r}, {state})"
