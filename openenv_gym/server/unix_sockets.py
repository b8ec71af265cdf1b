"""Where a server's Unix sockets go: same-host clients skip the TCP stack through them.

``openenv-gym serve --unix-socket auto`` (the default) listens on a fresh Unix socket beside
its TCP port, one per worker, and ``GET /health`` lists them (``"unix_sockets"``). A client
given a loopback ``base_url`` connects through a listed socket it can reach, and over TCP
otherwise (:mod:`openenv_gym.client.local_sockets`).

The automatic socket lives in ``/dev/shm`` where that is a writable directory: it is then
reachable exactly where the server's shared-memory files are, so a server in a container or
behind an emulated link with a private ``/dev/shm`` (the benchmark's "other host") is reached
over TCP, as a server on another machine is. Elsewhere it goes in the temp directory. A
server removes its sockets when it stops; those of a killed one go with its shared files
(:func:`~openenv_gym.wire.shared_memory.remove_stale_files`, when the next server starts).

Example:
    >>> choose_unix_socket("off") is None
    True
    >>> choose_unix_socket("/tmp/my-server.sock")
    '/tmp/my-server.sock'
    >>> path = choose_unix_socket("auto")
    >>> path is None or os.path.basename(path).startswith("openenv-gym-")
    True
"""

from __future__ import annotations

import os
import secrets
import socket
import tempfile
from typing import Final

from openenv_gym.wire.shared_memory import SHM_DIR

#: ``--unix-socket auto``: a fresh socket path (the default).
AUTO: Final = "auto"
#: ``--unix-socket off``: TCP only.
OFF: Final = "off"


def choose_unix_socket(value: str | None) -> str | None:
    """The Unix socket path ``--unix-socket value`` asks for: ``None`` for ``off`` (or
    ``None``, or ``auto`` where the platform has no Unix sockets), a fresh path for ``auto``,
    else ``value`` itself (with ``--workers K`` worker k appends ``.k``)."""
    if value is None or value == OFF:
        return None
    if value != AUTO:
        return value
    if not hasattr(socket, "AF_UNIX"):
        return None
    folder = SHM_DIR
    if folder is None or not os.access(folder, os.W_OK | os.X_OK):
        folder = tempfile.gettempdir()
    # Short (socket paths are limited to ~100 bytes), and named as shared_memory.SERVER_SOCKET
    # says: a server that was killed leaves nothing behind for long (remove_stale_files).
    return os.path.join(folder, f"openenv-gym-{os.getpid()}-{secrets.token_hex(4)}.sock")


__all__ = ["AUTO", "OFF", "choose_unix_socket"]
