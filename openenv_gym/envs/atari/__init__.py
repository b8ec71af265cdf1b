"""Atari 2600 games (``ale-py``) over OpenEnv: the server and the Gymnasium client.

Server: :func:`atari_server` / ``openenv-gym serve atari --game pong``. Client:
``gym.make("openenv/Atari-v0", game="pong")`` (:class:`AtariOpenEnvEnv`). The server needs
the ``atari`` extra (``ale-py``); the client needs it only against official servers. The
names below are imported on first use, so importing this package loads no server module.
"""

from __future__ import annotations

from openenv_gym.extras import lazy_exports

_LAZY = {
    "AtariOpenEnvEnv": "openenv_gym.envs.atari.client",
    "RemoteALE": "openenv_gym.envs.atari.client",
    "make_atari_env": "openenv_gym.envs.atari.client",
    "AtariEnvironment": "openenv_gym.envs.atari.environment",
    "rom_id": "openenv_gym.envs.atari.environment",
    "AtariAction": "openenv_gym.envs.atari.models",
    "AtariObservation": "openenv_gym.envs.atari.models",
    "AtariState": "openenv_gym.envs.atari.models",
    "atari_models": "openenv_gym.envs.atari.models",
    "screen_shape": "openenv_gym.envs.atari.models",
    "atari_server": "openenv_gym.envs.atari.server",
}

__getattr__ = lazy_exports(__name__, _LAZY)

__all__ = sorted(_LAZY)
