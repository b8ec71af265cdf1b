"""Observation arrays through shared memory, between a client and a server on one machine.

A batch of Atari frames is 100 KB per sub-env: sent through a loopback socket it is copied
four to five times (stacked, framed, sent, received, parsed) and the kernel's loopback path
costs more than the copies. When the client and the server share ``/dev/shm`` (the same
machine and the same user, not a container with its own ``/dev/shm``), a batch connection
can carry its big observation arrays in memory-mapped files instead: the server stacks the
rows straight into a file it owns, the frame names the file (``"shm"`` in the array's
descriptor, see :mod:`openenv_gym.wire.binary`), and the client copies the rows out.

Negotiation (``batch_open``, :mod:`openenv_gym.wire.batch`): the client writes a random
token into a probe file (:class:`ProbeFile`) and sends its name and the token; the server
reads the file (:func:`probe_matches`) and answers whether it will use shared memory. Any
failure (no ``/dev/shm``, another machine, another user, a container) means plain frames:
nothing else changes.

The server writes a batch only after the client sent the next step, and the client copies
a batch out before it sends the next step, so one file per field and connection suffices.
Files are removed when their connection closes (and stale ones of dead server processes,
and probes older than :data:`STALE_PROBE_SECONDS`, when a server starts).

Both sides trust a file only when :func:`open_private` accepts it: opened without following
a symbolic link and without blocking (a FIFO cannot freeze a worker's event loop), then a
regular file owned by this process's own user with mode ``0600``. A server refuses a probe
of another user, so shared memory is agreed only between processes of one user, the only
ones that can open each other's files; everyone else gets plain frames. A reader also
refuses descriptors whose dtype is not numeric or whose shape is negative or overflows.

Example:
    >>> import numpy as np
    >>> if SHM_DIR is not None:
    ...     with SharedArrayWriter() as writer, SharedArrayReader() as reader:
    ...         descriptor = writer.put("pixels", [np.ones((2, 2), np.uint8)] * 3)
    ...         reader.array(descriptor).shape
    ... else:
    ...     (3, 2, 2)
    (3, 2, 2)
"""

from __future__ import annotations

import contextlib
import errno
import math
import mmap
import os
import re
import secrets
import stat
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from openenv_gym.errors import ProtocolError, SharedFileRefusedError

#: Where shared files live (``None``: this system has no ``/dev/shm``; plain frames only).
SHM_DIR: Final = "/dev/shm" if os.path.isdir("/dev/shm") else None
#: Arrays of at least this many bytes (the stacked batch) go through shared memory.
MIN_SHARED_BYTES: Final = 64 * 1024
_PREFIX: Final = "openenv-gym-"
#: A server's file: ``openenv-gym-<server pid>-<16 hex>-<n>``.
_SERVER_FILE: Final = re.compile(r"openenv-gym-(\d+)-[0-9a-f]{16}-\d+")
_NAME: Final = re.compile(rf"openenv-gym-probe-[0-9a-f]{{32}}|{_SERVER_FILE.pattern}")
#: A server's Unix socket there (:mod:`openenv_gym.server.unix_sockets`), removed with its
#: files when the server is gone: ``openenv-gym-<server pid>-<8 hex>.sock[.<worker>]``.
SERVER_SOCKET: Final = re.compile(r"openenv-gym-(\d+)-[0-9a-f]{8}\.sock(?:\.\d+)?")
_TOKEN: Final = re.compile(r"[0-9a-f]{32}")
_PROBE: Final = re.compile(r"openenv-gym-probe-[0-9a-f]{32}")
#: Array kinds a shared file may hold: booleans, integers, floats.
_ARRAY_KINDS: Final = frozenset("biuf")
#: The only mode a shared file may have.
PRIVATE_MODE: Final = 0o600
#: Probes older than this are removed when a server starts (their client died mid-open).
STALE_PROBE_SECONDS: Final = 60.0


def _path(name: str) -> str:
    if SHM_DIR is None or not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ProtocolError(
            f"expected a shared-memory file name like 'openenv-gym-<pid>-<hex>-<n>', got "
            f"{str(name)[:80]!r}",
            received=str(name)[:80],
        )
    return os.path.join(SHM_DIR, name)


def open_private(path: str, flags: int = os.O_RDONLY) -> int:
    """Open ``path`` only if it is a regular file of this process's user with mode ``0600``;
    its descriptor.

    The file is opened with ``O_NOFOLLOW | O_NONBLOCK`` (a symbolic link is refused, a FIFO
    does not block) and checked with ``fstat`` on the open descriptor (no race with a
    rename).

    Raises:
        SharedFileRefusedError: It is a link, not a regular file, another user's, or has
            another mode.
        OSError: It cannot be opened (missing, no permission).
    """
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the last component is a symbolic link
            raise SharedFileRefusedError(
                f"expected a regular shared-memory file at {path}, got a symbolic link; "
                "remove it (shared files are never links)",
                path=path,
            ) from exc
        raise
    info = os.fstat(fd)
    why = None
    if not stat.S_ISREG(info.st_mode):
        why = f"not a regular file (mode {stat.filemode(info.st_mode)})"
    elif info.st_uid != os.geteuid():
        why = f"owned by uid {info.st_uid}, not by this process's uid {os.geteuid()}"
    elif stat.S_IMODE(info.st_mode) != PRIVATE_MODE:
        why = f"mode {stat.S_IMODE(info.st_mode):04o}, not {PRIVATE_MODE:04o}"
    if why is not None:
        os.close(fd)
        raise SharedFileRefusedError(
            f"expected a regular shared-memory file of uid {os.geteuid()} with mode "
            f"{PRIVATE_MODE:04o} at {path}, got one {why}; nothing was read from it. Remove "
            "the file; a client and a server share memory only when run by the same user",
            path=path,
        )
    return fd


class ProbeFile:
    """The client's proof that it shares ``/dev/shm`` with a server: a file holding a token.

    Create it, send :meth:`offer` in ``batch_open``, and :meth:`close` it once answered.
    """

    def __init__(self) -> None:
        if SHM_DIR is None:
            raise OSError("this system has no /dev/shm")
        self.token = secrets.token_hex(16)
        self.name = f"{_PREFIX}probe-{secrets.token_hex(16)}"
        fd = os.open(_path(self.name), os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE_MODE)
        os.fchmod(fd, PRIVATE_MODE)  # whatever the umask: the server accepts only 0600
        with os.fdopen(fd, "w") as file:
            file.write(self.token)

    @classmethod
    def create(cls) -> ProbeFile | None:
        """A probe, or ``None`` when this system cannot offer shared memory."""
        try:
            return cls()
        except OSError:
            return None

    def offer(self) -> dict[str, str]:
        """What ``batch_open`` carries under ``shared_memory``."""
        return {"probe": self.name, "token": self.token}

    def close(self) -> None:
        """Remove the probe file. Idempotent."""
        with contextlib.suppress(OSError, ProtocolError):
            os.unlink(_path(self.name))


def probe_matches(offer: Any) -> bool:
    """Server side: whether the client's ``shared_memory`` offer names a probe file here
    that holds its token (then both sides share ``/dev/shm``)."""
    if not isinstance(offer, Mapping):
        return False
    name, token = offer.get("probe"), offer.get("token")
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        return False
    try:
        fd = open_private(_path(str(name)))
    except (OSError, ProtocolError):
        return False  # a FIFO, a link, another user's probe: plain frames
    try:
        return secrets.compare_digest(os.read(fd, 64), token.encode())
    except OSError:
        return False
    finally:
        os.close(fd)


class SharedArrayWriter:
    """Server side: one memory-mapped file per field of a connection's batches."""

    _counter = 0

    def __init__(self) -> None:
        if SHM_DIR is None:
            raise OSError("this system has no /dev/shm")
        self._stem = f"{_PREFIX}{os.getpid()}-{secrets.token_hex(8)}"
        self._files: dict[str, tuple[str, mmap.mmap]] = {}

    def put(self, field: str, rows: Sequence[np.ndarray]) -> dict[str, Any]:
        """Stack ``rows`` (equal dtype and shape) into ``field``'s file; its descriptor
        (``shm``, ``offset``, ``dtype``, ``shape``) for the frame."""
        first = rows[0]
        shape = (len(rows), *first.shape)
        nbytes = int(first.nbytes) * len(rows)
        name, buffer = self._file(field, nbytes)
        out = np.frombuffer(buffer, dtype=first.dtype, count=math.prod(shape)).reshape(shape)
        for k, row in enumerate(rows):  # a row at a time: np.stack's checks cost more here
            out[k] = row
        return {"shm": name, "offset": 0, "dtype": first.dtype.str, "shape": list(shape)}

    def _file(self, field: str, nbytes: int) -> tuple[str, mmap.mmap]:
        held = self._files.get(field)
        if held is not None and len(held[1]) >= nbytes:
            return held
        if held is not None:
            self._remove(*held)
        SharedArrayWriter._counter += 1
        name = f"{self._stem}-{SharedArrayWriter._counter}"
        fd = os.open(_path(name), os.O_CREAT | os.O_EXCL | os.O_RDWR, PRIVATE_MODE)
        try:
            os.fchmod(fd, PRIVATE_MODE)  # whatever the umask: the client accepts only 0600
            os.ftruncate(fd, nbytes)
            buffer = mmap.mmap(fd, nbytes)
        finally:
            os.close(fd)
        self._files[field] = (name, buffer)
        return name, buffer

    @staticmethod
    def _remove(name: str, buffer: mmap.mmap) -> None:
        with contextlib.suppress(OSError, ProtocolError):
            os.unlink(_path(name))
        with contextlib.suppress(BufferError):  # a view still exported: freed with it
            buffer.close()

    def close(self) -> None:
        """Remove every file. Idempotent."""
        files, self._files = self._files, {}
        for name, buffer in files.values():
            self._remove(name, buffer)

    def __enter__(self) -> SharedArrayWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class SharedArrayReader:
    """Client side: the files a connection's frames name, mapped read-only once each.

    Args:
        borrow: :meth:`array` returns a read-only view of the file instead of a copy. Valid
            only until the next request on the connection (the server then rewrites the
            file): for a caller that copies the rows out before it sends again (a vector
            env writing them into its batch buffer), one copy of 100 KB frames fewer.
    """

    def __init__(self, *, borrow: bool = False) -> None:
        self._maps: dict[str, mmap.mmap] = {}
        # File name -> the last descriptor read from it and its view: a server names the same
        # array in the same place every step, and an equal descriptor needs no checks again.
        self._views: dict[str, tuple[Mapping[str, Any], np.ndarray]] = {}
        self.borrow = borrow

    def array(self, descriptor: Mapping[str, Any]) -> np.ndarray:
        """A copy of the array ``descriptor`` names (the server reuses its file next step),
        or a read-only view of it when :attr:`borrow` is set.

        Raises:
            SharedFileRefusedError: The file is not a regular file of this user with mode
                ``0600`` (:func:`open_private`).
            ProtocolError: The descriptor is malformed (a dtype that is not numeric, a
                negative shape), the file cannot be opened, or the array does not fit in it.
        """
        name = descriptor.get("shm")
        last = self._views.get(name) if type(name) is str else None
        if last is not None and last[0] == descriptor:
            return last[1] if self.borrow else last[1].copy()
        view = self._view(descriptor)
        self._views[descriptor["shm"]] = (descriptor, view)
        return view if self.borrow else view.copy()

    def _view(self, descriptor: Mapping[str, Any]) -> np.ndarray:
        """A read-only view of the array ``descriptor`` names (the errors of :meth:`array`)."""
        try:
            name = descriptor["shm"]
            dtype = np.dtype(descriptor["dtype"])
            shape = tuple(int(n) for n in descriptor["shape"])
            offset = int(descriptor["offset"])
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise ProtocolError(
                f"expected a shared-memory array descriptor, got {descriptor!r:.200} ({exc})",
                received=repr(descriptor)[:200],
            ) from exc
        if dtype.kind not in _ARRAY_KINDS or dtype.fields is not None or any(n < 0 for n in shape):
            raise ProtocolError(
                "expected a shared-memory array of a numeric dtype (bool, int, uint, float) "
                f"and a non-negative shape, got dtype {dtype.str!r}, shape {list(shape)}",
                received=repr(descriptor)[:200],
            )
        buffer = self._maps.get(name)
        if buffer is None:
            buffer = self._open(name)
        count = math.prod(shape)
        if offset < 0 or offset + count * dtype.itemsize > len(buffer):
            buffer = self._open(name)  # the server grew the file: map it again
            if offset < 0 or offset + count * dtype.itemsize > len(buffer):
                raise ProtocolError(
                    f"the shared-memory array {descriptor!r:.200} does not fit its file "
                    f"({len(buffer)} bytes)"
                )
        return np.frombuffer(buffer, dtype=dtype, count=count, offset=offset).reshape(shape)

    def _open(self, name: str) -> mmap.mmap:
        path = _path(name)
        try:
            fd = open_private(path)
        except OSError as exc:
            raise ProtocolError(
                f"cannot open the server's shared-memory file {path}: {exc}"
            ) from exc
        try:
            buffer = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        self._views.pop(name, None)  # its view holds the old mapping
        old = self._maps.pop(name, None)
        if old is not None:
            with contextlib.suppress(BufferError):  # a borrowed view still exported
                old.close()
        self._maps[name] = buffer
        return buffer

    def close(self) -> None:
        """Unmap every file. Idempotent."""
        maps, self._maps = self._maps, {}
        self._views = {}
        for buffer in maps.values():
            with contextlib.suppress(BufferError):  # a borrowed view: unmapped with it
                buffer.close()

    def __enter__(self) -> SharedArrayReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def remove_stale_files(probe_age: float = STALE_PROBE_SECONDS) -> int:
    """Remove the shared files (and Unix sockets) of server processes that no longer run,
    and this user's probe files older than ``probe_age`` seconds (their client died during
    ``batch_open``); how many."""
    if SHM_DIR is None:
        return 0
    removed = 0
    now = time.time()
    for entry in os.listdir(SHM_DIR):
        if _PROBE.fullmatch(entry):
            path = os.path.join(SHM_DIR, entry)
            with contextlib.suppress(OSError):
                info = os.lstat(path)
                if info.st_uid == os.geteuid() and now - info.st_mtime > probe_age:
                    os.unlink(path)
                    removed += 1
            continue
        match = _SERVER_FILE.fullmatch(entry) or SERVER_SOCKET.fullmatch(entry)
        if match is None:
            continue
        pid = int(match.group(1))
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(SHM_DIR, entry))
                removed += 1
        except PermissionError:
            continue
    return removed


__all__ = [
    "MIN_SHARED_BYTES",
    "SHM_DIR",
    "ProbeFile",
    "SharedArrayReader",
    "SharedArrayWriter",
    "open_private",
    "probe_matches",
    "remove_stale_files",
]
