"""Where the embedded servers of a vector env run: here (the default) or on a fleet.

Every embedded server is built by one call, :func:`openenv_gym.providers.server_provider`,
from the ``openenv-gym serve`` arguments of its env id. By default that call makes a child
process of this machine (or a container with ``image=``). A :class:`FleetProvider` takes
that call over while :func:`using_fleet` is active, so the same ids (``openenv/Atari-v0``,
``openenv/Gymnasium-v0`` with any Gymnasium id, ...) get their servers elsewhere, e.g. on
the nodes of a Ray cluster (:class:`~openenv_gym.providers.ray.RayFleet`).
:class:`~openenv_gym.vector.OpenEnvVectorEnv` activates the fleet given as ``fleet=``
while it starts its servers.

Example:
    >>> resolve_fleet(None) is None  # the child processes of this machine
    True
    >>> resolve_fleet("ray")  # doctest: +SKIP
    RayFleet(num_cpus=1.0, scheduling_strategy='SPREAD')
"""

from __future__ import annotations

import contextlib
import contextvars
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from openenv_gym.errors import FleetConfigError
from openenv_gym.providers.base import ServerProvider

#: The names ``fleet=`` accepts, besides a :class:`FleetProvider`.
FLEET_NAMES: Final = ("local", "ray")


class FleetProvider(ABC):
    """Makes the provider of each embedded server: decides where the servers run."""

    @abstractmethod
    def server(
        self,
        serve_args: Sequence[str] | None,
        *,
        image: str | None = None,
        token: str | None = None,
        startup_timeout: float = 60.0,
        docker_kwargs: Mapping[str, Any] | None = None,
        unix_socket: bool = False,
        workers: int | str | None = None,
    ) -> ServerProvider:
        """The (not yet started) provider of one ``openenv-gym serve <serve_args>`` server,
        or of a container of ``image`` (``serve_args=None``: the image's own command).

        The arguments are those of :func:`openenv_gym.providers.server_provider`.
        """


_ACTIVE: contextvars.ContextVar[FleetProvider | None] = contextvars.ContextVar(
    "openenv_gym_fleet", default=None
)


def active_fleet() -> FleetProvider | None:
    """The fleet :func:`using_fleet` made active, or ``None`` (servers run here)."""
    return _ACTIVE.get()


@contextlib.contextmanager
def using_fleet(fleet: FleetProvider | None) -> Iterator[None]:
    """Build the embedded servers of this block on ``fleet`` (``None``: here, the default)."""
    token = _ACTIVE.set(fleet)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def resolve_fleet(fleet: Any) -> FleetProvider | None:
    """The fleet named by ``fleet=``: ``None`` or ``"local"`` (child processes here),
    ``"ray"`` (a :class:`~openenv_gym.providers.ray.RayFleet` with its defaults), or a
    :class:`FleetProvider` such as ``RayFleet(num_cpus=2)``.

    Raises:
        FleetConfigError: ``fleet`` is none of these.
    """
    if fleet is None or fleet == "local":
        return None
    if fleet == "ray":
        from openenv_gym.providers.ray import RayFleet

        return RayFleet()
    if isinstance(fleet, FleetProvider):
        return fleet
    raise FleetConfigError(
        f"expected fleet to be one of {list(FLEET_NAMES)} or a FleetProvider such as "
        f"openenv_gym.providers.ray.RayFleet(num_cpus=1), got {fleet!r}"
    )


__all__ = ["FLEET_NAMES", "FleetProvider", "active_fleet", "resolve_fleet", "using_fleet"]
