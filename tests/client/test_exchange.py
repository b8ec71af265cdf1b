"""One round trip on many blocking connections (:mod:`openenv_gym.client.exchange`), against
real WebSocket servers on 127.0.0.1 whose replies the test releases: replies come in
connection order, failures in place, and with ``together=True`` none before the last is in."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator

import pytest
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from openenv_gym.client import ConnectOptions
from openenv_gym.client.blocking import BlockingConnection
from openenv_gym.client.exchange import exchange_many, receive_each, send_many
from openenv_gym.errors import ReplyTimeoutError, SessionClosedError
from tests.conftest import RawWebSocketServer

pytestmark = pytest.mark.timeout(60)

OPTIONS = ConnectOptions(encoding="json", reply_timeout=20.0)


class HeldReplies:
    """A server that echoes each request, at once, or (``"held ..."`` requests) once the
    test calls :meth:`release`."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.server = RawWebSocketServer(self._handle)

    async def _handle(self, ws: ServerConnection) -> None:
        try:
            async for message in ws:
                text = str(message)
                if text.startswith("held"):
                    while not self.released.is_set():
                        await asyncio.sleep(0.01)
                await ws.send(f"echo {text}")
        except ConnectionClosed:
            pass

    def release(self) -> None:
        self.released.set()


@pytest.fixture
def held() -> Iterator[HeldReplies]:
    replies = HeldReplies()
    with replies.server:
        yield replies


@contextlib.contextmanager
def _opened(server: RawWebSocketServer, count: int) -> Iterator[list[BlockingConnection]]:
    """``count`` connections to ``server``, closed afterwards."""
    url = server.url.replace("http://", "ws://") + "/ws"
    connections = [BlockingConnection.open(url, OPTIONS) for _ in range(count)]
    try:
        yield connections
    finally:
        for connection in connections:
            connection.close()


def test_replies_come_in_connection_order_either_way(held: HeldReplies) -> None:
    held.release()
    with _opened(held.server, 3) as connections:
        for together in (False, True):
            sent = send_many(connections, ["a", "b", "c"])
            replies = list(receive_each(connections, sent, 10.0, together=together))
            assert replies == ["echo a", "echo b", "echo c"]


def test_apart_yields_the_first_reply_while_a_later_one_is_still_held(held: HeldReplies) -> None:
    with _opened(held.server, 2) as connections:
        sent = send_many(connections, ["fast", "held slow"])
        replies = receive_each(connections, sent, 10.0)
        assert next(replies) == "echo fast"  # the held reply cannot have come: not released
        held.release()
        assert next(replies) == "echo held slow"


def test_together_yields_nothing_before_the_last_reply_is_in(held: HeldReplies) -> None:
    released_before: list[bool] = []

    def release_later() -> None:
        time.sleep(0.3)
        released_before.append(True)  # noted before the server may answer
        held.release()

    with _opened(held.server, 2) as connections:
        sent = send_many(connections, ["fast", "held slow"])
        releaser = threading.Thread(target=release_later)
        releaser.start()
        replies = receive_each(connections, sent, 10.0, together=True)
        assert next(replies) == "echo fast"  # still in connection order...
        assert released_before == [True]  # ...but only once the held one was let go
        assert next(replies) == "echo held slow"
        releaser.join()


def test_together_reports_a_closed_connection_in_place(held: HeldReplies) -> None:
    held.release()
    with _opened(held.server, 3) as connections:
        connections[1].close()
        sent = send_many(connections, ["a", "b", "c"])
        replies = list(receive_each(connections, sent, 10.0, together=True))
        assert replies[0] == "echo a"
        assert isinstance(replies[1], SessionClosedError)
        assert replies[2] == "echo c"


def test_together_times_out_on_a_reply_that_never_comes(held: HeldReplies) -> None:
    with _opened(held.server, 2) as connections:
        try:
            sent = send_many(connections, ["a", "held forever"])
            replies = list(receive_each(connections, sent, 0.5, together=True))
            assert replies[0] == "echo a"
            assert isinstance(replies[1], ReplyTimeoutError)
            assert connections[1].closed  # a late reply would pair with the next request
            assert not connections[0].closed
            assert exchange_many(connections[:1], ["again"], 10.0) == ["echo again"]
        finally:
            held.release()
