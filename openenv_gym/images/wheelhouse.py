"""The build context of the images and its wheelhouse: every wheel the images install.

:func:`find_context` finds the repository clone the images are built from,
:func:`requirements` lists what they need (pinned to the versions installed here) and
:func:`build_wheelhouse` fills ``docker/wheelhouse`` with their wheels, so the images install
offline (``pip install --no-index --find-links docker/wheelhouse``).

Example:
    >>> (find_context() / "docker" / "gymnasium.Dockerfile").is_file()
    True
"""

from __future__ import annotations

import importlib.metadata
import re
import sys
import time
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path

from openenv_gym.errors import ImageBuildError
from openenv_gym.images.build_output import Progress, report_progress, stream_command

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
    returncode, log = stream_command(
        command, lambda line: report_progress(progress, "wheelhouse", line)
    )
    if returncode != 0:
        raise ImageBuildError(
            f"pip wheel failed (exit {returncode}); is PyPI or a pip cache reachable? "
            f"Command: {' '.join(command)}\n{''.join(log)[-6000:]}"
        )
    stamp.write_text(wanted)
    progress(f"wheelhouse: ready in {time.monotonic() - started:.1f}s")
    return wheelhouse
