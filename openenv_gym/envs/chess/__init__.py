"""Chess (python-chess) over OpenEnv: the server and the Gymnasium client.

Server: :func:`chess_server` / ``openenv-gym serve chess --opponent random``. Client:
``gym.make("openenv/Chess-v0", opponent="random")`` (:class:`ChessOpenEnvEnv`). Both
need the ``chess`` extra; the names below are imported on first use, so importing this
package (e.g. by the CLI) works without it.
"""

from __future__ import annotations

from openenv_gym.extras import lazy_exports

_EXPORTS = {
    f"{__name__}.models": ("ChessAction", "ChessObservation", "ChessState"),
    f"{__name__}.environment": ("ChessEnvironment",),
    f"{__name__}.client": ("ChessOpenEnvEnv", "make_chess_env"),
    f"{__name__}.server": ("chess_server",),
}

__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = sorted(name for names in _EXPORTS.values() for name in names)
