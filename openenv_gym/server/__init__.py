"""The OpenEnv-protocol server runtime: serve :class:`Environment` classes over WebSocket.

Write an :class:`Environment` with pydantic :class:`Action`/:class:`Observation`/:class:`State`
models, hand a factory to :class:`OpenEnvServer`, and official ``openenv`` clients as well as
:class:`openenv_gym.OpenEnvEnv` can use it.

Example:
    >>> import httpx
    >>> from openenv_gym.envs.gymnasium import gymnasium_server
    >>> with ServerThread(gymnasium_server("CartPole-v1")) as running:
    ...     sorted(httpx.get(running.url + "/schema").json())
    ['action', 'observation', 'reset_observation', 'state']
"""

from openenv_gym.server.app import (
    DEFAULT_MAX_SESSIONS,
    HARD_CAP_FACTOR,
    OpenEnvServer,
    format_url,
)
from openenv_gym.server.environment import Environment
from openenv_gym.server.models import Action, EnvironmentMetadata, Observation, State
from openenv_gym.server.session import IDLE_CLOSE_REASON, serialize_observation
from openenv_gym.server.thread import ServerThread

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "HARD_CAP_FACTOR",
    "IDLE_CLOSE_REASON",
    "Action",
    "Environment",
    "EnvironmentMetadata",
    "Observation",
    "OpenEnvServer",
    "ServerThread",
    "State",
    "format_url",
    "serialize_observation",
]
