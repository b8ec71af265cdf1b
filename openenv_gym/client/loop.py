"""Event loops for sessions: one per env, run in the caller's thread.

:class:`CallerLoop` is the loop of one env (single or vector): a synchronous ``step`` runs it
in the calling thread just long enough to send and receive (``run_until_complete``), so a
step pays no hop to another thread (a hop costs about 40% of a loopback round trip). Between
calls the loop does not run: replies wait in the socket buffers. It is asyncio's default
loop: ``uvloop`` sets up its signal wake-up pipe on every ``run_until_complete`` in the main
thread, which costs more than it saves here. Called from a thread that already runs an event
loop (a Jupyter cell), it runs in a helper thread instead.

:func:`background_loop` and :func:`run_sync` (one loop in a daemon thread for the process)
remain for code that wants to share a loop across threads.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class _LoopThread:
    """An asyncio loop running forever in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        self.thread = threading.Thread(target=self._run, name="openenv-gym-loop", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()


_loop_thread: _LoopThread | None = None
_loop_lock = threading.Lock()


def background_loop() -> asyncio.AbstractEventLoop:
    """The process's one event loop for sessions, started on first use.

    A forked child gets a loop of its own (the parent's thread does not survive a fork).
    """
    global _loop_thread
    with _loop_lock:
        if _loop_thread is None or _loop_thread.pid != os.getpid():
            _loop_thread = _LoopThread()
        return _loop_thread.loop


def _forget_loop_after_fork() -> None:
    global _loop_thread, _loop_lock
    _loop_thread = None
    _loop_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_loop_after_fork)


def run_sync(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coro`` on the background loop and block until it is done.

    Raises:
        RuntimeError: Called from the background loop's own thread (it would deadlock).
    """
    loop = background_loop()
    owner = _loop_thread
    if owner is not None and threading.current_thread() is owner.thread:
        coro.close()
        raise RuntimeError(
            "run_sync() was called from the openenv-gym event loop thread; "
            "await the coroutine instead"
        )
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class CallerLoop:
    """An event loop that runs only during :meth:`run`, in the calling thread.

    Example:
        >>> async def double(x: int) -> int:
        ...     return 2 * x
        >>> loop = CallerLoop()
        >>> loop.run(double(21))
        42
        >>> loop.close()
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._helper: concurrent.futures.ThreadPoolExecutor | None = None

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` to completion and return its result (timeouts live in ``coro``).

        Raises:
            RuntimeError: The loop is closed, or already running (a call from inside it).
        """
        if _running_loop() is None:
            return self.loop.run_until_complete(coro)
        if self._helper is None:  # this thread runs another loop: use a helper thread
            self._helper = concurrent.futures.ThreadPoolExecutor(1, "openenv-gym-loop")
        return self._helper.submit(self.loop.run_until_complete, coro).result()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self.loop.is_closed()

    def close(self) -> None:
        """Close the loop (and the helper thread). Idempotent."""
        if self._helper is not None:
            self._helper.shutdown(wait=True)
            self._helper = None
        if not self.loop.is_closed() and not self.loop.is_running():
            self.loop.close()


__all__ = ["CallerLoop", "background_loop", "run_sync"]
