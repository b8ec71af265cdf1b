"""Does one TCP connection per worker stall on a long or fat link? Pong N=16 over 1, 2 or 4.

The issue's item 4: over a long, fat link a single connection can stall on its window or on
a head-of-line large frame. This measures it before anything changes: a Pong vector env of
16 sub-envs (binary frames, ``--compression`` off by default: raw 100,800-byte screens) over
a link profile, its sessions on 1, 2 or 4 batch connections, against servers with a private
``/dev/shm`` behind the link proxy (one link shared by every connection, as a wire is).

The connection count is forced by replacing
:func:`openenv_gym.vector.opening.worker_connections` (the vector env's own rule) for the
measurement; the server runs ``--workers`` = the connections (at least 2), so that each
connection has a worker process of its own, and "2 on 4 workers" separates the effect of
the processes from that of the connections. Variants run interleaved, ``--repeats`` times.

    python -m benchmarks.link_connections --link lan --seconds 5 --repeats 3
    python -m benchmarks.link_connections --link wan --compression zstd
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from typing import Any

import numpy as np

import openenv_gym
import openenv_gym.vector.connections as vector_connections
from openenv_gym.bench.context import ENV_SPECS
from openenv_gym.bench.link_server import PrivateShmServerProcess, linked_url
from openenv_gym.bench.links import link_argument

#: (connections, server worker processes).
VARIANTS = ((1, 2), (2, 2), (4, 4), (2, 4))
NUM_ENVS = 16


def measure(url: str, connections: int, compression: str, seconds: float) -> dict[str, Any]:
    """Steps/s and the p50 step of one vector env with ``connections`` batch connections."""
    original = vector_connections.worker_connections
    vector_connections.worker_connections = lambda sessions, workers, cost: connections
    try:
        envs = openenv_gym.OpenEnvVectorEnv(
            "openenv/Atari-v0",
            NUM_ENVS,
            base_url=[url],
            encoding="binary",
            compression=compression,
            game="pong",
        )
    finally:
        vector_connections.worker_connections = original
    try:
        opened = len(envs._connections.channels)
        envs.reset(seed=0)
        rng = np.random.default_rng(0)
        for _ in range(5):
            envs.step(rng.integers(0, 6, NUM_ENVS))
        latencies = []
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            before = time.perf_counter()
            envs.step(rng.integers(0, 6, NUM_ENVS))
            latencies.append(time.perf_counter() - before)
        elapsed = time.perf_counter() - start
    finally:
        envs.close()
    return {
        "connections": opened,
        "rate": len(latencies) * NUM_ENVS / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--link", type=link_argument, default=link_argument("lan"))
    parser.add_argument("--compression", choices=("off", "zstd"), default="off")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    serve = list(ENV_SPECS["Pong"].serve_args)
    rates: dict[tuple[int, int], list[float]] = {variant: [] for variant in VARIANTS}
    p50s: dict[tuple[int, int], list[float]] = {variant: [] for variant in VARIANTS}
    load = os.getloadavg()[0]
    with contextlib.ExitStack() as stack:
        urls: dict[int, str] = {}
        for workers in sorted({w for _, w in VARIANTS}):
            server = stack.enter_context(
                PrivateShmServerProcess([*serve, "--workers", str(workers)])
            )
            assert server.base_url is not None
            url = server.base_url
            urls[workers] = (
                stack.enter_context(linked_url(url, args.link)) if (args.link.proxied) else url
            )
        for _ in range(args.repeats):
            for connections, workers in VARIANTS:
                got = measure(urls[workers], connections, args.compression, args.seconds)
                rates[(connections, workers)].append(got["rate"])
                p50s[(connections, workers)].append(got["p50_ms"])
    print(
        f"Pong N={NUM_ENVS}, link {args.link.name}, compression {args.compression}, "
        f"{args.repeats} interleaved repeats of {args.seconds:g} s, load average "
        f"{load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end\n"
    )
    base = statistics.median(rates[(2, 2)])
    print("| connections | server workers | steps/s (median) | runs | p50 ms | vs 2 on 2 |")
    print("|---:|---:|---:|---|---:|---:|")
    for variant in VARIANTS:
        median = statistics.median(rates[variant])
        runs = ", ".join(f"{r:,.0f}" for r in rates[variant])
        print(
            f"| {variant[0]} | {variant[1]} | {median:,.0f} | {runs} | "
            f"{statistics.median(p50s[variant]):.1f} | {median / base:.2f}x |"
        )


if __name__ == "__main__":
    main()
