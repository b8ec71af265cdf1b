"""Where the embedded servers of a vector env run: here (the default) or on a server fleet.

Not to be confused with :class:`openenv_gym.vector.connections.Connections`, which holds a
vector env's connections: a :class:`ServerFleet` places the servers those connections go to.

Every embedded server is built by one call, :func:`openenv_gym.providers.server_provider`,
from the ``openenv-gym serve`` arguments of its env id. By default that call makes a child
process of this machine (or a container with ``image=``). A :class:`ServerFleet` takes
that call over while :func:`using_fleet` is active, so the same ids (``openenv/Atari-v0``,
``openenv/Gymnasium-v0`` with any Gymnasium id, ...) get their servers elsewhere, e.g. on
the nodes of a Ray cluster (:class:`~openenv_gym.providers.ray.RayFleet`).
:class:`~openenv_gym.vector.OpenEnvVectorEnv` activates the fleet given as ``fleet=``
while it starts its servers.

The names ``fleet=`` accepts are resolved by :func:`openenv_gym.providers.resolve_fleet`.

Example:
    >>> active_fleet() is None  # outside using_fleet(...): the child processes of this machine
    True
"""

from __future__ import annotations

import contextlib
import contextvars
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence

from openenv_gym.providers.base import ServerProvider
from openenv_gym.providers.spec import DEFAULT_SERVER_SPEC, ServerSpec


class ServerFleet(ABC):
    """Makes the provider of each embedded server: decides where the servers run."""

    @abstractmethod
    def server(
        self, serve_args: Sequence[str] | None, server: ServerSpec = DEFAULT_SERVER_SPEC
    ) -> ServerProvider:
        """The (not yet started) provider of one ``openenv-gym serve <serve_args>`` server,
        or of a container of ``image`` (``serve_args=None``: the image's own command).

        The arguments are those of :func:`openenv_gym.providers.server_provider`.
        """


_ACTIVE: contextvars.ContextVar[ServerFleet | None] = contextvars.ContextVar(
    "openenv_gym_fleet", default=None
)


def active_fleet() -> ServerFleet | None:
    """The fleet :func:`using_fleet` made active, or ``None`` (servers run here)."""
    return _ACTIVE.get()


@contextlib.contextmanager
def using_fleet(fleet: ServerFleet | None) -> Iterator[None]:
    """Build the embedded servers of this block on ``fleet`` (``None``: here, the default)."""
    token = _ACTIVE.set(fleet)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


__all__ = ["ServerFleet", "active_fleet", "using_fleet"]
