"""``GET /state``, ``GET /metadata`` and the first ``GET /capacity`` (its step-cost
calibration) build an environment: never on the event loop, once.

Once, ``GET /state`` in a loop on ``serve atari`` built an emulator per request on the event
loop and another session's step p50 rose from 2.3 to 80 ms (issue 14, case 5).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from openenv_gym.server import ServerThread

from .conftest import ProbeEnvironment, ProbeRegistry, probe_server


class SlowRegistry(ProbeRegistry):
    """A factory that can be made to block until released (a slow emulator build)."""

    def __init__(self) -> None:
        super().__init__()
        self.block = False
        self.entered = threading.Event()
        self.release = threading.Event()

    def factory(self) -> ProbeEnvironment:
        if self.block:
            self.entered.set()
            self.release.wait(30)
        return super().factory()


@pytest.fixture
def slow() -> Iterator[tuple[str, SlowRegistry]]:
    registry = SlowRegistry()
    with ServerThread(probe_server(registry, max_sessions=4)) as running:
        yield running.url, registry
        registry.release.set()


@pytest.mark.parametrize("path", ["/state", "/metadata", "/capacity"])
def test_building_route_does_not_block_sessions(
    slow: tuple[str, SlowRegistry], wire: Any, path: str
) -> None:
    url, registry = slow
    with wire.open(url) as ws, ThreadPoolExecutor(1) as pool:
        wire.assert_session_works(ws)  # its environment is built (sessions build on the loop)
        registry.block = True
        pending = pool.submit(httpx.get, url + path, timeout=30)
        assert registry.entered.wait(10), "the route never built an environment"
        # The build is still blocked; a session on the same server answers meanwhile.
        wire.assert_session_works(ws)
        registry.release.set()
        assert pending.result(30).status_code == 200


def test_building_routes_are_built_once(slow: tuple[str, SlowRegistry]) -> None:
    url, registry = slow
    with httpx.Client(timeout=10) as client:
        states = [client.get(url + "/state").json() for _ in range(20)]
        metadata = [client.get(url + "/metadata").json() for _ in range(20)]
    assert states == [{"episode_id": None, "step_count": 0}] * 20
    assert all(m == metadata[0] for m in metadata)
    assert len(registry.created) == 2  # one for /state, one for /metadata
    assert len(registry.closed) == 2
    with httpx.Client(timeout=10) as client:
        capacities = [client.get(url + "/capacity").json() for _ in range(5)]
    assert len(registry.created) == 3  # the step-cost calibration, once
    assert len(registry.closed) == 3
    # The probe environment has no sample_action: its step cost stays unknown.
    assert {c["step_seconds"] for c in capacities} == {None}
