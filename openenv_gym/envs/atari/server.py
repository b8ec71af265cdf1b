"""atari_server: an :class:`~openenv_gym.server.OpenEnvServer` for one ALE game.

One probe environment is built (and closed) up front, so an unknown game or a bad option
fails at server start with a clear error.

Example:
    >>> server = atari_server("pong", obs_type="grayscale")
    >>> server.routes.schema["observation"]["properties"]["screen"]["x-space"]["shape"]
    [210, 160]
"""

from __future__ import annotations

from typing import Any

from openenv_gym.envs.atari.environment import AtariEnvironment
from openenv_gym.envs.atari.models import AtariState
from openenv_gym.envs.atari.options import ATARI_OPTIONS
from openenv_gym.server.app import OpenEnvServer, probed_server


def atari_server(game: str | None = None, /, **kwargs: Any) -> OpenEnvServer:
    """Serve one ALE game.

    Args:
        game: The game (or ``game=``; default: pong).
        **kwargs: The Atari options (:data:`~openenv_gym.envs.atari.options.ATARI_OPTIONS`:
            ``game``, ``obs_type``, ``frameskip``, ...; see :class:`AtariEnvironment`) and
            :class:`OpenEnvServer` options (``max_sessions``, ...).

    Raises:
        EnvConfigError: Unknown game or a bad option.
    """
    if game is not None:
        kwargs["game"] = game
    options, server_kwargs = ATARI_OPTIONS.split(kwargs)

    def make_atari_environment() -> AtariEnvironment:
        _one_resize_thread()  # any session may preprocess (the reset key 'preprocessing')
        return AtariEnvironment(**options)

    return probed_server(make_atari_environment, state_type=AtariState, **server_kwargs)


def _one_resize_thread() -> None:
    """Resize each frame in the worker's own thread: OpenCV's default pool hands an 84x84
    resize to a second thread, which on a server of one worker per core only adds wake-ups
    (one resize: 40 µs in one thread, 52 µs wall in two on a 2-core machine). Without
    OpenCV there is nothing to set (a session asking for preprocessing
    then gets the missing extra's error)."""
    try:
        import cv2
    except ImportError:
        return
    cv2.setNumThreads(1)


__all__ = ["atari_server"]
