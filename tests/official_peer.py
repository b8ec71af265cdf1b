"""Serve an app of the official ``openenv`` package (the protocol's reference peer) under
uvicorn on 127.0.0.1, in a thread of the test process.

Example:
    >>> from openenv.core.env_server import create_fastapi_app  # doctest: +SKIP
    >>> app = create_fastapi_app(Env, Action, Observation)  # doctest: +SKIP
    >>> with serve_official_app(app) as url:  # doctest: +SKIP
    ...     env = gym.make("openenv/Remote-v0", base_url=url)
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def serve_official_app(
    app: Any, port: int = 0, ws: str = "websockets-sansio", **config: Any
) -> Iterator[str]:
    """Run ``app`` (a FastAPI app of the official package) on 127.0.0.1; yield its URL.

    ``port=0`` takes a free port; ``ws`` is uvicorn's WebSocket implementation; ``config``
    goes to ``uvicorn.Config`` (e.g. ``ws_ping_interval``).
    """
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", ws=ws, **config))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        if not server.started:
            raise RuntimeError("the official openenv server did not start within 30 s")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
