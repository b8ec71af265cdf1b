"""RLlib (new API stack) on remote OpenEnv environments.

Two ways to hand an ``openenv/...`` id to RLlib:

* the ``openenv_gym:`` id form, which every RLlib worker resolves by importing the package::

      config = openenv_config(PPOConfig(), "openenv/CartPole-v1", env_config={"base_url": URL})

  which is ``config.environment("openenv_gym:openenv/CartPole-v1", env_config=...)`` plus
  ``env_runners(gym_env_vectorize_mode="vector_entry_point")``, so each env runner steps its
  ``num_envs_per_env_runner`` sessions natively (:class:`~openenv_gym.vector.OpenEnvVectorEnv`,
  one batch round trip per step) instead of through a ``SyncVectorEnv`` of single envs;
* ``tune.register_env``: :func:`register_env` registers a creator under a name of your
  choice; RLlib then calls it with ``num_envs`` for the vector env.

``env_config`` holds :class:`~openenv_gym.vector.OpenEnvVectorEnv` options: ``base_url`` (one
URL or a list), ``reconnect``, timeouts, and the env's own options (Atari preprocessing:
``stack_num``, ``episodic_life``, ...). Without ``base_url`` each env runner starts its own
embedded server. Atari frames reach RLlib's CNN as ``float32``, channels last
(:mod:`openenv_gym.integrations.rllib_images`).

Example:
    >>> from ray.rllib.algorithms.ppo import PPOConfig  # doctest: +SKIP
    >>> config = openenv_config(PPOConfig(), "openenv/CartPole-v1")  # doctest: +SKIP
    >>> algo = config.build_algo()  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

import gymnasium as gym

from openenv_gym.extras import optional_imports
from openenv_gym.vector import OpenEnvVectorEnv

#: The prefix that makes Gymnasium import this package before looking an id up.
ID_PREFIX: Final = "openenv_gym:"
#: The ids whose frames get :mod:`~openenv_gym.integrations.rllib_images`'s connector.
ATARI_ID_PREFIX: Final = "openenv/Atari"
ConfigT = TypeVar("ConfigT")


def rllib_env_id(env_id: str) -> str:
    """``"openenv/CartPole-v1"`` -> ``"openenv_gym:openenv/CartPole-v1"`` (idempotent)."""
    return env_id if env_id.startswith(ID_PREFIX) else ID_PREFIX + env_id


def openenv_config(
    config: ConfigT,
    env_id: str,
    *,
    env_config: Mapping[str, Any] | None = None,
    num_envs_per_env_runner: int | None = None,
    image_observations: bool | None = None,
) -> ConfigT:
    """Point an RLlib ``AlgorithmConfig`` at ``env_id``, stepped natively.

    Args:
        config: E.g. ``PPOConfig()``; returned, configured.
        env_id: A registered ``openenv/...`` id.
        env_config: :class:`OpenEnvVectorEnv` options (``base_url``, ...).
        num_envs_per_env_runner: Sessions per env runner (RLlib's default when ``None``).
        image_observations: Set ``env_to_module_connector`` to
            :func:`~openenv_gym.integrations.rllib_images.image_connector`, which hands
            ``uint8`` frames to RLlib's CNN as ``float32`` in ``[0, 1]``, channels last
            (RLlib refuses byte input; envpool-style preprocessed frames are channel
            first). ``None``: for the ``openenv/Atari-*`` ids. A connector of your own
            replaces it: put ``ImageObservations()`` first in yours.
    """
    configured: Any = config
    configured = configured.environment(rllib_env_id(env_id), env_config=dict(env_config or {}))
    runner_options: dict[str, Any] = {"gym_env_vectorize_mode": "vector_entry_point"}
    if num_envs_per_env_runner is not None:
        runner_options["num_envs_per_env_runner"] = num_envs_per_env_runner
    if image_observations is None:
        image_observations = env_id.removeprefix(ID_PREFIX).startswith(ATARI_ID_PREFIX)
    if image_observations:  # (without Ray the import raises MissingExtraError)
        from openenv_gym.integrations.rllib_images import image_connector

        runner_options["env_to_module_connector"] = image_connector
    result: ConfigT = configured.env_runners(**runner_options)
    return result


def env_creator(env_id: str) -> Callable[[Mapping[str, Any]], Any]:
    """A ``tune.register_env`` creator: with ``num_envs`` in the config it builds an
    :class:`OpenEnvVectorEnv`, else one ``gym.make(env_id, ...)`` env."""

    def create(env_config: Mapping[str, Any]) -> Any:
        options = dict(env_config)
        num_envs = options.pop("num_envs", None)
        if num_envs is None:
            return gym.make(env_id, **options)
        return OpenEnvVectorEnv(env_id, int(num_envs), **options)

    return create


def register_env(env_id: str, name: str | None = None) -> str:
    """``tune.register_env(name, env_creator(env_id))``; returns the name (``env_id`` by
    default) to pass to ``config.environment(name, env_config=...)``.

    Call it in the driver; RLlib ships registered creators to its workers.
    """
    with optional_imports("openenv_gym.integrations.rllib.register_env"):
        from ray import tune

    registered = name or env_id
    tune.register_env(registered, env_creator(env_id))
    return registered


__all__ = [
    "ATARI_ID_PREFIX",
    "ID_PREFIX",
    "env_creator",
    "openenv_config",
    "register_env",
    "rllib_env_id",
]
