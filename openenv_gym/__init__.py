"""openenv-gym: remote OpenEnv environments as Gymnasium envs.

Importing the package registers the ``openenv/...`` Gymnasium ids (with string entry points)
and loads nothing else: the client (pydantic, httpx, websockets) loads on first use, a server
when one is started, an optional extra when it is needed.

Example:
    >>> import gymnasium as gym
    >>> import openenv_gym
    >>> "openenv/CartPole-v1" in gym.registry
    True
"""

from typing import TYPE_CHECKING

from openenv_gym.envs.registry import SERVED_GYMNASIUM_IDS
from openenv_gym.errors import (
    ActionOutOfSpaceError,
    AuthenticationError,
    CapacityReachedError,
    CodecError,
    ConnectionLostError,
    NotAnOpenEnvServerError,
    ObservationMismatchError,
    OpenEnvGymError,
    ProtocolError,
    ReplyTimeoutError,
    ServerConnectionError,
    ServerReplyError,
    ServerStartError,
    SessionClosedError,
    SpaceMappingError,
    ToolCallRefusedError,
    UnsupportedRenderModeError,
)
from openenv_gym.extras import lazy_exports
from openenv_gym.registration import register_all, register_envs
from openenv_gym.version import __version__

if TYPE_CHECKING:
    from openenv_gym.config import ExperimentConfig, load_experiment, make_from_config
    from openenv_gym.env import OpenEnvEnv
    from openenv_gym.envs.gymnasium.client import make_gymnasium_env
    from openenv_gym.vector import OpenEnvPool, OpenEnvVectorEnv, make_pool

# The client, the vector envs and the experiment files: imported on first use.
__getattr__ = lazy_exports(
    __name__,
    {
        "openenv_gym.env": ("OpenEnvEnv",),
        "openenv_gym.envs.gymnasium.client": ("make_gymnasium_env",),
        "openenv_gym.vector": ("OpenEnvPool", "OpenEnvVectorEnv", "make_pool"),
        "openenv_gym.config": ("ExperimentConfig", "load_experiment", "make_from_config"),
    },
)

register_all()

__all__ = [
    "SERVED_GYMNASIUM_IDS",
    "ActionOutOfSpaceError",
    "AuthenticationError",
    "CapacityReachedError",
    "CodecError",
    "ConnectionLostError",
    "ExperimentConfig",
    "NotAnOpenEnvServerError",
    "ObservationMismatchError",
    "OpenEnvEnv",
    "OpenEnvGymError",
    "OpenEnvPool",
    "OpenEnvVectorEnv",
    "ProtocolError",
    "ReplyTimeoutError",
    "ServerConnectionError",
    "ServerReplyError",
    "ServerStartError",
    "SessionClosedError",
    "SpaceMappingError",
    "ToolCallRefusedError",
    "UnsupportedRenderModeError",
    "__version__",
    "load_experiment",
    "make_from_config",
    "make_gymnasium_env",
    "make_pool",
    "register_envs",
]
