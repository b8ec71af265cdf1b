"""Atari 2600 games (``ale-py``) over OpenEnv: the server and the Gymnasium client.

Server: :func:`atari_server` / ``openenv-gym serve atari --game pong``. Client:
``gym.make("openenv/Atari-v0", game="pong")`` (:class:`AtariOpenEnvEnv`). The server needs
the ``atari`` extra (``ale-py``); the client needs it only against official servers.
"""

from openenv_gym.envs.atari.client import AtariOpenEnvEnv, RemoteALE, make_atari_env
from openenv_gym.envs.atari.environment import AtariEnvironment, rom_id
from openenv_gym.envs.atari.models import (
    AtariAction,
    AtariObservation,
    AtariState,
    atari_models,
    screen_shape,
)
from openenv_gym.envs.atari.server import atari_server

__all__ = [
    "AtariAction",
    "AtariEnvironment",
    "AtariObservation",
    "AtariOpenEnvEnv",
    "AtariState",
    "RemoteALE",
    "atari_models",
    "atari_server",
    "make_atari_env",
    "rom_id",
    "screen_shape",
]
