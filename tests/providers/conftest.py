"""Helpers for tests against a real Docker engine (its fixtures, ``docker_engine`` and
``gymnasium_image``, are in ``tests/conftest.py``: the benchmark tests use them too)."""

from __future__ import annotations

from typing import Any

from openenv_gym.providers.docker import LABEL


def our_container_ids(client: Any) -> set[str]:
    """Ids of every container (running or not) carrying our provider label."""
    return {
        c.id
        for c in client.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True)
    }
