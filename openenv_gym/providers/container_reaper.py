"""Remove a process's Docker containers when it ends, however it ends (``SIGKILL`` too).

A process that runs containers and may be killed without warning (a Ray actor: ``ray.kill``,
its driver's death and the loss of its node's raylet can end it with ``SIGKILL``) cannot
remove them itself, and its ``weakref.finalize``/``atexit`` clean-up never runs. A
:class:`ContainerReaper` is a tiny watcher process started *before* the first container:

* it detaches at once (forks, and the fork starts a new session), so it is neither a child
  nor in the process group of its owner: whatever kills the owner's children or group (Ray
  does, when a worker exits) leaves it alone;
* its stdin is the read end of a pipe whose write end only the owner holds, so it reads
  end-of-file the moment the owner is gone (or calls :meth:`ContainerReaper.close`);
* then it removes every container carrying its label (:data:`REAPER_LABEL` = its
  :attr:`~ContainerReaper.key`) and exits.

It needs nothing but the ``docker`` SDK (imported only once the owner is gone): while it
waits, it is a bare interpreter blocked in ``read``.
:class:`~openenv_gym.providers.DockerProvider` uses one with ``remove_with_owner=True``.

Example:
    >>> reaper = ContainerReaper.start()  # doctest: +SKIP
    >>> labels = {REAPER_LABEL: reaper.key}  # doctest: +SKIP
    >>> reaper.close()  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from typing import BinaryIO, Final

#: The label naming the reaper that removes a container (value: the reaper's key).
REAPER_LABEL: Final = "org.openenv-gym.reaper"

#: The watcher: detach, wait for end-of-file on stdin, remove the labelled containers. It
#: runs with its owner's interpreter and environment, so it finds the same ``docker`` SDK.
_WATCHER: Final = """\
import os, sys
if os.fork():
    os._exit(0)
os.setsid()
while True:
    try:
        if not os.read(0, 65536):
            break
    except InterruptedError:
        continue
    except OSError:
        break
import docker
client = docker.from_env(timeout=30)
# ignore_removed: a container removed while it is listed is not an error
mine = client.containers.list(all=True, filters={"label": sys.argv[1]}, ignore_removed=True)
for container in mine:
    try:
        container.remove(force=True)
    except Exception:
        pass
"""


class ContainerReaper:
    """A detached watcher that removes the containers labelled with :attr:`key` as soon
    as this process is gone (or :meth:`close` is called). Make one with :meth:`start`."""

    def __init__(self, key: str, pipe: BinaryIO) -> None:
        #: The value of :data:`REAPER_LABEL` on the containers to remove.
        self.key = key
        self._pipe: BinaryIO | None = pipe

    @property
    def label_filter(self) -> str:
        """The ``docker`` label filter that selects this reaper's containers."""
        return f"{REAPER_LABEL}={self.key}"

    @classmethod
    def start(cls) -> ContainerReaper:
        """Start the watcher; return once it is detached and waiting.

        Raises:
            OSError: The watcher could not be started.
            subprocess.CalledProcessError: It failed before detaching.
        """
        key = uuid.uuid4().hex
        read_end, write_end = os.pipe()
        try:
            reaper = cls(key, os.fdopen(write_end, "wb"))
        except BaseException:
            os.close(write_end)
            os.close(read_end)
            raise
        try:
            # The first process forks the watcher and exits: run() returns when it is
            # detached. Only the watcher keeps the read end; only we keep the write end.
            subprocess.run(
                [sys.executable, "-c", _WATCHER, f"{REAPER_LABEL}={key}"],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=True,
                timeout=60,
            )
        except BaseException:
            reaper.close()
            raise
        finally:
            os.close(read_end)
        return reaper

    def close(self) -> None:
        """Let the watcher go: it removes what is left of its containers, then exits.
        Idempotent; never raises."""
        pipe, self._pipe = self._pipe, None
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()

    def __repr__(self) -> str:
        state = "watching" if self._pipe is not None else "released"
        return f"ContainerReaper({self.key[:8]}, {state})"


__all__ = ["REAPER_LABEL", "ContainerReaper"]
