"""SIGTERM stops a server promptly, even with a client that no longer reads (issue 27, case 6).

A parent that exits without ``close()`` stops reading its sessions and sends its embedded
server SIGTERM. The server used to wait the full close timeout (5 s) for close frames that
never came, so the parent's exit took the provider's whole grace period. Now a stop asked by
a signal waits :data:`~openenv_gym.server.app.PROMPT_STOP_GRACE` for them. Real child
``openenv-gym serve`` processes and real sockets on 127.0.0.1.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable

import pytest

from openenv_gym.server.app import PROMPT_STOP_GRACE
from openenv_gym.server.connection import CLOSE_TIMEOUT
from tests.conftest import raw_websocket_session
from tests.server.conftest import ServedProcess

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def served(serve_process: Callable[..., ServedProcess]) -> tuple[str, subprocess.Popen[str]]:
    server = serve_process("--log-level", "info")
    return server.url, server.process


def test_sigterm_stops_the_server_without_waiting_for_a_peer_that_does_not_read(
    served: tuple[str, subprocess.Popen[str]],
) -> None:
    assert PROMPT_STOP_GRACE < CLOSE_TIMEOUT / 4
    url, process = served
    sock = raw_websocket_session(url)
    try:
        process.send_signal(signal.SIGTERM)
        # Before: the server waited CLOSE_TIMEOUT for a close frame that never came.
        returncode = process.wait(timeout=CLOSE_TIMEOUT - 1.0)
    finally:
        sock.close()
    assert returncode == 0
    _out, err = process.communicate(timeout=10)
    assert "OpenEnv server stopped" in err


def test_sigterm_still_closes_a_reading_peer_cleanly(
    served: tuple[str, subprocess.Popen[str]],
) -> None:
    from websockets.exceptions import ConnectionClosedOK
    from websockets.sync.client import connect

    from openenv_gym.wire.messages import http_to_ws_url

    url, process = served
    with connect(http_to_ws_url(url), open_timeout=10) as ws:
        process.send_signal(signal.SIGTERM)
        with pytest.raises(ConnectionClosedOK) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == 1001  # going away, with the closing handshake
    assert process.wait(timeout=30) == 0
