"""Fixtures for tests against a real Docker engine: skip (with the reason) when none runs."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

from openenv_gym.errors import DockerUnavailableError
from openenv_gym.images.env_images import IMAGES, build_images
from openenv_gym.providers.docker import LABEL, docker_client


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[Any]:
    """A client of a running Docker engine; the test is skipped (reason shown) without one."""
    try:
        client = docker_client()
    except DockerUnavailableError as exc:
        pytest.skip(f"no Docker engine: {str(exc).splitlines()[0]}")
    yield client
    client.close()


def image(client: Any, name: str) -> str:
    """The tag of our image ``name``, built first if missing (skipped until its server exists)."""
    spec = IMAGES[name]
    if importlib.util.find_spec(spec.module) is None:
        pytest.skip(f"{spec.module} is not in this tree yet, so the {name} image has no server")
    try:
        client.images.get(spec.tag)
    except Exception:
        build_images([name], client=client, progress=lambda line: None)
    return spec.tag


@pytest.fixture(scope="session")
def gymnasium_image(docker_engine: Any) -> str:
    """``openenv-gym/gymnasium:latest``, built if missing."""
    return image(docker_engine, "gymnasium")


def our_container_ids(client: Any) -> set[str]:
    """Ids of every container (running or not) carrying our provider label."""
    return {
        c.id
        for c in client.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True)
    }
