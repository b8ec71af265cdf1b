"""The process's one asyncio event loop for sessions, in a daemon thread.

Every session of the process lives on a single event loop that runs in a daemon thread
(:func:`background_loop`). Synchronous code hands a coroutine to that loop and blocks on its
result with :func:`run_sync`; vectorized code starts many requests on the loop at once and
gathers them, so N round trips overlap.
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


__all__ = ["background_loop", "run_sync"]
