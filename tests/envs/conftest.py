"""Fixtures for the served-environment tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import numpy as np
import pytest


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """One intra-op torch thread: on a loaded 2-core runner, more threads only contend."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def actions(n: int, count: int, seed: int = 0) -> list[int]:
    """``count`` random actions of ``Discrete(n)``, the same for a seed."""
    return [int(a) for a in np.random.default_rng(seed).integers(n, size=count)]


@pytest.fixture
def served() -> Iterator[Any]:
    """Start Atari servers (``served(game, **options)`` -> URL); stop every one at teardown."""
    from openenv_gym.envs.atari import atari_server
    from openenv_gym.server import ServerThread

    with ExitStack() as servers:

        def start(game: str, **options: Any) -> str:
            return servers.enter_context(ServerThread(atari_server(game, **options))).url

        yield start
