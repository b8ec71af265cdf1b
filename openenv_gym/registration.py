"""The Gymnasium ids this package registers, and the factories behind them.

* ``openenv/<GymId>`` for a set of classic-control ids (``openenv/CartPole-v1``, ...):
  a Gymnasium env served as OpenEnv. Without ``base_url`` an embedded server is started
  in a child process and stopped on ``close()``.
* ``openenv/Gymnasium-v0``: the same for any id, ``gym.make("openenv/Gymnasium-v0",
  env_id="Acrobot-v1")``.
* ``openenv/Remote-v0``: any OpenEnv server, ``base_url`` required; the spaces come from
  its ``GET /schema``.
* ``image="openenv-gym/gymnasium:latest"`` on the served ids runs the server in a Docker
  container instead of a child process; ``openenv/Docker-v0`` runs any image
  (``image=``, and ``serve_args=`` for our images).

Registration happens on ``import openenv_gym``; ``gym.make("openenv_gym:openenv/CartPole-v1")``
imports the package by itself, which is what spawned worker processes need.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import gymnasium as gym

from openenv_gym.env import OpenEnvEnv
from openenv_gym.envs.gymnasium.options import GYMNASIUM_OPTIONS
from openenv_gym.errors import EnvConfigError
from openenv_gym.providers import server_provider

NAMESPACE: Final = "openenv"

#: Gymnasium ids registered as ``openenv/<id>`` (served by our gymnasium server).
SERVED_GYMNASIUM_IDS: Final = (
    "CartPole-v1",
    "MountainCar-v0",
    "MountainCarContinuous-v0",
    "Acrobot-v1",
    "Pendulum-v1",
)


def make_gymnasium_env(
    env_id: str | None = None,
    base_url: str | None = None,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    startup_timeout: float = 60.0,
    image: str | None = None,
    token: str | None = None,
    docker_kwargs: Mapping[str, Any] | None = None,
    workers: int | str | None = None,
    unix_socket: bool = False,
    server_time_limit: bool = True,
    **kwargs: Any,
) -> OpenEnvEnv:
    """A Gymnasium env id served as OpenEnv: at ``base_url``, or by an embedded server.

    Args:
        env_id: The Gymnasium id the server runs (required to start the embedded server).
        base_url: A running ``openenv-gym serve gymnasium`` (or compatible) server.
        env_kwargs: ``gymnasium.make`` keyword arguments for the embedded server's env.
        startup_timeout: Seconds to wait for the embedded server.
        image: Run the embedded server in this Docker image (``openenv-gym build`` makes
            ``openenv-gym/gymnasium:latest``) instead of a child process.
        token: The bearer token the server requires (an embedded server is started with it).
        docker_kwargs: More :class:`~openenv_gym.providers.DockerProvider` arguments.
        workers: Processes of the embedded server (``"auto"``: one per core); one when
            ``None``. :class:`~openenv_gym.vector.OpenEnvVectorEnv` asks for ``"auto"``.
        unix_socket: The embedded server also serves on Unix sockets (a vector env's
            sessions use them; see :class:`~openenv_gym.providers.LocalServerProcess`).
        server_time_limit: ``False`` starts the embedded server without the id's own
            ``TimeLimit`` (unless ``env_kwargs`` sets ``max_episode_steps``), so the one that
            ``gymnasium.make`` adds on this side is the only limit, as with the raw id:
            ``gym.make("openenv/CartPole-v1", max_episode_steps=1000)`` runs episodes to 1000.
            The ``openenv/<GymId>`` ids set it. A server at ``base_url`` keeps its own limit.
        **kwargs: Passed to :class:`~openenv_gym.env.OpenEnvEnv`.

    Raises:
        EnvConfigError: Neither ``env_id`` nor ``base_url`` is given.
    """
    if base_url is not None:
        return OpenEnvEnv(base_url, token=token, **kwargs)
    if env_id is None:
        raise EnvConfigError(
            "openenv/Gymnasium-v0 needs the Gymnasium id to serve, or a running server: "
            "gym.make('openenv/Gymnasium-v0', env_id='Acrobot-v1'), or "
            "gym.make('openenv/Gymnasium-v0', base_url='http://127.0.0.1:8000')"
        )
    make_kwargs = dict(env_kwargs or {})
    if not server_time_limit:
        # gymnasium.make(..., max_episode_steps=-1) applies no TimeLimit.
        make_kwargs.setdefault("max_episode_steps", -1)
    options = {"env_id": env_id, "make_kwargs": make_kwargs or None}
    provider = server_provider(
        ["gymnasium", *GYMNASIUM_OPTIONS.to_argv(options)],
        workers=workers,
        image=image,
        token=token,
        startup_timeout=startup_timeout,
        docker_kwargs=docker_kwargs,
        unix_socket=unix_socket,
    )
    return OpenEnvEnv(provider=provider, token=token, **kwargs)


def register_envs() -> None:
    """Register the ``openenv/...`` ids with Gymnasium. Safe to call more than once."""
    for gym_id in SERVED_GYMNASIUM_IDS:
        local = gym.spec(gym_id)
        _register(
            f"{NAMESPACE}/{gym_id}",
            entry_point="openenv_gym.registration:make_gymnasium_env",
            # gym.make (and make_vec) apply the id's time limit on this side, as for the raw
            # id; the embedded server runs without one, so a larger max_episode_steps holds.
            kwargs={"env_id": gym_id, "server_time_limit": False},
            max_episode_steps=local.max_episode_steps,
            reward_threshold=local.reward_threshold,
        )
    _register(
        f"{NAMESPACE}/Gymnasium-v0", entry_point="openenv_gym.registration:make_gymnasium_env"
    )
    _register(f"{NAMESPACE}/Remote-v0", entry_point="openenv_gym.env:OpenEnvEnv")
    register_game_envs()


def register_game_envs() -> None:
    """Register ``openenv/Atari-v0`` and ``openenv/Chess-v0`` (our Atari and chess servers,
    embedded when no ``base_url`` is given; also any official OpenEnv Atari/chess server)."""
    _register(f"{NAMESPACE}/Atari-v0", entry_point="openenv_gym.envs.atari.client:make_atari_env")
    _register(f"{NAMESPACE}/Chess-v0", entry_point="openenv_gym.envs.chess.client:make_chess_env")


def _register(env_id: str, **kwargs: Any) -> None:
    if env_id not in gym.registry:
        gym.register(env_id, **kwargs)


# --------------------------------------------------------------------------- vector entry points


def register_vector_entry_points() -> None:
    """Give the ``openenv/...`` ids a native ``vector_entry_point`` (:class:`OpenEnvVectorEnv`),
    so ``gym.make_vec("openenv/CartPole-v1", num_envs=8)`` opens 8 sessions on one event loop.
    One line per id: ``_set_vector_entry_point("openenv/<Id>")``.
    """
    for gym_id in SERVED_GYMNASIUM_IDS:
        _set_vector_entry_point(f"{NAMESPACE}/{gym_id}")
    _set_vector_entry_point(f"{NAMESPACE}/Gymnasium-v0")
    _set_vector_entry_point(f"{NAMESPACE}/Remote-v0")
    _set_vector_entry_point(f"{NAMESPACE}/Atari-v0")
    _set_vector_entry_point(f"{NAMESPACE}/Chess-v0")


def _set_vector_entry_point(env_id: str) -> None:
    from openenv_gym.vector import VectorEntryPoint

    spec = gym.registry.get(env_id)
    if spec is not None and spec.vector_entry_point is None:
        spec.vector_entry_point = VectorEntryPoint(env_id)


# --------------------------------------------------------------------------- docker


def make_docker_env(
    image: str | None = None,
    serve_args: Sequence[str] | None = None,
    *,
    token: str | None = None,
    startup_timeout: float = 60.0,
    docker_kwargs: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> OpenEnvEnv:
    """Any OpenEnv server image in a container on 127.0.0.1 (or placed by the vector env's
    ``fleet=``, e.g. on a Ray node); the spaces from its schema.

    Args:
        image: The image to run (required).
        serve_args: For our images, the arguments after ``openenv-gym serve`` (e.g.
            ``["gymnasium", "--env-id", "Acrobot-v1"]``); ``None`` keeps the image's command
            (which must listen on port 8000, or pass ``docker_kwargs={"container_port": ...}``).
        token: The bearer token the server requires (passed to the container).
        startup_timeout: Seconds to wait for the container's server.
        docker_kwargs: More :class:`~openenv_gym.providers.DockerProvider` arguments.
        **kwargs: Passed to :class:`~openenv_gym.env.OpenEnvEnv`.

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
    provider = server_provider(
        serve_args,
        image=image,
        token=token,
        startup_timeout=startup_timeout,
        docker_kwargs=docker_kwargs,
    )
    return OpenEnvEnv(provider=provider, token=token, **kwargs)


def register_docker_envs() -> None:
    """Register ``openenv/Docker-v0``. Safe to call more than once."""
    _register(f"{NAMESPACE}/Docker-v0", entry_point="openenv_gym.registration:make_docker_env")
