"""A bare ``websockets`` echo round trip: the floor any WebSocket env client stands on.

The echo server runs in its own process on 127.0.0.1 (``python -m benchmarks.echo`` prints
``ECHO_READY <port>`` and serves until its stdin closes). The client sends a message the
size of a CartPole step reply and waits for it to come back, one at a time, on one
connection, in a plain asyncio loop: no parsing, no spaces, no threads.

Example:
    >>> with EchoServer() as url:  # doctest: +SKIP
    ...     driver = EchoDriver(url)
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, Final, TypeVar

from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, serve

from benchmarks.suite import ActionStream, timed_loop

_T = TypeVar("_T")

READY_PREFIX: Final = "ECHO_READY "
#: What a CartPole step reply looks like on the wire (the size matters, not the values).
PAYLOAD: Final = json.dumps(
    {
        "type": "observation",
        "data": {
            "observation": {"observation": [0.0123456, -0.0234567, 0.0345678, -0.0456789]},
            "reward": 1.0,
            "done": False,
        },
    }
)


async def _echo(connection: ServerConnection) -> None:
    async for message in connection:
        await connection.send(message)


async def _serve_until_stdin_closes() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def watch_stdin() -> None:
        try:
            while sys.stdin.buffer.read(65536):
                pass
        finally:
            loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=watch_stdin, daemon=True).start()
    async with serve(_echo, "127.0.0.1", 0, compression=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        print(f"{READY_PREFIX}{port}", flush=True)
        await stop.wait()


class EchoServer:
    """The echo server as a child process; a context manager yielding its ``ws://`` URL."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> str:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.echo"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self._process.stdout.readline() if self._process.stdout is not None else ""
        if not line.startswith(READY_PREFIX):  # "" when the child died before listening
            self.__exit__(None, None, None)
            raise RuntimeError(f"the echo server did not start (it printed {line!r})")
        return f"ws://127.0.0.1:{int(line[len(READY_PREFIX) :])}"

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        if process.stdout is not None:
            process.stdout.close()


class EchoDriver:
    """A :class:`~benchmarks.suite.Driver` doing one echo round trip per "step"."""

    def __init__(self, url: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._connection: ClientConnection = self._loop.run_until_complete(
            connect(url, compression=None)
        )

    def run(self, actions: ActionStream, seconds: float) -> tuple[int, float]:
        return self._loop.run_until_complete(self._run(seconds))

    async def _run(self, seconds: float) -> tuple[int, float]:
        connection = self._connection
        clock = time.perf_counter
        start = clock()
        deadline = start + seconds
        trips = 0
        while True:
            await connection.send(PAYLOAD)
            await connection.recv()
            trips += 1
            now = clock()
            if now >= deadline:
                return trips, now - start

    def close(self) -> None:
        try:
            self._loop.run_until_complete(self._connection.close())
        finally:
            self._loop.close()


class ThreadedEchoDriver:
    """The same round trip, sent from this thread through an asyncio loop in another one.

    That is the shape of a synchronous client over a background event loop (ours): the
    difference to :class:`EchoDriver` is the cost of the thread hand-off alone.
    """

    def __init__(self, url: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._connection: ClientConnection = self._call(self._connect(url))

    @staticmethod
    async def _connect(url: str) -> ClientConnection:
        return await connect(url, compression=None)

    def _call(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    async def _trip(self) -> None:
        await self._connection.send(PAYLOAD)
        await self._connection.recv()

    def run(self, actions: ActionStream, seconds: float) -> tuple[int, float]:
        return timed_loop(lambda row: self._call(self._trip()), actions, seconds)

    def close(self) -> None:
        try:
            self._call(self._connection.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            self._loop.close()


if __name__ == "__main__":
    asyncio.run(_serve_until_stdin_closes())
