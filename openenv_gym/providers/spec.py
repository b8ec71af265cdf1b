"""How to start an embedded server: the keywords every ``make_*_env`` takes, written once.

``gym.make("openenv/CartPole-v1", image=..., token=..., workers=...)`` and the Atari, chess
and Docker ids take the same six keywords for the server they start when no ``base_url`` is
given. :meth:`ServerSpec.take` lifts them out of the ``gym.make`` keywords into one frozen
value, which :func:`openenv_gym.providers.server_provider` and a
:class:`~openenv_gym.providers.ServerFleet` read.

Example:
    >>> kwargs = {"image": "openenv-gym/gymnasium:latest", "workers": 2, "reply_timeout": 5.0}
    >>> spec = ServerSpec.take(kwargs)
    >>> spec.image, spec.workers, spec.startup_timeout
    ('openenv-gym/gymnasium:latest', 2, 60.0)
    >>> kwargs  # what is left goes to the env
    {'reply_timeout': 5.0}
"""

from __future__ import annotations

import dataclasses
import inspect
import socket
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

Factory = TypeVar("Factory", bound=Callable[..., Any])

#: Whether this platform has Unix sockets (the default of :attr:`ServerSpec.unix_socket`).
UNIX_SOCKETS: Final = hasattr(socket, "AF_UNIX")
#: Seconds an embedded server gets to print its READY line (or answer ``/health``).
DEFAULT_STARTUP_TIMEOUT: Final = 60.0


@dataclass(frozen=True)
class ServerSpec:
    """The embedded server's settings.

    Attributes:
        image: Run the server in a container of this Docker image (ours,
            ``openenv-gym/gymnasium:latest``, ..., which ``openenv-gym build`` makes, or any
            OpenEnv image); ``None`` runs it as a child process.
        token: The bearer token the server requires (it is started with it, and the
            client sends it).
        startup_timeout: Seconds to wait for the server.
        docker_kwargs: More :class:`~openenv_gym.providers.DockerProvider` arguments
            (``run_kwargs``, ``pull``, ...).
        unix_socket: A child-process server also serves on Unix sockets, and the env's
            sessions go through them: no TCP stack per message (see
            :class:`~openenv_gym.providers.LocalServerProcess`). On by default where the
            platform has them (``socket.AF_UNIX``); ignored for a container or a Ray node,
            which are reached over TCP.
        workers: Processes of the server (``"auto"``: one per core); ``None`` leaves the
            server's default (one). :class:`~openenv_gym.vector.OpenEnvVectorEnv` asks for
            ``"auto"``.
    """

    image: str | None = None
    token: str | None = None
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    docker_kwargs: Mapping[str, Any] | None = field(default=None, hash=False)
    unix_socket: bool = UNIX_SOCKETS
    workers: int | str | None = None

    @classmethod
    def take(cls, kwargs: MutableMapping[str, Any], **given: Any) -> ServerSpec:
        """Pop the server keywords out of ``kwargs`` (``gym.make`` keywords) into a spec.

        Args:
            kwargs: Keywords; those naming a field of :class:`ServerSpec` are removed.
            **given: Fields the caller already holds (a positional ``image``, say); they
                win over ``kwargs``.
        """
        found = {name: kwargs.pop(name) for name in SERVER_KEYWORDS if name in kwargs}
        return cls(**{**found, **given})


#: A child process with the defaults (the ``server=`` default of the functions taking a spec).
DEFAULT_SERVER_SPEC: Final = ServerSpec()

#: The keywords :class:`ServerSpec` takes, in order.
SERVER_KEYWORDS: Final = tuple(f.name for f in dataclasses.fields(ServerSpec))


def takes_server_keywords(factory: Factory) -> Factory:
    """Mark a ``make_*_env`` whose ``**kwargs`` take the :class:`ServerSpec` keywords: its
    signature (what :func:`inspect.signature` shows, and so what a vector env checks before
    it asks for ``workers="auto"`` and ``unix_socket=True``) lists them.

    Example:
        >>> @takes_server_keywords
        ... def make_env(base_url=None, **kwargs):
        ...     return ServerSpec.take(kwargs)
        >>> "unix_socket" in inspect.signature(make_env).parameters
        True
        >>> make_env(workers=3).workers
        3
    """
    signature = inspect.signature(factory)
    parameters = list(signature.parameters.values())
    variadic = [p for p in parameters if p.kind is inspect.Parameter.VAR_KEYWORD]
    if not variadic:
        raise TypeError(f"{factory.__qualname__} must take **kwargs to take the server keywords")
    named = [p for p in parameters if p.kind is not inspect.Parameter.VAR_KEYWORD]
    taken = {p.name for p in named}
    added = [
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default)
        for f in dataclasses.fields(ServerSpec)
        if f.name not in taken
    ]
    factory.__signature__ = signature.replace(parameters=[*named, *added, *variadic])  # type: ignore[attr-defined]
    return factory


__all__ = [
    "DEFAULT_SERVER_SPEC",
    "DEFAULT_STARTUP_TIMEOUT",
    "SERVER_KEYWORDS",
    "ServerSpec",
    "takes_server_keywords",
]
