"""Where a server comes from: a child process (the embedded default), a Docker container,
a Ray cluster, or a given URL. :func:`server_provider` builds every embedded server: a child
process or a container here, or a server of the fleet :func:`using_fleet` made active
(:class:`~openenv_gym.providers.ray.RayFleet`). Every embedded server requires a bearer
token: the user's (``token=``, ``OPENENV_TOKEN``), else a fresh random one
(:func:`embedded_server_token`) that only the clients of this process know."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any, Final

from openenv_gym.client import resolve_token
from openenv_gym.errors import FleetConfigError, OpenEnvGymError
from openenv_gym.providers.base import GivenServer, ServerProvider
from openenv_gym.providers.docker import DockerProvider, remove_orphans
from openenv_gym.providers.local import LocalServerProcess
from openenv_gym.providers.server_fleet import ServerFleet, active_fleet, using_fleet
from openenv_gym.providers.spec import DEFAULT_SERVER_SPEC, ServerSpec

#: The names ``fleet=`` accepts, besides a :class:`ServerFleet`.
FLEET_NAMES: Final = ("local", "ray")


def server_provider(
    serve_args: Sequence[str] | None, server: ServerSpec = DEFAULT_SERVER_SPEC
) -> ServerProvider:
    """``openenv-gym serve <serve_args>`` in a child process, or in ``image`` when given;
    on the active fleet instead while :func:`using_fleet` is in effect.

    Args:
        serve_args: Arguments after ``serve``, e.g. ``["gymnasium", "--env-id", "CartPole-v1"]``;
            with ``image``, ``None`` keeps the image's own command (any OpenEnv image).
        server: How to start it (:class:`ServerSpec`: its image, token, workers, ...).

    Raises:
        OpenEnvGymError: Neither ``serve_args`` nor ``image`` is given.

    Example:
        >>> server_provider(
        ...     ["gymnasium", "--env-id", "CartPole-v1"], ServerSpec(image="openenv-gym/gymnasium")
        ... )
        DockerProvider('openenv-gym/gymnasium', not started)
    """
    fleet = active_fleet()
    if fleet is not None:
        return fleet.server(serve_args, server)
    image, workers = server.image, server.workers
    token = embedded_server_token(server.token)
    if workers is not None and serve_args is not None:
        serve_args = [*serve_args, "--workers", str(workers)]
    if image is None:
        if serve_args is None:
            raise OpenEnvGymError(
                "no server to start: pass serve_args (the arguments after `openenv-gym "
                "serve`) or image=... (a container of that image, with its own command)"
            )
        return LocalServerProcess(
            serve_args,
            startup_timeout=server.startup_timeout,
            unix_socket=server.unix_socket,
            token=token,
        )
    options = {
        "token": token,
        "startup_timeout": server.startup_timeout,
        **dict(server.docker_kwargs or {}),
    }
    if serve_args is None:
        return DockerProvider(image, **options)
    return DockerProvider.serving(image, serve_args, **options)


def embedded_server_token(given: str | None = None) -> str:
    """The token an embedded server requires: ``given``, else ``$OPENENV_TOKEN``, else a
    fresh random one (so no other local user can open sessions on it). Our clients send
    their provider's token by themselves (:attr:`ServerProvider.token`).

    Example:
        >>> embedded_server_token("mine")
        'mine'
        >>> len(embedded_server_token()) >= 43 or "OPENENV_TOKEN set"
        True
    """
    token = resolve_token(given)
    return token if token is not None else secrets.token_urlsafe(32)


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
    "ServerSpec",
    "embedded_server_token",
    "remove_orphans",
    "resolve_fleet",
    "server_provider",
    "using_fleet",
]
