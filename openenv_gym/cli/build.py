"""openenv-gym build: build the Docker images of our servers (gymnasium, atari, chess).

Offline by default: the wheels of every dependency go to docker/wheelhouse (pip wheel, from
the pip cache or PyPI), a base image is imported from the host's Python (docker import of a
minimal root filesystem: interpreter, standard library, shared libraries, sh, pip), and each
image is built from docker/<name>.Dockerfile FROM it, installing the project from this
repository with pip --no-index. With --base IMAGE the images are built FROM that image
instead (e.g. python:3.11-slim where a registry is reachable), with the index allowed.
The wheelhouse and the base image are reused while the requirements are unchanged.
Run it from a clone of the repository (or pass --context). The images run
`openenv-gym serve <target>` as uid 10001 on port 8000.

Examples:

    openenv-gym build                          # offline: every image, FROM the host's Python
    openenv-gym build gymnasium                # just one
    openenv-gym build --base python:3.11-slim  # FROM an image of a registry
    docker run --rm -p 127.0.0.1:8000:8000 openenv-gym/gymnasium:latest \\
        gymnasium --env-id Acrobot-v1 --host 0.0.0.0 --port 8000
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Final

from openenv_gym.cli.command import Command
from openenv_gym.images.base_image import BASE_IMAGE
from openenv_gym.images.env_images import IMAGES


def _image_name(text: str) -> str:
    if text not in IMAGES:
        raise argparse.ArgumentTypeError(
            f"unknown image {text!r}; expected one of {', '.join(IMAGES)}"
        )
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``build`` options."""
    parser.add_argument(
        "images",
        nargs="*",
        type=_image_name,
        metavar="IMAGE",
        help=f"images to build, some of {', '.join(IMAGES)} (default: all)",
    )
    parser.add_argument(
        "--base",
        default=None,
        metavar="IMAGE",
        help="build FROM this Python image (e.g. python:3.11-slim, needs a registry); by "
        f"default a base image {BASE_IMAGE} is imported from the host's Python (offline)",
    )
    parser.add_argument(
        "--host-python",
        default="/usr/bin/python3",
        metavar="PATH",
        help="the host interpreter copied into the imported base image; its X.Y version must "
        "match this one's (default: /usr/bin/python3)",
    )
    parser.add_argument(
        "--rebuild-base",
        action="store_true",
        help="import the base image again even if it exists",
    )
    parser.add_argument(
        "--context",
        type=Path,
        default=None,
        metavar="DIR",
        help="the repository clone to build from (default: found from the current directory)",
    )


def run(args: argparse.Namespace) -> int:
    """Build the images; print progress and the tags built."""
    from openenv_gym.images.env_images import build_images
    from openenv_gym.images.wheelhouse import find_context

    def progress(line: str) -> None:
        print(f"build: {line}", flush=True)

    names: list[str] = list(args.images) or list(IMAGES)
    tags = build_images(
        names,
        context=find_context(args.context),
        base=args.base,
        host_python=args.host_python,
        rebuild_base=args.rebuild_base,
        progress=progress,
    )
    sys.stdout.write("built: " + " ".join(tags) + "\n")
    return 0


COMMAND: Final = Command(
    name="build",
    help="build the Docker images of our servers (streams a condensed log)",
    add_arguments=add_arguments,
    run=run,
)
