"""What every server provider offers: start a server, tell its URL, stop it.

A provider owns the server it starts: :meth:`ServerProvider.stop` (idempotent) ends it,
and so do garbage collection and interpreter exit. A URL the user gives is wrapped in
:class:`GivenServer`, which starts and stops nothing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager


class ServerProvider(ABC):
    """Starts (or merely names) one OpenEnv server."""

    #: The bearer token the server requires, when the provider knows it (``None``: none, or
    #: not known). A client given no token of its own sends this one: a
    #: :class:`~openenv_gym.providers.ray.RayServer` makes one up for its fleet.
    token: str | None = None

    @abstractmethod
    def start(self) -> str:
        """Start the server if needed and return its base URL (``http://host:port``)."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the server if this provider started it. Idempotent."""

    @property
    @abstractmethod
    def base_url(self) -> str | None:
        """The server's base URL once started, else ``None``."""

    @property
    def owns_server(self) -> bool:
        """Whether :meth:`stop` ends a server (True) or only forgets a URL (False)."""
        return True

    @property
    def unix_sockets(self) -> list[str]:
        """The Unix socket paths the running server also listens on, one per worker (a
        local child process's; ``[]``: reached over TCP only)."""
        return []

    @contextmanager
    def _stop_on_failure(self) -> Iterator[None]:
        """Around the last part of :meth:`start`: stop what it began if that part fails."""
        try:
            yield
        except BaseException:
            self.stop()
            raise

    def __enter__(self) -> ServerProvider:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class GivenServer(ServerProvider):
    """A server somebody else runs, at a known URL.

    Example:
        >>> GivenServer("http://127.0.0.1:8000").start()
        'http://127.0.0.1:8000'
    """

    def __init__(self, base_url: str) -> None:
        self._base_url = base_url.rstrip("/")

    def start(self) -> str:
        return self._base_url

    def stop(self) -> None:
        return None

    @property
    def base_url(self) -> str:
        return self._base_url

    @property
    def owns_server(self) -> bool:
        return False
