"""A server built on the first release of OpenEnv, ``openenv-core==0.1.1``: its
``create_fastapi_app`` with dataclass models, serving :mod:`.walk`. HTTP only: ``POST /reset``
(it ignores the body, seed included), ``POST /step`` (``{"action": {...}}`` or the fields),
``GET /state``, ``GET /health``; no ``/schema``, no ``/ws``.

Run by the Python of ``.venv-openenv-core-0.1`` (see :mod:`.openenv_core_01`)::

    .venv-openenv-core-0.1/bin/python tests/third_party_servers/openenv_core_01_app.py [--web]

It prints ``READY <port>`` once it listens on 127.0.0.1. Nothing here runs on import.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any


def build_app(web: bool = False) -> Any:
    """The ``openenv-core`` 0.1.1 app (imports that release: only in its own venv), with the
    env's dataclass models of :mod:`.walk_models`; ``web=True`` adds the release's web
    interface (``ENABLE_WEB_INTERFACE=true``: ``/web``, ``GET /web/metadata`` naming the env
    ``walk_env``, and a ``/ws`` of its own that is not OpenEnv's protocol)."""
    from openenv_core.env_server import Environment, Observation, State, create_fastapi_app
    from openenv_core.env_server.web_interface import create_web_interface_app

    sys.path.insert(0, str(Path(__file__).parent))
    from walk import Walk
    from walk_models import WalkAction, WalkObservation

    class WalkEnvironment(Environment):
        def __init__(self) -> None:
            super().__init__()
            self.game = Walk()

        def reset(self) -> Observation:
            return WalkObservation(**self.game.reset())

        def step(self, action: Any) -> Observation:
            assert isinstance(action, WalkAction)
            observation, reward, done = self.game.step(action.direction)
            return WalkObservation(**observation, reward=reward, done=done)

        @property
        def state(self) -> State:
            return State(**self.game.state())

    if web:
        return create_web_interface_app(WalkEnvironment(), WalkAction, WalkObservation, "walk_env")
    return create_fastapi_app(WalkEnvironment(), WalkAction, WalkObservation)


def main() -> None:
    """Serve on a free port of 127.0.0.1; print ``READY <port>``."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # before READY: a client may connect as soon as it reads the line
    app = build_app(web="--web" in sys.argv[1:])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    print(f"READY {sock.getsockname()[1]}", flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
