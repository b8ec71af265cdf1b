"""Compression and the other paths a vector env picks by itself, on loopback and across a link.

* What the client offers in ``batch_open`` (``compression=``, not the peer's address), that
  ``"auto"`` asks step by step for what it measures cheaper, that a hostile server's packed
  frames (a zip bomb, a corrupt payload, any packed frame where none was agreed) raise
  :class:`CompressedFrameError` naming the sub-envs and URL, and the connection stays usable.
* "Another host": a Pong server with a private ``/dev/shm`` behind the link proxy. The
  shared-memory probe fails there (no same-host shortcut), ``compression="zstd"`` sends the
  same observations in a fraction of the bytes, and over a 20 ms link the client's
  busy-polling pauses: its CPU time stays a small share of the wall time.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pytest
import zstandard
from websockets.sync.server import ServerConnection, serve
from websockets.typing import Subprotocol

from openenv_gym.bench.context import ENV_SPECS
from openenv_gym.bench.link_proxy import LinkProxy, LinkProxyProcess
from openenv_gym.bench.link_server import PrivateShmServerProcess
from openenv_gym.busy_poll import DEFAULT_CLIENT_BUSY_POLL, BusyPoller
from openenv_gym.client.options import ConnectOptions
from openenv_gym.errors import CompressedFrameError
from openenv_gym.vector import OpenEnvVectorEnv
from openenv_gym.vector.channels import BatchChannel, Channel
from openenv_gym.vector.opening import Opener, close_all
from openenv_gym.wire.batch import BATCH_SUBPROTOCOL
from openenv_gym.wire.batch_results import encode_batch_result
from openenv_gym.wire.compressed import COMPRESSED_MAGIC, ZSTD, FrameCompressor
from openenv_gym.wire.compression_policy import BATCH_WARMUP_STEPS, PROBE_STEPS
from openenv_gym.wire.messages import observation_message

LIMIT = 1024 * 1024
STEP = [("step", {"action_id": 0}), ("step", {"action_id": 0})]


def opener(compression: str, **options: Any) -> Opener:
    connect = ConnectOptions(compression=compression, reply_timeout=20, **options)
    return Opener(connect, "auto", True, None)


class ScriptedBatchServer:
    """A batch server that agrees to anything and answers each request with the next
    scripted frame (a hostile server, when the script says so)."""

    def __init__(self, frames: list[bytes], agree: str | None = ZSTD) -> None:
        self.frames = frames
        self.agree = agree
        self.opens: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self._server = serve(
            self._handle,
            "127.0.0.1",
            0,
            subprotocols=[Subprotocol(BATCH_SUBPROTOCOL)],
            max_size=None,
        )
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        host, port = self._server.socket.getsockname()[:2]
        self.url = f"ws://{host}:{port}/ws"

    def _handle(self, ws: ServerConnection) -> None:
        opened = json.loads(ws.recv())["data"]
        self.opens.append(opened)
        agreed = self.agree if opened.get("compression") else None
        data = {"sessions": opened["sessions"], "shared_memory": False, "compression": agreed}
        ws.send(json.dumps({"type": "batch_opened", "data": data}))
        for frame in self.frames:
            self.requests.append(json.loads(ws.recv())["data"])
            ws.send(frame)
        ws.recv()

    def close(self) -> None:
        self._server.shutdown()
        self._thread.join(10)


def round_trip(channel: Channel, url: str) -> Any:
    frame = channel.frame(STEP)
    assert frame is not None
    channel.session.send(frame)
    return channel.parse(channel.session.receive(time.monotonic() + 20), url)


# --------------------------------------------------------------------------- the offer


@pytest.mark.parametrize(("compression", "offered"), [("auto", ZSTD), ("off", None)])
def test_auto_offers_compression_to_a_loopback_server_too(
    compression: str, offered: str | None
) -> None:
    # A tunnel's near end is 127.0.0.1: the address no longer decides, measurement does.
    scripted = ScriptedBatchServer([])
    try:
        channels = opener(compression).open_group(scripted.url, [0, 1], [], 1)
        assert channels[0].session.peer_on_loopback
        close_all([c.session for c in channels])
    finally:
        scripted.close()
    (opened,) = scripted.opens
    assert opened.get("compression") == offered
    assert "shared_memory" in opened  # the same-host probe is still offered (it wins)


def test_forced_compression_is_offered_without_shared_memory() -> None:
    scripted = ScriptedBatchServer([])
    try:
        channels = opener(ZSTD).open_group(scripted.url, [0, 1], [], 1)
        close_all([c.session for c in channels])
    finally:
        scripted.close()
    (opened,) = scripted.opens
    assert opened["compression"] == ZSTD
    assert "shared_memory" not in opened


def test_a_hostile_server_s_packed_frames_raise_the_typed_error_and_the_connection_lives() -> None:
    screen = np.zeros((210, 160, 3), np.uint8)
    reply = observation_message({"screen": screen}, 0.0, False)
    good = FrameCompressor().pack(encode_batch_result([0, 1], [reply, reply], {}))
    assert good.startswith(COMPRESSED_MAGIC)
    bomb = COMPRESSED_MAGIC + zstandard.ZstdCompressor(level=1).compress(b"\0" * 100_000_000)
    corrupt = good[:40] + b"\xff" * 16 + good[56:]
    scripted = ScriptedBatchServer([bomb, corrupt, good])
    try:
        (channel,) = opener(ZSTD, max_message_size=LIMIT).open_group(scripted.url, [0, 1], [], 1)
        try:
            assert channel.session.max_message_size == LIMIT
            with pytest.raises(CompressedFrameError, match="over the message limit of 1048576"):
                round_trip(channel, scripted.url)
            with pytest.raises(CompressedFrameError, match="corrupt"):
                round_trip(channel, scripted.url)
            result = round_trip(channel, scripted.url)  # the connection still works
            assert result.fields["screen"].shape == (2, 210, 160, 3)
        finally:
            close_all([channel.session])
    finally:
        scripted.close()


def packed_screens() -> bytes:
    screen = np.zeros((210, 160, 3), np.uint8)
    reply = observation_message({"screen": screen}, 0.0, False)
    return FrameCompressor().pack(encode_batch_result([0, 1], [reply, reply], {}))


@pytest.mark.parametrize(("compression", "agree"), [("off", ZSTD), ("auto", None)])
def test_a_packed_frame_where_none_was_agreed_names_the_sub_envs_and_url(
    compression: str, agree: str | None
) -> None:
    # 'off' offers nothing; under 'auto' this server declined: either way nothing agreed.
    bomb = COMPRESSED_MAGIC + zstandard.ZstdCompressor(level=1).compress(b"\0" * 64 * 2**20)
    scripted = ScriptedBatchServer([bomb], agree=agree)
    try:
        (channel,) = opener(compression).open_group(scripted.url, [0, 1], [], 1)
        try:
            assert channel.policy is None
            with pytest.raises(CompressedFrameError) as caught:
                round_trip(channel, scripted.url)
            message = str(caught.value)
            assert "never agreed to compression" in message
            assert "refused unread" in message
            assert f"sub-envs [0, 1] of the vector env, at {scripted.url}" in message
        finally:
            close_all([channel.session])
    finally:
        scripted.close()


def test_auto_measures_each_choice_and_asks_the_server_step_by_step() -> None:
    frames = [packed_screens()] * (BATCH_WARMUP_STEPS + 2 * PROBE_STEPS + 2)
    scripted = ScriptedBatchServer(frames)
    try:
        (channel,) = opener("auto").open_group(scripted.url, [0, 1], [], 1)
        try:
            assert isinstance(channel, BatchChannel)
            policy = channel.policy
            assert policy is not None
            for _ in frames:
                result = round_trip(channel, scripted.url)
                assert result.fields["screen"].shape == (2, 210, 160, 3)
            assert policy.cost(False) is not None
            assert policy.cost(True) is not None
            assert policy.compress is not None  # decided from what it measured
        finally:
            close_all([channel.session])
    finally:
        scripted.close()
    asked = [request["compress"] for request in scripted.requests]
    first = BATCH_WARMUP_STEPS + PROBE_STEPS  # the warm-up (not measured), the packed probe, raw
    assert asked[:first] == [True] * first
    assert asked[first] is False


def test_forced_zstd_leaves_packing_to_the_server() -> None:
    scripted = ScriptedBatchServer([packed_screens()])
    try:
        (channel,) = opener(ZSTD).open_group(scripted.url, [0, 1], [], 1)
        try:
            assert isinstance(channel, BatchChannel)
            assert channel.policy is None
            round_trip(channel, scripted.url)
        finally:
            close_all([channel.session])
    finally:
        scripted.close()
    assert "compress" not in scripted.requests[0]


# --------------------------------------------------------------------------- across a link


@pytest.fixture(scope="module")
def remote_pong() -> Iterator[tuple[str, int]]:
    """A Pong server with its own /dev/shm: to the client, another host."""
    with PrivateShmServerProcess(list(ENV_SPECS["Pong"].serve_args)) as server:
        assert server.base_url is not None
        parts = urlsplit(server.base_url)
        assert parts.hostname is not None
        assert parts.port is not None
        yield parts.hostname, parts.port


def vector_env(proxy: LinkProxy, compression: str) -> OpenEnvVectorEnv:
    host, port = proxy.address
    return OpenEnvVectorEnv(
        "openenv/Atari-v0", 2, base_url=[f"http://{host}:{port}"], compression=compression
    )


def play(env: OpenEnvVectorEnv, steps: int) -> list[np.ndarray]:
    observations = [env.reset(seed=7)[0]]
    for t in range(steps):
        observations.append(env.step(np.array([t % 6, (t + 3) % 6]))[0])
    return observations


def test_through_a_link_the_shared_memory_probe_fails(remote_pong: tuple[str, int]) -> None:
    with LinkProxy(remote_pong, one_way_delay=0.001) as proxy:
        host, port = proxy.address
        channels = opener("auto").open_group(f"http://{host}:{port}", [0, 1], [], 1)
        try:
            (channel,) = channels
            assert isinstance(channel, BatchChannel)
            assert not channel.shared_memory
        finally:
            close_all([c.session for c in channels])


def test_compressed_frames_carry_the_same_observations_in_far_fewer_bytes(
    remote_pong: tuple[str, int],
) -> None:
    seen: dict[str, list[np.ndarray]] = {}
    down: dict[str, int] = {}
    for compression in ("off", ZSTD):
        with LinkProxy(remote_pong, one_way_delay=0.001) as proxy:
            env = vector_env(proxy, compression)
            try:
                before = proxy.bytes_down
                seen[compression] = play(env, 10)
                down[compression] = proxy.bytes_down - before
            finally:
                env.close()
    for raw, packed in zip(seen["off"], seen[ZSTD], strict=True):
        np.testing.assert_array_equal(raw, packed)
    # 11 round trips of two 100,800-byte screens: > 2 MB raw, a few KB packed.
    assert down["off"] > 11 * 2 * 100_800
    assert down[ZSTD] * 20 < down["off"]


def test_over_a_20_ms_link_the_client_s_busy_polling_pauses(
    remote_pong: tuple[str, int],
) -> None:
    # The proxy in its own process: this process's CPU time is the client's alone.
    with LinkProxyProcess(remote_pong, one_way_delay=0.010) as proxy:
        assert proxy.address is not None
        host, port = proxy.address
        url = f"http://{host}:{port}"
        poller = BusyPoller(DEFAULT_CLIENT_BUSY_POLL, hybrid=True, runnable=lambda: 1)  # idle
        paused = Opener(ConnectOptions(compression=ZSTD), "auto", True, None, poller=poller)
        (channel,) = paused.open_group(url, [0, 1], [], 1)
        try:
            assert poller.spinning
            for _ in range(16):  # every spin misses: the gaps' score falls below 0 in 10
                round_trip(channel, url)
            assert not poller.spinning  # replies take milliseconds: the spin paused
        finally:
            close_all([channel.session])
        env = OpenEnvVectorEnv("openenv/Atari-v0", 2, base_url=[url], compression=ZSTD)
        try:
            play(env, 3)  # warm up: the first waits spin, then the spin pauses
            wall, cpu = time.perf_counter(), time.process_time()
            play(env, 20)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        finally:
            env.close()
    assert wall >= 21 * 0.020  # every round trip crossed the link
    # Spinning through each 20 ms wait would take the whole wall time; paused, the client
    # only encodes, decodes and sleeps.
    assert cpu < 0.5 * wall, f"client CPU {cpu:.3f} s over {wall:.3f} s wall"
