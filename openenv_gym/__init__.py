"""openenv-gym: remote OpenEnv environments as Gymnasium envs.

Importing the package registers the ``openenv/...`` Gymnasium ids. It loads the client only:
no server module, no server env, no optional extra (a server loads when one is started).

Example:
    >>> import gymnasium as gym
    >>> import openenv_gym
    >>> "openenv/CartPole-v1" in gym.registry
    True
"""

from typing import TYPE_CHECKING

from openenv_gym.env import OpenEnvEnv
from openenv_gym.envs.gymnasium.client import make_gymnasium_env
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
from openenv_gym.vector import OpenEnvPool, OpenEnvVectorEnv, make_pool
from openenv_gym.version import __version__

if TYPE_CHECKING:
    from openenv_gym.config import ExperimentConfig, load_experiment, make_from_config

# The experiment files load the wrappers and the trajectory writer: only when asked for.
__getattr__ = lazy_exports(
    __name__, {"openenv_gym.config": ("ExperimentConfig", "load_experiment", "make_from_config")}
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
