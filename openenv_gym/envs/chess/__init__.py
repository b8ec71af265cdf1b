"""Chess (python-chess) over OpenEnv: the server and the Gymnasium client.

Server: :func:`chess_server` / ``openenv-gym serve chess --opponent random``. Client:
``gym.make("openenv/Chess-v0", opponent="random")`` (:class:`ChessOpenEnvEnv`). Both
need the ``chess`` extra; the names below are imported on first use, so importing this
package (e.g. by the CLI) works without it.
"""

from __future__ import annotations

from openenv_gym.extras import lazy_exports

_LAZY = {
    "ChessAction": "openenv_gym.envs.chess.models",
    "ChessObservation": "openenv_gym.envs.chess.models",
    "ChessState": "openenv_gym.envs.chess.models",
    "ChessEnvironment": "openenv_gym.envs.chess.environment",
    "ChessOpenEnvEnv": "openenv_gym.envs.chess.client",
    "make_chess_env": "openenv_gym.envs.chess.client",
    "chess_server": "openenv_gym.envs.chess.server",
}

__getattr__ = lazy_exports(__name__, _LAZY)

__all__ = sorted(_LAZY)
