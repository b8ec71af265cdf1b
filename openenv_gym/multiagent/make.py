"""``make``: a PettingZoo env of a registered ``openenv/...`` id, read like ``gym.make``.

Each id gets the keywords that seat every player (:data:`SEATING`: chess plays
``opponent="self"``); other keywords go to the id's ``gym.make`` entry point, so without
``base_url`` an embedded server is started (and stopped on ``close()``), as for single envs.
``openenv/Remote-v0`` with ``base_url`` plays any server that seats its players.

Example:
    >>> from openenv_gym.multiagent import make, parallel_env
    >>> env = parallel_env("openenv/Chess-v0", max_moves=4)
    >>> observations, infos = env.reset(seed=0)
    >>> sorted(observations), env.unwrapped.agent_selection
    (['player_0', 'player_1'], 'player_0')
    >>> env.close()
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import gymnasium as gym

from openenv_gym.env import OpenEnvEnv
from openenv_gym.errors import EnvConfigError
from openenv_gym.extras import optional_imports
from openenv_gym.multiagent.aec import OpenEnvAECEnv
from openenv_gym.multiagent.seats import MULTIAGENT_PURPOSE
from openenv_gym.registration import register_envs

with optional_imports(MULTIAGENT_PURPOSE):
    from pettingzoo import ParallelEnv
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel

#: The keywords with which an id's server seats every player (the caller's win).
SEATING: Final[Mapping[str, Mapping[str, Any]]] = {
    "openenv/Chess-v0": {"opponent": "self", "illegal_move": "error"},
}


def check_id(env_id: str) -> gym.envs.registration.EnvSpec:
    """The spec of a registered id.

    Raises:
        EnvConfigError: ``env_id`` is not registered.
    """
    register_envs()
    try:
        return gym.spec(env_id)
    except gym.error.Error as exc:
        known = sorted(i for i in gym.registry if i.startswith("openenv/"))
        raise EnvConfigError(
            f"unknown id {env_id!r}; expected one of {known}, e.g. make('openenv/Chess-v0')"
        ) from exc


def make(env_id: str, *, players: int = 2, **kwargs: Any) -> OpenEnvAECEnv:
    """The ``AECEnv`` of ``env_id`` (see the module docstring).

    Args:
        env_id: A registered ``openenv/...`` id (``"openenv/Chess-v0"``,
            ``"openenv/Remote-v0"`` with ``base_url``).
        players: The game's number of seats.
        **kwargs: The id's ``gym.make`` keywords (``base_url``, ``render_mode``, server
            options such as chess's ``max_moves``).

    Raises:
        EnvConfigError: ``env_id`` is not registered.
        SeatsUnavailableError: The server does not seat every player.
    """
    spec = check_id(env_id)
    env = gym.make(spec, **{**SEATING.get(env_id, {}), **kwargs}, disable_env_checker=True)
    single = env.unwrapped
    if not isinstance(single, OpenEnvEnv):
        env.close()
        raise EnvConfigError(f"{env_id!r} is not an OpenEnv env; got {type(single).__name__}")
    return OpenEnvAECEnv(single, players=players)


def parallel_env(env_id: str, **kwargs: Any) -> ParallelEnv[str, Any, Any]:
    """The Parallel API of :func:`make`'s env, through PettingZoo's turn-based conversion:
    every agent gives an action, the one whose turn it is moves."""
    return turn_based_aec_to_parallel(make(env_id, **kwargs))


__all__ = ["SEATING", "check_id", "make", "parallel_env"]
