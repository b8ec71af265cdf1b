"""A server built on the first release of OpenEnv, ``openenv-core==0.1.1``: its
``create_fastapi_app`` with dataclass models, serving :mod:`.walk`. HTTP only: ``POST /reset``
(it ignores the body, seed included), ``POST /step`` (``{"action": {...}}`` or the fields),
``GET /state``, ``GET /health``; no ``/schema``, no ``/ws``.

Run by the Python of ``.venv-openenv-core-0.1`` (see :mod:`.openenv_core_01`)::

    .venv-openenv-core-0.1/bin/python tests/third_party_servers/openenv_core_01_app.py

It prints ``READY <port>`` once it listens on 127.0.0.1. Nothing here runs on import.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any


def build_app() -> Any:
    """The ``openenv-core`` 0.1.1 app (imports that release: only in its own venv)."""
    from dataclasses import dataclass

    from openenv_core.env_server import Action, Environment, Observation, State, create_fastapi_app

    sys.path.insert(0, str(Path(__file__).parent))
    from walk import Walk

    @dataclass(kw_only=True)
    class WalkAction(Action):
        direction: int

    @dataclass(kw_only=True)
    class WalkObservation(Observation):
        position: int = 0
        steps: int = 0

    class WalkEnvironment(Environment):
        def __init__(self) -> None:
            super().__init__()
            self.game = Walk()

        def reset(self) -> Observation:
            return WalkObservation(**self.game.reset())

        def step(self, action: Action) -> Observation:
            assert isinstance(action, WalkAction)
            observation, reward, done = self.game.step(action.direction)
            return WalkObservation(**observation, reward=reward, done=done)

        @property
        def state(self) -> State:
            return State(**self.game.state())

    return create_fastapi_app(WalkEnvironment(), WalkAction, WalkObservation)


def main() -> None:
    """Serve on a free port of 127.0.0.1; print ``READY <port>``."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # before READY: a client may connect as soon as it reads the line
    server = uvicorn.Server(uvicorn.Config(build_app(), log_level="warning"))
    print(f"READY {sock.getsockname()[1]}", flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
