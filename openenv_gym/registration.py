"""The Gymnasium ids this package registers, derived from the server-env registry.

* The ids of every :data:`~openenv_gym.envs.registry.SERVER_ENVS` entry, with its client
  factory as entry point: ``openenv/<GymId>`` for a set of classic-control ids
  (``openenv/CartPole-v1``, ...) and ``openenv/Gymnasium-v0`` (``gym.make(
  "openenv/Gymnasium-v0", env_id="Acrobot-v1")``), ``openenv/Atari-v0``, ``openenv/Chess-v0``.
  Without ``base_url`` an embedded server is started in a child process and stopped on
  ``close()``; ``image="openenv-gym/gymnasium:latest"`` (...) runs it in a Docker container.
* ``openenv/Remote-v0``: any OpenEnv server, ``base_url`` required; the spaces come from
  its ``GET /schema``.
* ``openenv/Docker-v0`` runs any image (``image=``, and ``serve_args=`` for our images).

Each id also gets a native vector entry point
(:class:`~openenv_gym.vector.OpenEnvVectorEnv`).

Registration happens on ``import openenv_gym``; ``gym.make("openenv_gym:openenv/CartPole-v1")``
imports the package by itself, which is what spawned worker processes need.

Example:
    >>> register_all()  # safe to call again
    >>> gym.spec("openenv/CartPole-v1").entry_point
    'openenv_gym.envs.gymnasium.client:make_gymnasium_env'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import gymnasium as gym

from openenv_gym.envs.registry import NAMESPACE, SERVER_ENVS
from openenv_gym.errors import EnvConfigError
from openenv_gym.vector.entry_point import VectorEntryPoint

if TYPE_CHECKING:
    from openenv_gym.env import OpenEnvEnv

#: The ids that are not a server env of ours: any OpenEnv server, any image.
REMOTE_ENV_ID: Final = f"{NAMESPACE}/Remote-v0"
DOCKER_ENV_ID: Final = f"{NAMESPACE}/Docker-v0"


def register_envs() -> None:
    """Register the ``openenv/...`` ids of :data:`~openenv_gym.envs.registry.SERVER_ENVS`
    and ``openenv/Remote-v0`` with Gymnasium. Safe to call more than once."""
    for spec in SERVER_ENVS.values():
        for gym_id in spec.gym_ids:
            limits: dict[str, Any] = {}
            if gym_id.limits_of is not None:
                local = gym.spec(gym_id.limits_of)
                # The served id's limits: gym.make adds the same TimeLimit the server applies.
                limits = {
                    "max_episode_steps": local.max_episode_steps,
                    "reward_threshold": local.reward_threshold,
                }
            _register(gym_id.name, entry_point=spec.client, kwargs=dict(gym_id.kwargs), **limits)
    _register(REMOTE_ENV_ID, entry_point="openenv_gym.env:OpenEnvEnv")


def register_docker_envs() -> None:
    """Register ``openenv/Docker-v0``. Safe to call more than once."""
    _register(DOCKER_ENV_ID, entry_point="openenv_gym.registration:make_docker_env")


def register_vector_entry_points() -> None:
    """Give the ``openenv/...`` ids a native ``vector_entry_point`` (:class:`OpenEnvVectorEnv`),
    so ``gym.make_vec("openenv/CartPole-v1", num_envs=8)`` opens 8 sessions on one event loop.
    """
    ids = [gym_id.name for spec in SERVER_ENVS.values() for gym_id in spec.gym_ids]
    for env_id in [*ids, REMOTE_ENV_ID]:
        spec = gym.registry.get(env_id)
        if spec is not None and spec.vector_entry_point is None:
            spec.vector_entry_point = VectorEntryPoint(env_id)


def register_all() -> None:
    """Register every ``openenv/...`` id with its vector entry point (what ``import
    openenv_gym`` does). Safe to call more than once."""
    register_envs()
    register_docker_envs()
    register_vector_entry_points()


def _register(env_id: str, **kwargs: Any) -> None:
    if env_id not in gym.registry:
        gym.register(env_id, **kwargs)


def make_docker_env(
    image: str | None = None, serve_args: Sequence[str] | None = None, **kwargs: Any
) -> OpenEnvEnv:
    """Any OpenEnv server image in a container on 127.0.0.1 (or placed by the vector env's
    ``fleet=``, e.g. on a Ray node); the spaces from its schema.

    Args:
        image: The image to run (required).
        serve_args: For our images, the arguments after ``openenv-gym serve`` (e.g.
            ``["gymnasium", "--env-id", "Acrobot-v1"]``); ``None`` keeps the image's command
            (which must listen on port 8000, or pass ``docker_kwargs={"container_port": ...}``).
        **kwargs: The server's keywords (:class:`~openenv_gym.providers.ServerSpec`:
            ``token``, passed to the container, ``startup_timeout``, ``docker_kwargs``), then
            :class:`~openenv_gym.env.OpenEnvEnv` options.

    Raises:
        EnvConfigError: No ``image``.
    """
    if image is None:
        raise EnvConfigError(
            "openenv/Docker-v0 needs the image to run: "
            "gym.make('openenv/Docker-v0', image='openenv-gym/gymnasium:latest', "
            "serve_args=['gymnasium', '--env-id', 'Acrobot-v1']) (`openenv-gym build` makes "
            "our images)"
        )
    # The client and the providers load with the first env, not with the registry.
    from openenv_gym.env import OpenEnvEnv
    from openenv_gym.providers import ServerSpec, server_provider

    server = ServerSpec.take(kwargs, image=image)
    provider = server_provider(serve_args, server)
    return OpenEnvEnv(provider=provider, token=server.token, **kwargs)


__all__ = [
    "DOCKER_ENV_ID",
    "REMOTE_ENV_ID",
    "make_docker_env",
    "register_all",
    "register_docker_envs",
    "register_envs",
    "register_vector_entry_points",
]
