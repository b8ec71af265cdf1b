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

from openenv_gym.envs.atari.environment import (
    DEFAULT_FRAMESKIP,
    DEFAULT_GAME,
    DEFAULT_MAX_FRAMES,
    DEFAULT_REPEAT_ACTION_PROBABILITY,
    AtariEnvironment,
)
from openenv_gym.envs.atari.models import AtariState
from openenv_gym.server.app import OpenEnvServer


def atari_server(
    game: str = DEFAULT_GAME,
    *,
    obs_type: str = "rgb",
    frameskip: int = DEFAULT_FRAMESKIP,
    repeat_action_probability: float = DEFAULT_REPEAT_ACTION_PROBABILITY,
    full_action_space: bool = False,
    mode: int | None = None,
    difficulty: int | None = None,
    max_num_frames_per_episode: int | None = DEFAULT_MAX_FRAMES,
    **server_kwargs: Any,
) -> OpenEnvServer:
    """Serve one ALE game (see :class:`AtariEnvironment` for the options).

    Args:
        **server_kwargs: :class:`OpenEnvServer` options (``max_sessions``, ...).

    Raises:
        EnvConfigError: Unknown game or a bad option.
    """
    options: dict[str, Any] = {
        "game": game,
        "obs_type": obs_type,
        "frameskip": frameskip,
        "repeat_action_probability": repeat_action_probability,
        "full_action_space": full_action_space,
        "mode": mode,
        "difficulty": difficulty,
        "max_num_frames_per_episode": max_num_frames_per_episode,
    }
    probe = AtariEnvironment(**options)
    try:
        action_type, observation_type = probe.action_model, probe.observation_model
        metadata = probe.get_metadata()
    finally:
        probe.close()

    def make_atari_environment() -> AtariEnvironment:
        return AtariEnvironment(**options)

    return OpenEnvServer(
        make_atari_environment,
        action_type=action_type,
        observation_type=observation_type,
        state_type=AtariState,
        metadata=metadata,
        **server_kwargs,
    )


__all__ = ["atari_server"]
