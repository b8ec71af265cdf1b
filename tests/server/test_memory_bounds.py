"""Memory per connection stays bounded under clients that flood and never read.

Once, 2M pings from a client that never read grew the server by 239 MiB, and frames just
under the hard cap cost ~144 MiB per connection (issue 14, cases 3 and 4). A real server
process on 127.0.0.1; raw TCP clients (``benchmarks.memory_bounds``) send without reading.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest
from websockets.sync.client import connect

from benchmarks.memory_bounds import client_frame, open_raw, rss_mib, send_for
from openenv_gym.server.app import HARD_CAP_FACTOR
from openenv_gym.wire.messages import SERVER_INBOUND_LIMIT
from tests.server.conftest import ServedProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
MIB = 1024 * 1024


@pytest.fixture
def served(serve_process: Callable[..., ServedProcess]) -> tuple[int, int]:
    server = serve_process(stderr=False)
    return server.pid, server.port


def _assert_serves(port: int) -> None:
    with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=10) as ws:
        ws.send('{"type":"reset","data":{"seed":0}}')
        assert json.loads(ws.recv(timeout=10))["type"] == "observation"


def test_a_ping_flood_that_never_reads_is_throttled(served: tuple[int, int]) -> None:
    pid, port = served
    time.sleep(0.5)
    before = rss_mib(pid)
    sock = open_raw(port)
    try:
        # 60 MB of the largest pings; the server stops reading once its pongs pile up.
        accepted = send_for(sock, client_frame(0x9, b"p" * 125) * 470_000, 8.0)
        grown = rss_mib(pid) - before
        assert accepted < 24 * MIB, accepted  # kernel buffers, then nothing more is read
        assert grown < 16, grown
        _assert_serves(port)  # other sessions are served meanwhile
    finally:
        sock.close()


def test_big_frames_from_connections_that_never_read_cost_a_bounded_amount(
    served: tuple[int, int],
) -> None:
    pid, port = served
    time.sleep(0.5)
    before = rss_mib(pid)
    connections = [open_raw(port) for _ in range(4)]
    try:
        payload = b'"' + b"x" * (HARD_CAP_FACTOR * SERVER_INBOUND_LIMIT - 1024) + b'"'
        frame = client_frame(0x1, payload)
        for sock in connections:
            send_for(sock, frame * 8, 3.0)
        time.sleep(0.5)
        per_connection = (rss_mib(pid) - before) / len(connections)
        assert per_connection < 16, per_connection  # the README states the measured bound
        _assert_serves(port)
    finally:
        for sock in connections:
            sock.close()
