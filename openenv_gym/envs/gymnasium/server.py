"""gymnasium_server: an :class:`~openenv_gym.server.OpenEnvServer` for one Gymnasium env id.

One probe environment is built (and closed) up front, so an unknown id or an unsupported
space fails here, at server start, with a clear error instead of on the first connection.

Example:
    >>> from openenv_gym.server import ServerThread
    >>> server = gymnasium_server("CartPole-v1", max_sessions=4)
    >>> server.action_type.__name__, server.observation_type.__name__
    ('CartPoleV1Action', 'CartPoleV1Observation')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openenv_gym.envs.gymnasium.environment import GymnasiumEnvironment
from openenv_gym.envs.gymnasium.models import GymnasiumState
from openenv_gym.server.app import OpenEnvServer, probed_server


def gymnasium_server(
    env_id: str, *, make_kwargs: Mapping[str, Any] | None = None, **server_kwargs: Any
) -> OpenEnvServer:
    """Serve ``gymnasium.make(env_id, **make_kwargs)``, one instance per session.

    Args:
        env_id: Any registered Gymnasium id.
        make_kwargs: Keyword arguments for ``gymnasium.make``.
        **server_kwargs: :class:`OpenEnvServer` options (``max_sessions``, ``idle_timeout``,
            ``max_message_size``).

    Raises:
        gymnasium.error.Error: ``gymnasium.make`` failed (unknown id, bad kwargs).
        SpaceMappingError: A space is not Box, Discrete, MultiDiscrete or MultiBinary.
    """
    kwargs = dict(make_kwargs or {})

    def make_gymnasium_environment() -> GymnasiumEnvironment:
        return GymnasiumEnvironment(env_id, **kwargs)

    return probed_server(make_gymnasium_environment, state_type=GymnasiumState, **server_kwargs)


__all__ = ["gymnasium_server"]
