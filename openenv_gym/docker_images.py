"""Build the Docker images of our servers: a wheelhouse, a base image, the env images.

The env images come from ``docker/{gymnasium,atari,chess}.Dockerfile``. Each starts
``FROM ${BASE}`` (default ``python:3.11-slim``), installs the project from the build context
with ``pip install --find-links docker/wheelhouse``, runs as uid 10001 and starts
``python3 -m openenv_gym.cli serve <target>``. Two ways to build them:

* Where a registry is reachable: ``openenv-gym build --base python:3.11-slim`` (or plain
  ``docker build -f docker/gymnasium.Dockerfile .`` from the repository root).
* Offline (no registry): ``openenv-gym build``. It fills ``docker/wheelhouse`` with wheels of
  every dependency (``pip wheel``, from the pip cache or PyPI), builds a base image from
  nothing but the host's Python (its interpreter, standard library, the shared libraries they
  load, ``sh`` and a few core tools, pip from the wheelhouse) with ``docker import``, and
  builds the env images FROM it with ``--no-index``.

The wheelhouse and the base image are reused while the requirements are unchanged, so a
rebuild after a source change costs one ``pip install`` per image.

Example:
    >>> [spec.tag for spec in IMAGES.values()]
    ['openenv-gym/gymnasium:latest', 'openenv-gym/atari:latest', 'openenv-gym/chess:latest']
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from openenv_gym.errors import ImageBuildError

#: The image ``openenv-gym build`` imports from the host's Python.
BASE_IMAGE: Final = "openenv-gym/python-base:latest"
#: Label on every image this module builds (value: the requirements hash for the base).
IMAGE_LABEL: Final = "org.openenv-gym.image"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ImageSpec:
    """One env image.

    Attributes:
        name: Short name (``gymnasium``, ``atari``, ``chess``), also the ``serve`` target.
        dockerfile: Path of its Dockerfile inside the build context.
        tag: The local tag it is built as.
        extra: The project extra it installs (``None``: the client dependencies only).
        module: The server module it needs in the source tree.
    """

    name: str
    dockerfile: str
    tag: str
    extra: str | None
    module: str


IMAGES: Final[dict[str, ImageSpec]] = {
    "gymnasium": ImageSpec(
        "gymnasium",
        "docker/gymnasium.Dockerfile",
        "openenv-gym/gymnasium:latest",
        "render",  # pygame: the classic-control envs render rgb_array frames remotely
        "openenv_gym.envs.gymnasium",
    ),
    "atari": ImageSpec(
        "atari",
        "docker/atari.Dockerfile",
        "openenv-gym/atari:latest",
        "atari",
        "openenv_gym.envs.atari",
    ),
    "chess": ImageSpec(
        "chess",
        "docker/chess.Dockerfile",
        "openenv-gym/chess:latest",
        "chess",
        "openenv_gym.envs.chess",
    ),
}

# ----------------------------------------------------------------------------- context


def find_context(start: Path | None = None) -> Path:
    """The repository root: the directory holding ``pyproject.toml`` and ``docker/``.

    ``start`` must be that directory. Without it, the current directory and its parents
    are tried, then the directory above the installed ``openenv_gym`` package (an editable
    install).

    Raises:
        ImageBuildError: No such directory was found.
    """
    candidates = [Path(start or Path.cwd()).resolve()]
    if start is None:  # a given directory must be the clone itself
        candidates += list(candidates[0].parents)
        candidates.append(Path(__file__).resolve().parents[1])
    for candidate in candidates:
        if (candidate / "pyproject.toml").is_file() and (
            candidate / "docker" / "gymnasium.Dockerfile"
        ).is_file():
            return candidate
    where = f"at {candidates[0]}" if start is not None else f"at or above {candidates[0]}"
    raise ImageBuildError(
        f"no openenv-gym source tree found {where}: the images are built "
        "from a clone of the repository (it holds pyproject.toml and docker/*.Dockerfile). "
        "Run the command inside the clone, or pass --context PATH."
    )


def requirements(context: Path, extras: Iterable[str | None]) -> list[str]:
    """Every requirement the images need: the project's dependencies and the extras' ones,
    plus the tools to build and install the project (pip, setuptools, wheel)."""
    project = tomllib.loads((context / "pyproject.toml").read_text())["project"]
    found = list(project["dependencies"])
    optional = project.get("optional-dependencies", {})
    for extra in extras:
        if extra is not None:
            found += optional.get(extra, [])
    build = tomllib.loads((context / "pyproject.toml").read_text())["build-system"]["requires"]
    found += ["pip", *build]
    return [_pin_installed(req) for req in sorted(dict.fromkeys(found))]


def _pin_installed(requirement: str) -> str:
    """``name==version`` of the copy installed here, so the images match this environment;
    the requirement unchanged when it is not installed (or the installed one does not fit)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?(.*)", requirement)
    if match is None:
        return requirement
    name, extras, spec = match.group(1), match.group(2) or "", match.group(3).strip()
    try:
        installed = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return requirement
    try:
        from packaging.specifiers import SpecifierSet

        if spec and installed not in SpecifierSet(spec.split(";")[0]):
            return requirement
    except ImportError:
        return requirement
    return f"{name}{extras}=={installed}"


# ----------------------------------------------------------------------------- build logs

#: Lines of pip's and docker build's output worth showing while a build runs: the Dockerfile
#: steps and what pip fetches, builds and installs. The whole log goes into the error when
#: the build fails.
_CONDENSED: Final = re.compile(
    r"^(Step \d+/\d+ :|#\d+ \[|Collecting |Building wheel|Saved |Processing |"
    r"Successfully (built|installed|tagged)|ERROR|WARNING: (?!Location)|error:)"
)


def condense(line: str) -> str | None:
    r"""The line of a build log to show (stripped), or ``None`` for the noise in between.

    Example:
        >>> condense("Step 3/9 : RUN pip install /tmp/src\n")
        'Step 3/9 : RUN pip install /tmp/src'
        >>> condense("  Downloading numpy-2.4.6.whl (16.8 MB)") is None
        True
    """
    text = line.strip()
    return text if text and _CONDENSED.match(text) else None


def _report(progress: Progress, prefix: str, chunk: str) -> None:
    for line in chunk.splitlines():
        shown = condense(line)
        if shown is not None:
            progress(f"{prefix}: {shown}")


def _stream(command: Sequence[str], on_line: Callable[[str], None]) -> tuple[int, list[str]]:
    """Run ``command``, passing each output line (stdout and stderr) to ``on_line``; return
    the exit code and every line."""
    log: list[str] = []
    with subprocess.Popen(
        list(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as process:
        for line in process.stdout or ():
            log.append(line)
            on_line(line)
    return process.returncode, log


# ----------------------------------------------------------------------------- wheelhouse


def build_wheelhouse(
    context: Path,
    reqs: Sequence[str],
    *,
    python: str = sys.executable,
    progress: Progress = print,
) -> Path:
    """Fill ``<context>/docker/wheelhouse`` with wheels for ``reqs`` (reused when unchanged).

    Raises:
        ImageBuildError: ``pip wheel`` failed (its output is in the message).
    """
    wheelhouse = context / "docker" / "wheelhouse"
    wheelhouse.mkdir(parents=True, exist_ok=True)
    stamp = wheelhouse / "requirements.txt"
    wanted = "\n".join(reqs) + "\n"
    if stamp.is_file() and stamp.read_text() == wanted and any(wheelhouse.glob("*.whl")):
        progress(f"wheelhouse: reusing {wheelhouse} ({len(list(wheelhouse.glob('*.whl')))} wheels)")
        return wheelhouse
    for stale in wheelhouse.glob("*.whl"):  # one version of each package: the images get it
        stale.unlink()
    progress(f"wheelhouse: pip wheel {len(reqs)} requirements into {wheelhouse}")
    started = time.monotonic()
    command = [
        python,
        "-m",
        "pip",
        "wheel",
        "--progress-bar",
        "off",
        "--disable-pip-version-check",
        "--wheel-dir",
        str(wheelhouse),
        "--find-links",
        str(wheelhouse),
        *reqs,
    ]
    returncode, log = _stream(command, lambda line: _report(progress, "wheelhouse", line))
    if returncode != 0:
        raise ImageBuildError(
            f"pip wheel failed (exit {returncode}); is PyPI or a pip cache reachable? "
            f"Command: {' '.join(command)}\n{''.join(log)[-6000:]}"
        )
    stamp.write_text(wanted)
    progress(f"wheelhouse: ready in {time.monotonic() - started:.1f}s")
    return wheelhouse


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
    previous = _image_id(client, tag)
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
    _remove_replaced(client, previous, tag)
    progress(f"base: {tag} ready in {time.monotonic() - started:.1f}s")
    return tag


# ----------------------------------------------------------------------------- env images


def _image_id(client: Any, tag: str) -> str | None:
    try:
        return str(client.images.get(tag).id)
    except Exception:
        return None


def _remove_replaced(client: Any, previous: str | None, tag: str) -> None:
    """Remove the image ``tag`` named before a rebuild (left dangling); never raises."""
    if previous is not None and previous != _image_id(client, tag):
        with contextlib.suppress(Exception):  # in use by a container or another tag: keep it
            client.images.remove(previous)


def build_env_image(
    client: Any,
    spec: ImageSpec,
    context: Path,
    *,
    base: str,
    offline: bool,
    progress: Progress = print,
) -> str:
    """``docker build`` one env image FROM ``base``; return its tag.

    Raises:
        ImageBuildError: The build failed (the end of its log is in the message).
    """
    from openenv_gym.providers.docker import docker_sdk

    docker = docker_sdk()
    started = time.monotonic()
    previous = _image_id(client, spec.tag)
    progress(f"{spec.name}: building {spec.tag} FROM {base}")
    buildargs = {"BASE": base, "PIP_INSTALL_OPTIONS": "--no-index" if offline else ""}
    log: list[str] = []
    try:
        for chunk in client.api.build(
            path=str(context),
            dockerfile=spec.dockerfile,
            tag=spec.tag,
            buildargs=buildargs,
            rm=True,
            forcerm=True,
            decode=True,
        ):
            if "stream" in chunk:
                log.append(str(chunk["stream"]))
                _report(progress, spec.name, str(chunk["stream"]))
            if "error" in chunk:
                raise ImageBuildError(
                    f"docker build of {spec.tag} ({spec.dockerfile}) failed: "
                    f"{str(chunk['error']).strip()}\n{''.join(log)[-4000:]}"
                )
    except docker.errors.APIError as exc:
        raise ImageBuildError(f"docker build of {spec.tag} failed: {exc}") from exc
    _remove_replaced(client, previous, spec.tag)
    progress(f"{spec.name}: {spec.tag} ready in {time.monotonic() - started:.1f}s")
    return spec.tag


def build_images(
    names: Sequence[str],
    *,
    client: Any = None,
    context: Path | None = None,
    base: str | None = None,
    host_python: str = "/usr/bin/python3",
    rebuild_base: bool = False,
    progress: Progress = print,
) -> list[str]:
    """Build the named env images (see the module docstring); return their tags.

    Args:
        names: Keys of :data:`IMAGES`.
        client: A ``docker.DockerClient`` (default: ``docker.from_env()``).
        context: The repository root (default: :func:`find_context`).
        base: An existing Python image to build FROM (e.g. ``python:3.11-slim``, pulled from
            a registry); ``None`` imports one from the host's Python (offline).
        host_python: The host interpreter copied into the imported base image.
        rebuild_base: Import the base image again even if it exists.

    Raises:
        ImageBuildError: A step failed.
        DockerUnavailableError: No Docker engine answers.
    """
    from openenv_gym.providers.docker import docker_client

    unknown = [name for name in names if name not in IMAGES]
    if unknown:
        raise ImageBuildError(f"unknown image(s) {unknown}; expected some of {sorted(IMAGES)}")
    client = client if client is not None else docker_client()
    context = context if context is not None else find_context()
    specs = [IMAGES[name] for name in names]
    offline = base is None
    reqs = requirements(context, [spec.extra for spec in IMAGES.values()])
    wheelhouse = build_wheelhouse(context, reqs, progress=progress)
    if base is None:
        base = build_base_image(
            client, wheelhouse, host_python=host_python, rebuild=rebuild_base, progress=progress
        )
    return [
        build_env_image(client, spec, context, base=base, offline=offline, progress=progress)
        for spec in specs
    ]


__all__ = [
    "BASE_IMAGE",
    "IMAGES",
    "ImageSpec",
    "build_base_image",
    "build_env_image",
    "build_images",
    "build_wheelhouse",
    "find_context",
    "requirements",
    "write_rootfs",
]
