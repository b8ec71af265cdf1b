"""ServerThread: an :class:`~openenv_gym.server.OpenEnvServer` on its own loop in a daemon thread.

Tests, benchmarks and notebooks use it to run a real server inside the current process.
Environment calls then run on that thread (inline on its event loop).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, TypeVar

from openenv_gym.server.app import OpenEnvServer, format_url

T = TypeVar("T")


class ServerThread:
    """Run an :class:`OpenEnvServer` on its own event loop in a daemon thread.

    Use it as a context manager (or call :meth:`start`/:meth:`stop`); the server listens
    once ``__enter__`` returns.

    Args:
        server: The server to run.
        host: The address to bind; ``127.0.0.1`` by default.
        port: The port; ``0`` picks a free one (see :attr:`port`).
        startup_timeout: Seconds to wait for the server to listen.

    Example:
        >>> import httpx
        >>> from openenv_gym.envs.gymnasium import gymnasium_server
        >>> with ServerThread(gymnasium_server("CartPole-v1")) as running:
        ...     httpx.get(running.url + "/health").json()
        {'status': 'healthy'}
    """

    def __init__(
        self,
        server: OpenEnvServer,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        startup_timeout: float = 30.0,
    ) -> None:
        self.server = server
        self.host = host
        self._requested_port = port
        self._startup_timeout = startup_timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    @property
    def port(self) -> int:
        """The bound port.

        Raises:
            RuntimeError: The thread is not started.
        """
        return _started(self._port)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the server runs on (for ``call_soon_threadsafe``).

        Raises:
            RuntimeError: The thread is not started.
        """
        return _started(self._loop)

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server."""
        return format_url(self.host, self.port)

    def start(self) -> ServerThread:
        """Start the thread and wait until the server listens.

        Raises:
            RuntimeError: Already started, or the server did not start in time.
            OSError: The address cannot be bound.
        """
        if self._thread is not None:
            raise RuntimeError(f"the server thread is already running at {self.url}")
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        outcome: dict[str, Any] = {}

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                outcome["port"] = loop.run_until_complete(
                    self.server.start(self.host, self._requested_port)
                )
            except BaseException as exc:
                outcome["error"] = exc
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.close()

        thread = threading.Thread(target=run, name="openenv-gym-server", daemon=True)
        thread.start()
        if not ready.wait(self._startup_timeout):
            raise RuntimeError(
                f"the server did not start within {self._startup_timeout} s on "
                f"{self.host}:{self._requested_port}"
            )
        if "error" in outcome:
            thread.join()
            raise outcome["error"]
        self._loop, self._thread, self._port = loop, thread, outcome["port"]
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server (closing every session) and the thread. Idempotent."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._loop = self._thread = None
        if not loop.is_closed():
            future = asyncio.run_coroutine_threadsafe(self.server.stop(), loop)
            try:
                future.result(timeout)
            finally:
                loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _started(value: T | None) -> T:
    """``value``, set once the thread has started (``RuntimeError`` before)."""
    if value is None:
        raise RuntimeError("the server thread is not started; call start() first")
    return value


__all__ = ["ServerThread"]
