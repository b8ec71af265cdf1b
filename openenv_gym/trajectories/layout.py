"""Where a recording's files live, who may write it, and cleaning what a killed writer left.

A recording directory::

    out/
      README.md                     the dataset card (Hugging Face Hub page; YAML config)
      metadata.json                 run metadata, spaces, columns, counts (rewritten per chunk)
      experiment.yaml               the resolved experiment config, when recorded from one
      data/train-000000.parquet     the chunks, in order
      data/train-000001.parquet
      .lock                         held (flock) by the live writer

``datasets`` finds the chunks by itself: a file name starting with a split name (``train-``)
makes ``load_dataset("parquet", data_dir=out)`` and ``load_dataset(out)`` take those files as
the ``train`` split and nothing else, so ``metadata.json`` and ``experiment.yaml`` are never
read as data. ``README.md`` is ignored by the data-file search, and hidden files
(``.lock``, the ``.train-*.parquet.tmp`` a chunk is written to before its rename) too.

A killed writer can leave a temporary chunk behind; the next open (a reader or a writer)
removes it, unless a live writer holds the lock (then the file is that writer's chunk in
progress).

Example:
    >>> from pathlib import Path
    >>> chunk_path(Path("out"), 3).as_posix()
    'out/data/train-000003.parquet'
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

from openenv_gym.errors import TrajectoryFormatError

DATA_DIR: Final = "data"
CHUNK_PREFIX: Final = "train-"
CHUNK_SUFFIX: Final = ".parquet"
TEMP_SUFFIX: Final = ".tmp"
METADATA_FILE: Final = "metadata.json"
CARD_FILE: Final = "README.md"
CONFIG_FILE: Final = "experiment.yaml"
LOCK_FILE: Final = ".lock"
#: The ``datasets`` glob (relative to the recording) that matches every chunk.
DATA_FILES_PATTERN: Final = f"{DATA_DIR}/{CHUNK_PREFIX}*{CHUNK_SUFFIX}"

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock, no cleaning of temp files
    fcntl = None  # type: ignore[assignment]


def chunk_path(directory: Path, index: int) -> Path:
    """The path of chunk number ``index``."""
    return directory / DATA_DIR / f"{CHUNK_PREFIX}{index:06d}{CHUNK_SUFFIX}"


def chunk_files(directory: str | Path, *, missing_ok: bool = False) -> list[Path]:
    """The finished chunks of a recording, in order (temporary files are never listed).

    Raises:
        TrajectoryFormatError: ``directory`` does not exist (unless ``missing_ok``).
    """
    directory = Path(directory)
    if not directory.is_dir():
        if missing_ok:
            return []
        raise TrajectoryFormatError(
            f"{str(directory)!r} is not a directory of trajectories; record one with "
            "RecordTrajectories(env, directory) or `openenv-gym record --out DIR`"
        )
    return sorted((directory / DATA_DIR).glob(f"{CHUNK_PREFIX}*{CHUNK_SUFFIX}"))


def check_free(directory: Path) -> None:
    """Refuse a directory holding anything but a recording's own files (a README.md of a
    project, say, that the dataset card would overwrite).

    Raises:
        TrajectoryFormatError: Other files are there.
    """
    ours = {DATA_DIR, METADATA_FILE, CARD_FILE, CONFIG_FILE, LOCK_FILE}
    others = sorted(p.name for p in directory.iterdir() if p.name not in ours)
    if (directory / CARD_FILE).exists() and not (directory / METADATA_FILE).exists():
        others.insert(0, CARD_FILE)
    if others:
        raise TrajectoryFormatError(
            f"{str(directory)!r} is not empty (it holds {others[:5]}); record into a new or "
            "empty directory"
        )


def temp_path(path: Path) -> Path:
    """The hidden temporary file ``path`` is written to before its rename."""
    return path.with_name(f".{path.name}{TEMP_SUFFIX}")


def write_atomic(path: Path, write: Callable[[Path], object]) -> None:
    """Write via a hidden temp file in the same directory, fsync, rename, fsync the dir."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    try:
        write(tmp)
        with open(tmp, "rb") as file:
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class WriterLock:
    """An exclusive ``flock`` on ``directory/.lock``, held while a writer is open.

    Raises:
        TrajectoryFormatError: Another live process (or writer) holds it.
    """

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_FILE
        self._fd: int | None = None
        if fcntl is None:  # pragma: no cover
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise TrajectoryFormatError(
                f"{str(directory)!r} is being written by another live writer; wait for it to "
                "close, or record to a new directory"
            ) from None
        self._fd = fd

    def release(self) -> None:
        """Release the lock (idempotent). The lock file stays: unlinking it would race."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@contextlib.contextmanager
def _unlocked(directory: Path) -> Iterator[bool]:
    """Yield whether no live writer holds the directory (taking the lock meanwhile)."""
    if fcntl is None or not (directory / LOCK_FILE).exists():  # pragma: no cover
        yield fcntl is not None
        return
    try:
        lock = WriterLock(directory)
    except TrajectoryFormatError:
        yield False
        return
    try:
        yield True
    finally:
        lock.release()


def remove_stale_temp_files(directory: str | Path) -> list[Path]:
    """Delete the temporary files a killed writer left (none while a writer is live).

    Returns:
        The removed paths.
    """
    directory = Path(directory)
    if not directory.is_dir():
        return []
    with _unlocked(directory) as free:
        return delete_temp_files(directory) if free else []


def delete_temp_files(directory: Path) -> list[Path]:
    """Delete every temporary file of a recording; the caller holds its :class:`WriterLock`."""
    removed: list[Path] = []
    for folder in (directory, directory / DATA_DIR):
        for path in folder.glob(f".*{TEMP_SUFFIX}"):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
    return removed
