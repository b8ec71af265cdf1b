"""Where a server comes from: a child process (the embedded default), a Docker container,
a Ray cluster, or a given URL. :func:`server_provider` builds every embedded server: a child
process or a container here, or a server of the fleet :func:`using_fleet` made active
(:class:`~openenv_gym.providers.ray.RayFleet`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from openenv_gym.client import TOKEN_ENV_VAR
from openenv_gym.errors import FleetConfigError, OpenEnvGymError
from openenv_gym.providers.base import GivenServer, ServerProvider
from openenv_gym.providers.docker import DockerProvider, remove_orphans
from openenv_gym.providers.local import LocalServerProcess
from openenv_gym.providers.server_fleet import ServerFleet, active_fleet, using_fleet

#: The names ``fleet=`` accepts, besides a :class:`ServerFleet`.
FLEET_NAMES: Final = ("local", "ray")


def server_provider(
    serve_args: Sequence[str] | None,
    *,
    image: str | None = None,
    token: str | None = None,
    startup_timeout: float = 60.0,
    docker_kwargs: Mapping[str, Any] | None = None,
    unix_socket: bool = False,
    workers: int | str | None = None,
) -> ServerProvider:
    """``openenv-gym serve <serve_args>`` in a child process, or in ``image`` when given;
    on the active fleet instead while :func:`using_fleet` is in effect.

    Args:
        serve_args: Arguments after ``serve``, e.g. ``["gymnasium", "--env-id", "CartPole-v1"]``;
            with ``image``, ``None`` keeps the image's own command (any OpenEnv image).
        image: A Docker image (ours, ``openenv-gym/gymnasium:latest``, ..., or any OpenEnv
            image with ``serve_args=None``) to run the server in; ``None`` runs it as a
            child process.
        token: A bearer token the server will require.
        startup_timeout: Seconds to wait for the server.
        docker_kwargs: More :class:`DockerProvider` arguments (``run_kwargs``, ``pull``, ...).
        unix_socket: A child-process server also serves on Unix sockets (see
            :class:`LocalServerProcess`); ignored for a container, which is reached over TCP.
        workers: ``--workers`` of the server (``"auto"``: one process per core); ``None``
            leaves the server's default (one).

    Raises:
        OpenEnvGymError: Neither ``serve_args`` nor ``image`` is given.

    Example:
        >>> server_provider(["gymnasium", "--env-id", "CartPole-v1"], image="openenv-gym/gymnasium")
        DockerProvider('openenv-gym/gymnasium', not started)
    """
    fleet = active_fleet()
    if fleet is not None:
        return fleet.server(
            serve_args,
            image=image,
            token=token,
            startup_timeout=startup_timeout,
            docker_kwargs=docker_kwargs,
            unix_socket=unix_socket,
            workers=workers,
        )
    if workers is not None and serve_args is not None:
        serve_args = [*serve_args, "--workers", str(workers)]
    if image is None:
        if serve_args is None:
            raise OpenEnvGymError(
                "no server to start: pass serve_args (the arguments after `openenv-gym "
                "serve`) or image=... (a container of that image, with its own command)"
            )
        env = {TOKEN_ENV_VAR: token} if token is not None else None
        return LocalServerProcess(
            serve_args, startup_timeout=startup_timeout, env=env, unix_socket=unix_socket
        )
    options = {"token": token, "startup_timeout": startup_timeout, **dict(docker_kwargs or {})}
    if serve_args is None:
        return DockerProvider(image, **options)
    return DockerProvider.serving(image, serve_args, **options)


def resolve_fleet(fleet: Any) -> ServerFleet | None:
    """The fleet named by ``fleet=``: ``None`` or ``"local"`` (child processes here),
    ``"ray"`` (a :class:`~openenv_gym.providers.ray.RayFleet` with its defaults), or a
    :class:`ServerFleet` such as ``RayFleet(num_cpus=2)``.

    Raises:
        FleetConfigError: ``fleet`` is none of these.
    """
    if fleet is None or fleet == "local":
        return None
    if fleet == "ray":
        from openenv_gym.providers.ray import RayFleet

        return RayFleet()
    if isinstance(fleet, ServerFleet):
        return fleet
    raise FleetConfigError(
        f"expected fleet to be one of {list(FLEET_NAMES)} or a ServerFleet such as "
        f"openenv_gym.providers.ray.RayFleet(num_cpus=1), got {fleet!r}"
    )


__all__ = [
    "FLEET_NAMES",
    "DockerProvider",
    "GivenServer",
    "LocalServerProcess",
    "ServerFleet",
    "ServerProvider",
    "remove_orphans",
    "resolve_fleet",
    "server_provider",
    "using_fleet",
]
