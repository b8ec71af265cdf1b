"""The offline base image: a root filesystem of the host's Python, ``docker import``-ed.

Where no registry is reachable, ``openenv-gym build`` makes the base image of the env images
from nothing but the host's Python: its interpreter, standard library, the shared libraries
they load, ``sh`` and a few core tools, and pip from the wheelhouse
(:func:`write_rootfs`), imported as :data:`BASE_IMAGE` (:func:`build_base_image`).

Example:
    >>> BASE_IMAGE
    'openenv-gym/python-base:latest'
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from openenv_gym.errors import ImageBuildError
from openenv_gym.images.build_output import Progress

#: The image ``openenv-gym build`` imports from the host's Python.
BASE_IMAGE: Final = "openenv-gym/python-base:latest"
#: Label on every image this module builds (value: the requirements hash for the base).
IMAGE_LABEL: Final = "org.openenv-gym.image"


# ----------------------------------------------------------------------------- base image

#: Trees of the host Python copied into the base image, and what is left out of them.
_PYTHON_EXCLUDES: Final = re.compile(
    r"/(test|tests|idlelib|tkinter|turtledemo|ensurepip|lib2to3|config-[^/]*)(/|$)"
    r"|/EXTERNALLY-MANAGED$|/sitecustomize\.py$|/_test[^/]*\.so$"
)
#: Tools the Dockerfiles' RUN lines may use.
_TOOLS: Final = ("dash", "rm", "mkdir", "ls", "cat", "env", "id", "chmod", "ln")
#: Libraries manylinux wheels may expect on the system (the manylinux policy's list, less X11/GL).
_SYSTEM_LIBS: Final = (
    "libstdc++.so.6",
    "libgcc_s.so.1",
    "libc.so.6",
    "libm.so.6",
    "libdl.so.2",
    "librt.so.1",
    "libpthread.so.0",
    "libutil.so.1",
    "libresolv.so.2",
    "libnsl.so.*",
    "libz.so.1",
)

_PASSWD: Final = (
    "root:x:0:0:root:/root:/bin/sh\n"
    "openenv:x:10001:10001:openenv-gym server:/tmp:/usr/sbin/nologin\n"
)
_GROUP: Final = "root:x:0:\nopenenv:x:10001:\n"


class _RootfsWriter:
    """Writes host files (with the symlinks leading to them) into a tar, each once."""

    def __init__(self, tar: tarfile.TarFile) -> None:
        self.tar = tar
        self.seen: set[str] = set()

    def _info(self, info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    def add(self, path: str) -> None:
        """Add one file, symlink or (empty) directory entry, and what a symlink points to."""
        path = os.path.normpath(path)
        if path in self.seen or path == "/":
            return
        self.seen.add(path)
        parent = os.path.dirname(path)
        real_parent = os.path.realpath(parent)
        if real_parent != parent:  # an ancestor is a symlink (e.g. /lib -> usr/lib)
            self._add_ancestor_links(parent)
            self.add(os.path.join(real_parent, os.path.basename(path)))
            return
        if not os.path.lexists(path):
            return
        info = self._info(self.tar.gettarinfo(path, arcname=path.lstrip("/")))
        if info.isfile():
            with open(path, "rb") as stream:
                self.tar.addfile(info, stream)
        else:
            self.tar.addfile(info)
        if info.issym():
            self.add(os.path.join(parent, os.readlink(path)))

    def _add_ancestor_links(self, directory: str) -> None:
        partial = "/"
        for part in Path(directory).parts[1:]:
            partial = os.path.join(partial, part)
            if os.path.islink(partial) and partial not in self.seen:
                self.seen.add(partial)
                info = self._info(self.tar.gettarinfo(partial, arcname=partial.lstrip("/")))
                self.tar.addfile(info)
            partial = os.path.realpath(partial)

    def add_tree(self, root: str, exclude: re.Pattern[str]) -> list[str]:
        """Add a directory tree; return the shared objects in it."""
        shared = []
        for directory, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not exclude.search(os.path.join(directory, d))]
            self.add(directory)
            for filename in filenames:
                path = os.path.join(directory, filename)
                if exclude.search(path):
                    continue
                self.add(path)
                if ".so" in filename:
                    shared.append(path)
        return shared

    def add_text(self, arcname: str, text: str, mode: int = 0o644) -> None:
        data = text.encode()
        info = self._info(tarfile.TarInfo(arcname))
        info.size, info.mode, info.mtime = len(data), mode, int(time.time())
        self.tar.addfile(info, io.BytesIO(data))

    def add_dir(self, arcname: str, mode: int) -> None:
        info = self._info(tarfile.TarInfo(arcname))
        info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, int(time.time())
        self.tar.addfile(info)


def _shared_libraries(binaries: Iterable[str]) -> set[str]:
    """The libraries ``ldd`` says the binaries load (the dynamic loader included)."""
    libraries: set[str] = set()
    for binary in binaries:
        done = subprocess.run(["ldd", binary], capture_output=True, text=True, check=False)
        for line in done.stdout.splitlines():
            match = re.search(r"(/\S+)", line.split("=>")[-1])
            if match:
                libraries.add(match.group(1))
    return libraries


def _host_python(python: str) -> tuple[str, str]:
    """``(interpreter path, "X.Y")`` of a host Python, resolved."""
    done = subprocess.run(
        [python, "-c", "import sys; print(sys.executable); print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise ImageBuildError(
            f"cannot run the host Python {python!r} to build the base image: {done.stderr}; "
            "pass --host-python, or --base python:3.11-slim where a registry is reachable"
        )
    executable, version = done.stdout.split()
    return os.path.realpath(executable), version


def write_rootfs(tar_path: Path, wheelhouse: Path, *, host_python: str = "/usr/bin/python3") -> str:
    """Write a root filesystem with the host's Python into ``tar_path``; return ``"X.Y"``.

    Raises:
        ImageBuildError: The host Python's version differs from this one (the wheels would
            not fit it), or the wheelhouse has no pip wheel.
    """
    executable, version = _host_python(host_python)
    own = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if version != own:
        raise ImageBuildError(
            f"the host Python {executable} is {version}, but the wheelhouse is built for "
            f"{own}; pass --host-python with a {own} interpreter, or --base python:{own}-slim"
        )
    pip_wheels = sorted(wheelhouse.glob("pip-*.whl"))
    if not pip_wheels:
        raise ImageBuildError(f"no pip wheel in {wheelhouse}; rebuild the wheelhouse")
    stdlib = f"/usr/lib/python{version}"
    with tarfile.open(tar_path, "w") as tar:
        rootfs = _RootfsWriter(tar)
        for directory, mode in (("tmp", 0o1777), ("root", 0o700), ("etc", 0o755)):
            rootfs.add_dir(directory, mode)
        rootfs.add_text("etc/passwd", _PASSWD)
        rootfs.add_text("etc/group", _GROUP)
        rootfs.add(executable)
        for link in ("/usr/bin/python3", f"/usr/bin/python{version}"):
            if os.path.islink(link):
                rootfs.add(link)
        shared = rootfs.add_tree(os.path.realpath(stdlib), _PYTHON_EXCLUDES)
        tools = [p for p in (f"/usr/bin/{t}" for t in _TOOLS) if os.path.exists(p)]
        for tool in tools:
            rootfs.add(tool)
        for link in ("/bin/sh", "/usr/bin/sh"):
            if os.path.islink(link):
                rootfs.add(link)
        libraries = _shared_libraries([executable, *tools, *shared])
        for name in _SYSTEM_LIBS:
            libraries |= {str(p) for p in Path("/usr/lib/x86_64-linux-gnu").glob(name)}
        for library in sorted(libraries):
            rootfs.add(library)
        site = f"usr/local/lib/python{version}/dist-packages"
        with zipfile.ZipFile(pip_wheels[-1]) as wheel:
            for member in wheel.infolist():
                if member.is_dir():
                    continue
                info = rootfs._info(tarfile.TarInfo(f"{site}/{member.filename}"))
                info.size, info.mode, info.mtime = member.file_size, 0o644, int(time.time())
                tar.addfile(info, io.BytesIO(wheel.read(member)))
    return version


def build_base_image(
    client: Any,
    wheelhouse: Path,
    *,
    tag: str = BASE_IMAGE,
    host_python: str = "/usr/bin/python3",
    rebuild: bool = False,
    progress: Progress = print,
) -> str:
    """``docker import`` a root filesystem of the host's Python as ``tag`` (reused if present).

    Raises:
        ImageBuildError: The root filesystem could not be written or imported.
    """
    from openenv_gym.providers.docker import docker_sdk

    docker = docker_sdk()
    if not rebuild:
        try:
            client.images.get(tag)
        except docker.errors.ImageNotFound:
            pass
        else:
            progress(f"base: reusing {tag}")
            return tag
    started = time.monotonic()
    previous = image_id(client, tag)
    with tempfile.TemporaryDirectory(prefix="openenv-gym-rootfs-") as tmp:
        tar_path = Path(tmp) / "rootfs.tar"
        version = write_rootfs(tar_path, wheelhouse, host_python=host_python)
        size = tar_path.stat().st_size / 2**20
        progress(f"base: importing the host Python {version} ({size:.0f} MiB) as {tag}")
        repository, _, image_tag = tag.rpartition(":")
        changes = [
            "ENV PATH=/usr/local/bin:/usr/bin:/bin",
            "ENV LANG=C.UTF-8",
            f'LABEL {IMAGE_LABEL}="base"',
            'CMD ["python3"]',
        ]
        try:
            client.api.import_image_from_file(
                str(tar_path), repository=repository, tag=image_tag, changes=changes
            )
        except docker.errors.APIError as exc:
            raise ImageBuildError(f"docker import of the base image failed: {exc}") from exc
    remove_replaced_image(client, previous, tag)
    progress(f"base: {tag} ready in {time.monotonic() - started:.1f}s")
    return tag


def image_id(client: Any, tag: str) -> str | None:
    """The id of the image ``tag`` on the engine, or ``None`` when there is none."""
    try:
        return str(client.images.get(tag).id)
    except Exception:
        return None


def remove_replaced_image(client: Any, previous: str | None, tag: str) -> None:
    """Remove the image ``tag`` named before a rebuild (left dangling); never raises."""
    if previous is not None and previous != image_id(client, tag):
        with contextlib.suppress(Exception):  # in use by a container or another tag: keep it
            client.images.remove(previous)
