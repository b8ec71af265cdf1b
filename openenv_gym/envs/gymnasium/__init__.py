"""Any Gymnasium env id served as an OpenEnv environment.

Example:
    >>> from openenv_gym import OpenEnvEnv
    >>> from openenv_gym.server import ServerThread
    >>> with ServerThread(gymnasium_server("CartPole-v1")) as running:
    ...     env = OpenEnvEnv(running.url)  # or an official client
    ...     obs, info = env.reset(seed=0)
    ...     env.close()
    >>> obs.shape
    (4,)
"""

from openenv_gym.envs.gymnasium.environment import GymnasiumEnvironment, json_safe
from openenv_gym.envs.gymnasium.models import (
    GymnasiumAction,
    GymnasiumObservation,
    GymnasiumState,
    gymnasium_models,
)
from openenv_gym.envs.gymnasium.server import gymnasium_server

__all__ = [
    "GymnasiumAction",
    "GymnasiumEnvironment",
    "GymnasiumObservation",
    "GymnasiumState",
    "gymnasium_models",
    "gymnasium_server",
    "json_safe",
]
