"""Same-host servers through their Unix sockets: no TCP stack per message.

Our servers also listen on Unix sockets (``openenv-gym serve --unix-socket auto``, the
default) and list them in ``GET /health`` (``"unix_sockets"``). A client given a loopback
``base_url`` connects through the first listed socket that exists here, and over TCP
otherwise: a server on another host (through a tunnel or a proxy), in a container, or behind
an emulated link with its own ``/dev/shm`` lists sockets this machine cannot see, and an
official server lists none. Every other part of the session (the token, the handshake, the
encodings) is the same on either transport.

Example:
    >>> local_unix_socket("http://10.0.0.7:8000", ["/no/such.sock"]) is None  # not loopback
    True
    >>> is_unix_socket("/no/such.sock")
    False
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Sequence

from openenv_gym.client.http import DEFAULT_CONNECT_TIMEOUT, health, is_loopback_url
from openenv_gym.errors import ServerConnectionError
from openenv_gym.wire.messages import UNIX_SOCKETS_KEY


def is_unix_socket(path: str) -> bool:
    """Whether ``path`` names a Unix socket on this machine (in this mount namespace)."""
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def advertised_unix_sockets(
    base_url: str, *, timeout: float = DEFAULT_CONNECT_TIMEOUT, token: str | None = None
) -> list[str]:
    """The Unix sockets ``GET {base_url}/health`` lists (``[]`` for a server that lists
    none, answers no JSON, or cannot be reached: the session's own connect reports that)."""
    with contextlib.suppress(ServerConnectionError):
        status, body = health(base_url, timeout=timeout, token=token)
        if 200 <= status < 300:
            with contextlib.suppress(ValueError):
                listed = json.loads(body)
                sockets = listed.get(UNIX_SOCKETS_KEY) if isinstance(listed, dict) else None
                if isinstance(sockets, list):
                    return [path for path in sockets if isinstance(path, str)]
    return []


def reachable_unix_sockets(
    base_url: str,
    known: Sequence[str] = (),
    *,
    timeout: float = DEFAULT_CONNECT_TIMEOUT,
    token: str | None = None,
) -> list[str]:
    """The Unix sockets of the loopback server ``base_url`` that exist here, in order:
    ``known`` (an embedded server's, from its provider), else those its ``GET /health``
    lists; ``[]`` (TCP) for any other URL, or when there is none."""
    if not is_loopback_url(base_url):
        return []
    listed = known or advertised_unix_sockets(base_url, timeout=timeout, token=token)
    return [path for path in listed if is_unix_socket(path)]


def local_unix_socket(
    base_url: str,
    known: Sequence[str] = (),
    *,
    timeout: float = DEFAULT_CONNECT_TIMEOUT,
    token: str | None = None,
) -> str | None:
    """The Unix socket a session to ``base_url`` goes through: the first of
    :func:`reachable_unix_sockets` (``None``: TCP)."""
    reachable = reachable_unix_sockets(base_url, known, timeout=timeout, token=token)
    return reachable[0] if reachable else None


__all__ = [
    "advertised_unix_sockets",
    "is_unix_socket",
    "local_unix_socket",
    "reachable_unix_sockets",
]
