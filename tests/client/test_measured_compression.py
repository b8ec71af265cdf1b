"""A single env's compression chosen by measurement (``openenv-gym.binary-zstd.v2``).

The session's :class:`~openenv_gym.wire.compression_policy.CompressionPolicy` is fed what
each step really costs, over real WebSocket traffic:

* a scripted server whose raw replies are slow (a link that is the bottleneck) and one
  whose packed replies are slow (packing that costs more than it saves): the session asks
  packed first, probes raw, and keeps the cheaper; requests carry ``"compress"`` only while
  replies come as binary frames;
* our Pong server on loopback: agreed whatever the address, the same screens as raw;
* the same server through a link proxy of 1 MB/s whose near end is 127.0.0.1 (a tunnel):
  the session settles on packed frames and the link carries a fraction of the bytes.

The delays are the servers' (``time.sleep`` in the scripted server, the proxy's pacing);
no test asserts on elapsed time.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import gymnasium as gym
import numpy as np
import pytest
from websockets.sync.server import ServerConnection, serve
from websockets.typing import Subprotocol

from openenv_gym.bench.link_proxy import LinkProxy
from openenv_gym.client import ConnectOptions
from openenv_gym.client.sync_session import SyncSession
from openenv_gym.envs.atari import atari_server
from openenv_gym.server import ServerThread
from openenv_gym.wire.binary import encode_observation_frame
from openenv_gym.wire.compressed import MEASURED_SUBPROTOCOL, pack_frame
from openenv_gym.wire.compression_policy import (
    EARLY_STEPS,
    PROBE_STEPS,
    WARMUP_STEPS,
    CompressionPolicy,
)
from openenv_gym.wire.encoding import BINARY_ZSTD_MEASURED
from openenv_gym.wire.messages import ObservationReply, encode_json, observation_message

SCREEN = np.full((210, 160, 3), 144, np.uint8)
STEPS = WARMUP_STEPS + 2 * PROBE_STEPS + 4
#: How long the scripted server holds the slow choice's reply (the fast one: no wait).
SLOW = 0.015


class ScriptedSingleServer:
    """Agrees to the measured subprotocol and answers each request with a screen: packed
    unless the request says ``"compress": false``, the slow choice after :data:`SLOW`
    seconds; a request for ``small`` gets a JSON reply (a few numbers)."""

    def __init__(self, slow: bool) -> None:
        self.slow = slow  # the choice ("compress") whose replies come late
        self.requests: list[dict[str, Any]] = []
        self._server = serve(
            self._handle,
            "127.0.0.1",
            0,
            subprotocols=[Subprotocol(MEASURED_SUBPROTOCOL)],
            max_size=None,
        )
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        host, port = self._server.socket.getsockname()[:2]
        self.url = f"http://{host}:{port}"

    def _handle(self, ws: ServerConnection) -> None:
        for raw in ws:
            request = json.loads(raw)
            self.requests.append(request)
            if request["type"] == "close":
                return
            if request["data"].get("small"):
                ws.send(encode_json(observation_message({"x": [1.0]}, 0.0, False)).decode())
                continue
            frame = encode_observation_frame(observation_message({"screen": SCREEN}, 0.0, False))
            assert frame is not None
            packed = request.get("compress") is not False
            if packed == self.slow:
                time.sleep(SLOW)
            ws.send(pack_frame(frame) if packed else frame)

    def close(self) -> None:
        self._server.shutdown()
        self._thread.join(10)


@pytest.fixture
def scripted(request: pytest.FixtureRequest) -> Iterator[ScriptedSingleServer]:
    server = ScriptedSingleServer(slow=request.param)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def session(scripted: ScriptedSingleServer) -> Iterator[SyncSession]:
    """A session to ``scripted`` (on the measured subprotocol, with its policy)."""
    opened = SyncSession.connect(scripted.url)
    try:
        assert opened.encoding is BINARY_ZSTD_MEASURED
        assert opened.form == "websocket+binary_zstd_measured"
        yield opened
    finally:
        opened.close()


def policy_of(session: SyncSession) -> CompressionPolicy:
    policy = session.compression_policy
    assert policy is not None
    return policy


def steps_of(session: SyncSession, count: int, data: dict[str, Any] | None = None) -> None:
    for _ in range(count):
        reply = session.request_observation({"type": "step", "data": data or {"action_id": 0}})
        assert isinstance(reply, ObservationReply)
        if data is None:
            np.testing.assert_array_equal(reply.observation["screen"], SCREEN)


def asked(scripted: ScriptedSingleServer) -> list[Any]:
    return [r.get("compress") for r in scripted.requests if r["type"] == "step"]


@pytest.mark.parametrize("scripted", [False], indirect=True)
def test_packed_first_then_raw_and_packed_kept_when_raw_is_slow(
    scripted: ScriptedSingleServer, session: SyncSession
) -> None:
    steps_of(session, STEPS)
    assert policy_of(session).compress is True
    said = asked(scripted)
    first = WARMUP_STEPS + PROBE_STEPS  # the warm-up, then the packed probe
    assert said[:first] == [True] * first
    # The raw probe is clearly worse: it ends after one step (far worse) or EARLY_STEPS.
    raw = said[first:].index(True)
    assert 1 <= raw <= EARLY_STEPS
    assert said[first : first + raw] == [False] * raw
    assert said[first + raw :] == [True] * (STEPS - first - raw)


@pytest.mark.parametrize("scripted", [True], indirect=True)
def test_raw_is_kept_when_packing_costs_more_than_it_saves(
    scripted: ScriptedSingleServer, session: SyncSession
) -> None:
    steps_of(session, STEPS)
    policy = policy_of(session)
    assert policy.compress is False
    cost_packed, cost_raw = policy.cost(True), policy.cost(False)
    assert cost_packed is not None
    assert cost_raw is not None
    assert cost_raw < cost_packed
    assert asked(scripted)[-4:] == [False] * 4


@pytest.mark.parametrize("scripted", [False], indirect=True)
def test_json_replies_are_not_measured_and_requests_stop_carrying_the_key(
    scripted: ScriptedSingleServer, session: SyncSession
) -> None:
    steps_of(session, 3, {"small": True})
    steps_of(session, WARMUP_STEPS + 2)  # binary again: the next requests ask again
    policy = policy_of(session)
    assert policy.cost(True) is not None  # the last step only (after the warm-up)
    assert policy.cost(False) is None
    carried = [said is not None for said in asked(scripted)]
    assert carried == [True, False, False, False] + [True] * (WARMUP_STEPS + 1)


# --------------------------------------------------------------------------- our Pong server


@pytest.fixture(scope="module")
def pong_url() -> Iterator[str]:
    with ServerThread(
        atari_server("pong", repeat_action_probability=0.0, max_sessions=8)
    ) as server:
        yield server.url


def play(env: gym.Env[Any, Any], steps: int) -> list[np.ndarray]:
    observations = [env.reset(seed=4)[0]]
    observations += [env.step(t % 6)[0] for t in range(steps)]
    return observations


def test_a_loopback_pong_server_agrees_and_plays_the_same_screens(pong_url: str) -> None:
    seen = {}
    for compression in ("auto", "off"):
        env = gym.make("openenv/Atari-v0", base_url=pong_url, compression=compression)
        try:
            expected = "websocket+binary_zstd_measured" if compression == "auto" else None
            assert env.unwrapped.form == (expected or "websocket+binary")  # type: ignore[attr-defined]
            seen[compression] = play(env, 10)
        finally:
            env.close()
    for measured, raw in zip(seen["auto"], seen["off"], strict=True):
        np.testing.assert_array_equal(measured, raw)


def test_through_a_tunnel_the_session_settles_on_packed_frames(pong_url: str) -> None:
    target = urlsplit(pong_url)
    # 1 MB/s: a raw screen (100,800 bytes) takes 100 ms, a packed one well under 1 ms.
    with LinkProxy((target.hostname, target.port), bytes_per_s=1e6) as proxy:
        host, port = proxy.address
        session = SyncSession.connect(f"http://{host}:{port}", ConnectOptions())
        try:
            policy = session.compression_policy
            assert policy is not None  # 127.0.0.1, yet measured
            session.request_observation({"type": "reset", "data": {"seed": 4}})
            for t in range(STEPS):
                session.request_observation({"type": "step", "data": {"action_id": t % 6}})
            assert policy.compress is True
            before = proxy.bytes_down
            for t in range(8):
                session.request_observation({"type": "step", "data": {"action_id": t % 6}})
            assert proxy.bytes_down - before < 8 * 100_800 // 20
        finally:
            session.close()
