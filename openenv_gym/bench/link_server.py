"""Servers "on another host" for the suite: a private ``/dev/shm``, reached through a link.

:class:`PrivateShmServerProcess` is our ``openenv-gym serve`` child started inside its own
mount namespace (``unshare --mount``) with a fresh tmpfs on ``/dev/shm``: the client's
shared-memory probe file is not there, so the same-host shortcut cannot apply, exactly as
with a server on another machine or in a container. It needs ``unshare`` and the right to
mount (root, or a user namespace that grants it).

:func:`linked_url` puts a :class:`~openenv_gym.bench.link_proxy.LinkProxyProcess` with the
profile's delay and bandwidth in front of a server URL.

Example:
    >>> from openenv_gym.bench.links import parse_link
    >>> server = PrivateShmServerProcess(["gymnasium", "--env-id", "CartPole-v1"])
    >>> server.command[:3]
    ['unshare', '--mount', '--propagation']
    >>> with PrivateShmServerProcess(["gymnasium", "--env-id", "CartPole-v1"]) as server:
    ...     with linked_url(server.base_url, parse_link("rtt_ms=2")) as url:
    ...         url.startswith("http://127.0.0.1:") and url != server.base_url
    True
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final
from urllib.parse import urlsplit

from openenv_gym.bench.link_proxy import Ceiling, LinkProxyProcess, measure_ceiling
from openenv_gym.bench.links import LinkProfile
from openenv_gym.errors import LinkProxyError, ServerStartError
from openenv_gym.providers import LocalServerProcess

#: Mounts a fresh tmpfs on /dev/shm, then becomes the server (same pid: stop() reaches it).
_MOUNT_AND_EXEC: Final = (
    'mount -t tmpfs -o size=2g,mode=1777 openenv-gym-private-shm /dev/shm && exec "$@"'
)


class PrivateShmServerProcess(LocalServerProcess):
    """:class:`~openenv_gym.providers.LocalServerProcess` with its own, empty ``/dev/shm``.

    Takes the same arguments, but serves on no Unix socket (``--unix-socket off``): a server
    on another host has none a client here could reach. :meth:`start` raises
    :class:`~openenv_gym.errors.ServerStartError` when ``unshare`` is missing or the mount
    is not permitted (the message says so).
    """

    def __init__(self, serve_args: Sequence[str], **kwargs: Any) -> None:
        super().__init__(serve_args, **{**kwargs, "unix_socket": False})

    @property
    def command(self) -> list[str]:
        return [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            _MOUNT_AND_EXEC,
            "sh",
            *super().command,
        ]

    def start(self) -> str:
        if shutil.which("unshare") is None:
            raise ServerStartError(
                "a server with a private /dev/shm needs the `unshare` command (util-linux), "
                "which is not on PATH; install util-linux, or run the suite with --link loopback"
            )
        try:
            return super().start()
        except ServerStartError as exc:
            raise ServerStartError(
                f"{exc}\n(the server runs under `unshare --mount` with its own tmpfs on "
                "/dev/shm, which needs root or CAP_SYS_ADMIN; without them use --link loopback)",
                log=exc.log,
            ) from exc


@contextmanager
def linked_url(url: str, link: LinkProfile) -> Iterator[str]:
    """A proxy child with ``link``'s delay and bandwidth in front of ``url``; yields its URL.

    Raises:
        LinkProxyError: ``url`` has no host and port, or the proxy did not start.
    """
    parts = urlsplit(url)
    if parts.hostname is None or parts.port is None:
        raise LinkProxyError(f"expected a server URL like http://127.0.0.1:8000, got {url!r}")
    proxy = LinkProxyProcess(
        (parts.hostname, parts.port),
        one_way_delay=link.one_way_delay,
        bytes_per_s=link.bytes_per_s,
    )
    host, port = proxy.start()
    try:
        yield f"{parts.scheme}://{host}:{port}{parts.path}"
    finally:
        proxy.stop()


@functools.cache
def proxy_ceiling() -> Ceiling:
    """The proxy's own ceiling, measured once per process (about a second)."""
    return measure_ceiling()
