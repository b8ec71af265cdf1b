"""Atari 2600 games (``ale-py``) over OpenEnv: the server and the Gymnasium client.

Server: :func:`atari_server` / ``openenv-gym serve atari --game pong``. Client:
``gym.make("openenv/Atari-v0", game="pong")`` (:class:`AtariOpenEnvEnv`). The server needs
the ``atari`` extra (``ale-py``); the client needs it only against official servers. The
names below are imported on first use, so importing this package loads no server module.
"""

from __future__ import annotations

from openenv_gym.extras import lazy_exports

_EXPORTS = {
    f"{__name__}.client": ("AtariOpenEnvEnv", "RemoteALE", "make_atari_env"),
    f"{__name__}.environment": ("AtariEnvironment", "rom_id"),
    f"{__name__}.models": (
        "AtariAction",
        "AtariObservation",
        "AtariState",
        "atari_models",
        "screen_shape",
    ),
    f"{__name__}.server": ("atari_server",),
}

__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = sorted(name for names in _EXPORTS.values() for name in names)
