"""Link profiles of the suite: parsing, the delaying and rate-capping proxy, servers with a
private /dev/shm, and a vector env through a link (real sockets and servers on 127.0.0.1)."""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from openenv_gym.bench import build_parser
from openenv_gym.bench.bounds import RowBound, measured_step_seconds
from openenv_gym.bench.context import (
    ENV_SPECS,
    Context,
    Settings,
    link_notes,
    running_servers,
)
from openenv_gym.bench.link_proxy import LinkProxy, LinkProxyProcess, measure_ceiling
from openenv_gym.bench.link_server import PrivateShmServerProcess, linked_url
from openenv_gym.bench.links import PROFILES, link_argument, parse_link
from openenv_gym.bench.measure import ContenderUnavailableError
from openenv_gym.bench.options import conflicts
from openenv_gym.bench.report import TABLE_COLUMNS, format_table, parse_table
from openenv_gym.bench.runner import run_groups
from openenv_gym.bench.suite import describe, plan, settings_from_args
from openenv_gym.client.options import ConnectOptions
from openenv_gym.errors import LinkProfileError, LinkProxyError
from openenv_gym.vector.channels import BatchChannel
from openenv_gym.vector.opening import Opener, close_all
from openenv_gym.wire.compressed import COMPRESSED_MAGIC

CARTPOLE = ["gymnasium", "--env-id", "CartPole-v1"]


# --------------------------------------------------------------------------- profiles


def test_named_profiles_have_the_issue_s_numbers() -> None:
    assert (PROFILES["lan"].mbit, PROFILES["lan"].rtt_ms) == (1000.0, 0.5)
    assert (PROFILES["wan"].mbit, PROFILES["wan"].rtt_ms) == (100.0, 20.0)
    assert not PROFILES["loopback"].emulated
    assert PROFILES["docker"].server_source == "docker"
    assert parse_link("WAN") is PROFILES["wan"]


def test_bounds_are_n_over_rtt_and_bandwidth_over_bytes() -> None:
    wan = PROFILES["wan"]
    assert wan.round_trip_bound(16) == pytest.approx(800.0)
    assert wan.bandwidth_bound(100_800) == pytest.approx(12.5e6 / 100_800)
    assert PROFILES["loopback"].round_trip_bound(16) == float("inf")
    assert "N/RTT 800/s" in wan.bounds(16, 100_800)
    assert "124/s" in wan.bounds(16, 100_800)


def test_custom_values() -> None:
    link = parse_link("rtt_ms=4, mbit=10")
    assert (link.rtt_ms, link.mbit, link.one_way_delay, link.bytes_per_s) == (
        4.0,
        10.0,
        0.002,
        1.25e6,
    )
    assert link.emulated
    assert link.server_source == "local"
    assert parse_link("delay_ms=3").rtt_ms == 6.0
    assert parse_link("delay_ms=3").mbit is None
    assert parse_link("delay_ms=3").proxied
    same_host = parse_link("rtt_ms=0")
    assert same_host.emulated  # a private /dev/shm
    assert not same_host.proxied  # and nothing else
    assert "private /dev/shm (no shared memory)" in same_host.describe()
    assert not PROFILES["loopback"].proxied


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("moon", "one of loopback, docker, lan, wan"),
        ("rtt_ms", "one of loopback"),
        ("speed=3", "one of loopback"),
        ("rtt_ms=1,rtt_ms=2", "one of loopback"),
        ("rtt_ms=-1", "rtt_ms must be a number >= 0, got '-1'"),
        ("rtt_ms=nan", "rtt_ms must be a number >= 0"),
        ("mbit=0", "mbit must be a positive number, got '0'"),
        ("mbit=fast", "mbit must be a positive number"),
        ("rtt_ms=2,delay_ms=1", "not both"),
        ("", "one of loopback"),
    ],
)
def test_bad_links_are_refused_with_what_is_accepted(text: str, expected: str) -> None:
    with pytest.raises(LinkProfileError, match="--link") as info:
        parse_link(text)
    assert expected in str(info.value)
    with pytest.raises(argparse.ArgumentTypeError):
        link_argument(text)


def test_the_option_parses_describes_and_conflicts_with_url(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = build_parser().parse_args(["--quick", "--link", "wan"])
    settings = settings_from_args(args)
    assert settings.link is PROFILES["wan"]
    assert "--link wan" in describe(settings)
    assert settings_from_args(build_parser().parse_args(["--quick"])).link is PROFILES["loopback"]
    assert "--link" not in describe(settings_from_args(build_parser().parse_args(["--quick"])))
    args = build_parser().parse_args(["--url", "http://127.0.0.1:1", "--link", "lan"])
    assert "--link" in conflicts(args)
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["--link", "mbit=0"])
    assert info.value.code == 2
    assert "mbit must be a positive number" in capsys.readouterr().err


def test_notes_name_the_link_and_its_limits_per_n() -> None:
    settings = Settings(envs=["Pong"], sizes=[16], link=PROFILES["wan"])
    notes = link_notes(ENV_SPECS["Pong"], settings)
    text = "\n".join(notes)
    assert "100 Mbit/s" in text
    assert "20 ms round trip" in text
    assert "private /dev/shm" in text
    assert "N=16: N/RTT 800/s, bandwidth/(100,800 B/step) 124/s" in text
    assert "link proxy ceiling" in notes[-1]


# --------------------------------------------------------------------------- the proxy


@pytest.fixture
def echo_server() -> Iterator[tuple[str, int]]:
    """A TCP echo server on 127.0.0.1 (every connection in its own thread)."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[:2]
    server.close()


def _round_trip(conn: socket.socket, message: bytes) -> bytes:
    conn.sendall(message)
    got = b""
    while len(got) < len(message):
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        got += chunk
    return got


def test_a_round_trip_takes_at_least_the_rtt(echo_server: tuple[str, int]) -> None:
    with (
        LinkProxy(echo_server, one_way_delay=0.005) as proxy,
        socket.create_connection(proxy.address) as conn,
    ):
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for index in range(5):
            start = time.perf_counter()
            assert _round_trip(conn, b"step %d" % index) == b"step %d" % index
            assert time.perf_counter() - start >= 0.010


def test_the_rate_cap_holds_bytes_to_size_over_rate(echo_server: tuple[str, int]) -> None:
    rate = 10e6 / 8  # 10 Mbit/s
    payload = np.random.default_rng(0).integers(0, 256, 300_000, dtype=np.uint8).tobytes()
    with (
        LinkProxy(echo_server, bytes_per_s=rate) as proxy,
        socket.create_connection(proxy.address) as conn,
    ):
        start = time.perf_counter()
        received = _round_trip(conn, payload)
        elapsed = time.perf_counter() - start
        assert received == payload  # nothing lost, nothing reordered
        # Each direction is a link of its own; the echo goes out and comes back capped.
        assert elapsed >= len(payload) / rate
        assert proxy.bytes_up == proxy.bytes_down == len(payload)


def test_connections_share_the_link_s_bandwidth(echo_server: tuple[str, int]) -> None:
    rate = 20e6 / 8  # 20 Mbit/s for both connections together
    payload = bytes(200_000)
    elapsed: list[float] = []
    with LinkProxy(echo_server, bytes_per_s=rate) as proxy:
        start = time.perf_counter()

        def one() -> None:
            with socket.create_connection(proxy.address) as conn:
                assert _round_trip(conn, payload) == payload
                elapsed.append(time.perf_counter() - start)

        threads = [threading.Thread(target=one) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(elapsed) == 2
    # Two connections through one link: the last byte waits for both payloads.
    assert max(elapsed) >= 2 * len(payload) / rate


def test_delay_and_cap_together_keep_every_byte_in_order(echo_server: tuple[str, int]) -> None:
    rng = np.random.default_rng(1)
    with (
        LinkProxy(echo_server, one_way_delay=0.001, bytes_per_s=50e6) as proxy,
        socket.create_connection(proxy.address) as conn,
    ):
        for size in (1, 100, 16_384, 16_385, 100_800, 400_000):
            message = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
            assert _round_trip(conn, message) == message


def test_a_closed_target_closes_the_client_s_connection() -> None:
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        dead = spare.getsockname()[:2]  # bound, not listening: connections are refused
        with (
            LinkProxy(dead, one_way_delay=0.001) as proxy,
            socket.create_connection(proxy.address) as conn,
        ):
            conn.settimeout(10)
            with contextlib.suppress(ConnectionResetError):
                assert conn.recv(1) == b""


def test_bad_proxy_settings_are_refused() -> None:
    with pytest.raises(LinkProxyError, match="one_way_delay >= 0"):
        LinkProxy(("127.0.0.1", 1), one_way_delay=-1)
    with pytest.raises(LinkProxyError, match="bytes_per_s > 0"):
        LinkProxy(("127.0.0.1", 1), bytes_per_s=0)
    with (
        pytest.raises(LinkProxyError, match="expected a server URL"),
        linked_url("not a url", PROFILES["lan"]),
    ):
        pass


def test_the_proxy_process_delays_and_stops(echo_server: tuple[str, int]) -> None:
    proxy = LinkProxyProcess(echo_server, one_way_delay=0.004)
    address = proxy.start()
    try:
        with socket.create_connection(address) as conn:
            start = time.perf_counter()
            assert _round_trip(conn, b"hello") == b"hello"
            assert time.perf_counter() - start >= 0.008
    finally:
        proxy.stop()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(address, timeout=2).close()
    proxy.stop()  # idempotent


def test_the_ceiling_is_measured_and_printed() -> None:
    ceiling = measure_ceiling(bulk_bytes=8 * 1024 * 1024, seconds=0.2)
    assert ceiling.bytes_per_s > 0
    assert ceiling.round_trips_per_s > 0
    assert "Gbit/s bulk" in ceiling.describe()
    assert "round trips/s" in ceiling.describe()


# --------------------------------------------------------------------------- the servers


def test_the_server_s_dev_shm_is_private() -> None:
    with tempfile.NamedTemporaryFile(dir="/dev/shm", prefix="oeg-host-") as ours:
        with PrivateShmServerProcess(CARTPOLE) as server:
            assert server.pid is not None
            seen_by_server = os.listdir(f"/proc/{server.pid}/root/dev/shm")
            assert os.path.basename(ours.name) not in seen_by_server
            with open(f"/proc/{server.pid}/mountinfo") as mounts:
                assert "openenv-gym-private-shm" in mounts.read()
            with open(f"/proc/{os.getpid()}/mountinfo") as mounts:
                assert "openenv-gym-private-shm" not in mounts.read()
        assert os.path.exists(ours.name)  # ours was untouched


def test_a_vector_env_steps_through_a_link() -> None:
    import openenv_gym

    link = parse_link("rtt_ms=6,mbit=50")
    with PrivateShmServerProcess(CARTPOLE) as server:
        assert server.base_url is not None
        with linked_url(server.base_url, link) as url:
            env = openenv_gym.OpenEnvVectorEnv("openenv/CartPole-v1", 4, base_url=[url])
            try:
                obs, _ = env.reset(seed=0)
                assert obs.shape == (4, 4)
                for _ in range(5):
                    start = time.perf_counter()
                    obs, reward, _terminated, _truncated, _ = env.step(np.zeros(4, dtype=np.int64))
                    assert time.perf_counter() - start >= link.rtt_ms / 1000
                    assert obs.shape == (4, 4)
                    assert reward.shape == (4,)
            finally:
                env.close()


# --------------------------------------------------------------------------- docker


def test_without_an_engine_the_docker_profile_s_cells_skip_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    settings = Settings(envs=["CartPole"], sizes=[1], link=PROFILES["docker"])
    context = Context(ENV_SPECS["CartPole"], settings)
    with running_servers(context, lambda line: None) as running:
        assert running.urls == []
        assert "--link docker needs a Docker engine" in running.server_problem
        with pytest.raises(ContenderUnavailableError, match="needs a Docker engine"):
            running.require_servers()


def test_the_docker_profile_serves_from_a_container_without_shared_memory_or_compression(
    gymnasium_image: str,
) -> None:
    settings = Settings(envs=["CartPole"], sizes=[2], link=PROFILES["docker"], workers=1)
    context = Context(ENV_SPECS["CartPole"], settings)
    lines: list[str] = []
    with running_servers(context, lines.append) as running:
        assert running.server_problem == ""
        (url,) = running.urls
        assert url.startswith("http://127.0.0.1:")
        assert running.server_urls == running.urls  # no proxy: docker-proxy is the link
        assert gymnasium_image in lines[0]
        # What compression="auto" and the shared-memory probe do by themselves here: the
        # container's own /dev/shm does not hold the probe, so no shared memory; the first
        # steps ask for raw results (the policy measures raw first), and CartPole's frames
        # are too small to pack anyway.
        connect = ConnectOptions(compression="auto", reply_timeout=20)
        (channel,) = Opener(connect, "auto", True, None).open_group(url, [0, 1], [], 1)
        try:
            assert channel.session.peer_on_loopback
            assert isinstance(channel, BatchChannel)
            assert not channel.shared_memory
            channel.session.send(channel.frame([("reset", {}), ("reset", {})]) or b"")
            raw = channel.session.receive(time.monotonic() + 20)
            assert isinstance(raw, bytes)
            assert not raw.startswith(COMPRESSED_MAGIC)
            assert channel.parse(raw, url).fields["observation"].shape == (2, 4)
        finally:
            close_all([channel.session])
    assert "Docker containers" in context.notes[0]


# --------------------------------------------------------------------------- bounds


def test_a_linked_row_carries_its_bounds_from_the_server_s_measured_step_cost() -> None:
    settings = Settings(
        envs=["CartPole"],
        sizes=[2],
        seconds=0.3,
        warmup=0.1,
        workers=1,
        contenders=["ours-binary"],
        link=parse_link("rtt_ms=4"),
        server_bounds=True,
    )
    (result,) = run_groups(plan(settings, log=lambda line: None), 0.3, 0.1, log=lambda line: None)
    assert result.ok, result.reason
    assert result.bounds.startswith("N/RTT 500/s; N/(RTT + server ")
    assert result.bound is not None
    assert 0 < result.bound < 500  # the server's stepping adds to the round trip
    table = parse_table(format_table([result]))
    assert table[0]["bounds"] == result.bounds
    # Without a link the table keeps its columns.
    result.bounds = ""
    assert list(parse_table(format_table([result]))[0]) == list(TABLE_COLUMNS)


def test_the_server_time_is_the_step_cost_times_each_worker_s_share() -> None:
    wan = parse_link("wan")
    cheap = RowBound(wan, num_envs=64, step_seconds=10e-6, workers=2)
    assert cheap.connections == 2  # 64 x 10 µs is worth a second worker
    assert cheap.server_seconds == pytest.approx(32 * 10e-6)
    one = RowBound(wan, num_envs=16, step_seconds=5e-6, workers=2)
    assert one.connections == 1  # 16 x 5 µs is not
    assert one.server_seconds == pytest.approx(16 * 5e-6)
    spread = RowBound(wan, num_envs=16, step_seconds=550e-6, workers=2, servers=2)
    assert spread.server_seconds == pytest.approx(4 * 550e-6)  # 8 per server, 2 workers each
    assert spread.with_server == pytest.approx(16 / (0.020 + 4 * 550e-6))
    assert measured_step_seconds(["http://127.0.0.1:1"], samples=2) is None  # no server
