"""A reply timeout drops the connection at once: no closing handshake with a frozen server.

Once, a single env facing a frozen server (SIGSTOP) raised at twice ``reply_timeout``: after
the timeout it sent a close frame and waited ``close_timeout`` for an answer that could not
come (issue 14, case 8). A real WebSocket server on 127.0.0.1 that never answers checks the
mechanism (no close frame is sent), not a duration.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from openenv_gym.client import AsyncSession, ConnectOptions, run_sync
from openenv_gym.errors import ReplyTimeoutError
from tests.conftest import RawWebSocketServer


def test_reply_timeout_aborts_without_a_close_handshake() -> None:
    seen: dict[str, Any] = {}
    done = threading.Event()

    async def never_answer(ws: ServerConnection) -> None:
        try:
            while True:
                await ws.recv()  # read requests, answer none
        except ConnectionClosed as closed:
            seen["close frame"] = closed.rcvd
        finally:
            done.set()

    with RawWebSocketServer(never_answer) as server:
        session = run_sync(
            AsyncSession.open(server.url, ConnectOptions(reply_timeout=0.5, encoding="json"))
        )
        with pytest.raises(ReplyTimeoutError):
            run_sync(session.request({"type": "state"}))
        assert session.closed
        assert done.wait(10)
    assert seen["close frame"] is None  # dropped, not closed politely
