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
rebuild after a source change costs one ``pip install`` per image. The steps live in
:mod:`openenv_gym.images.wheelhouse` (the build context and its wheels),
:mod:`openenv_gym.images.base_image` (the offline base image) and
:mod:`openenv_gym.images.build_output` (running a step, showing its output); this module
names the env images and builds them.

Example:
    >>> [spec.tag for spec in IMAGES.values()]
    ['openenv-gym/gymnasium:latest', 'openenv-gym/atari:latest', 'openenv-gym/chess:latest']
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from openenv_gym.envs.registry import SERVER_ENVS
from openenv_gym.errors import ImageBuildError
from openenv_gym.images.base_image import (
    build_base_image,
    image_id,
    remove_replaced_image,
)
from openenv_gym.images.build_output import Progress, report_progress
from openenv_gym.images.wheelhouse import build_wheelhouse, find_context, requirements


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


#: The env images, one per server env of :data:`~openenv_gym.envs.registry.SERVER_ENVS`.
IMAGES: Final[dict[str, ImageSpec]] = {
    spec.name: ImageSpec(
        spec.name, spec.image.dockerfile, spec.image.tag, spec.image.extra, spec.package
    )
    for spec in SERVER_ENVS.values()
}

# ----------------------------------------------------------------------------- env images


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
    previous = image_id(client, spec.tag)
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
                report_progress(progress, spec.name, str(chunk["stream"]))
            if "error" in chunk:
                raise ImageBuildError(
                    f"docker build of {spec.tag} ({spec.dockerfile}) failed: "
                    f"{str(chunk['error']).strip()}\n{''.join(log)[-4000:]}"
                )
    except docker.errors.APIError as exc:
        raise ImageBuildError(f"docker build of {spec.tag} failed: {exc}") from exc
    remove_replaced_image(client, previous, spec.tag)
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


__all__ = ["IMAGES", "ImageSpec", "build_env_image", "build_images"]
