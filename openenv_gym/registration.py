"""The Gymnasium ids this package registers, and the factories behind them.

* ``openenv/<GymId>`` for a set of classic-control ids (``openenv/CartPole-v1``, ...):
  a Gymnasium env served as OpenEnv. Without ``base_url`` an embedded server is started
  in a child process and stopped on ``close()``.
* ``openenv/Gymnasium-v0``: the same for any id, ``gym.make("openenv/Gymnasium-v0",
  env_id="Acrobot-v1")``.
* ``openenv/Remote-v0``: any OpenEnv server, ``base_url`` required; the spaces come from
  its ``GET /schema``.

Registration happens on ``import openenv_gym``; ``gym.make("openenv_gym:openenv/CartPole-v1")``
imports the package by itself, which is what spawned worker processes need.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import gymnasium as gym

from openenv_gym.env import OpenEnvEnv
from openenv_gym.providers.local import LocalServerProcess

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
    env_id: str,
    base_url: str | None = None,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    startup_timeout: float = 60.0,
    workers: int | str | None = None,
    unix_socket: bool = False,
    **kwargs: Any,
) -> OpenEnvEnv:
    """A Gymnasium env id served as OpenEnv: at ``base_url``, or by an embedded server.

    Args:
        env_id: The Gymnasium id the server runs (only used to start the embedded server).
        base_url: A running ``openenv-gym serve gymnasium`` (or compatible) server.
        env_kwargs: ``gymnasium.make`` keyword arguments for the embedded server's env.
        startup_timeout: Seconds to wait for the embedded server.
        workers: Processes of the embedded server (``"auto"``: one per core); one when
            ``None``. :class:`~openenv_gym.vector.OpenEnvVectorEnv` asks for ``"auto"``.
        unix_socket: The embedded server also serves on Unix sockets (a vector env's
            sessions use them; see :class:`~openenv_gym.providers.LocalServerProcess`).
        **kwargs: Passed to :class:`~openenv_gym.env.OpenEnvEnv`.
    """
    if base_url is not None:
        return OpenEnvEnv(base_url, **kwargs)
    serve_args = ["gymnasium", "--env-id", env_id]
    if env_kwargs:
        serve_args += ["--env-kwargs", json.dumps(dict(env_kwargs))]
    if workers is not None:
        serve_args += ["--workers", str(workers)]
    provider = LocalServerProcess(
        serve_args, startup_timeout=startup_timeout, unix_socket=unix_socket
    )
    return OpenEnvEnv(provider=provider, **kwargs)


def register_envs() -> None:
    """Register the ``openenv/...`` ids with Gymnasium. Safe to call more than once."""
    for gym_id in SERVED_GYMNASIUM_IDS:
        _register(
            f"{NAMESPACE}/{gym_id}",
            entry_point="openenv_gym.registration:make_gymnasium_env",
            kwargs={"env_id": gym_id},
        )
    _register(
        f"{NAMESPACE}/Gymnasium-v0", entry_point="openenv_gym.registration:make_gymnasium_env"
    )
    _register(f"{NAMESPACE}/Remote-v0", entry_point="openenv_gym.env:OpenEnvEnv")


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


def _set_vector_entry_point(env_id: str) -> None:
    from openenv_gym.vector import VectorEntryPoint

    spec = gym.registry.get(env_id)
    if spec is not None and spec.vector_entry_point is None:
        spec.vector_entry_point = VectorEntryPoint(env_id)
