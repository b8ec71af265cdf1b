"""``python -m benchmarks.soak``: many sessions, many steps, one server; is memory flat?

Starts ``openenv-gym serve gymnasium --env-id CartPole-v1`` (one process by default) and
steps an ``OpenEnvVectorEnv`` of ``--sessions`` sub-envs on it until ``--steps`` env steps
in total (default: 64 sessions x 1M steps in total), sampling the client's and the server's
resident memory (``/proc/PID/status``, the server's workers included) ``--samples`` times.
Prints a Markdown table and the drift from the first sample after warm-up to the last.
Not a test: a long run whose figures go into the README.

Example::

    python -m benchmarks.soak --sessions 64 --steps 1000000
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

import numpy as np

from benchmarks.memory_bounds import rss_mib
from openenv_gym import OpenEnvVectorEnv
from openenv_gym.bench.ray_cluster import descendants
from openenv_gym.providers import LocalServerProcess


def tree_rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` and every process below it (a ``--workers`` server's)."""
    total = 0.0
    for process in (pid, *descendants(pid)):
        with contextlib.suppress(OSError, RuntimeError):  # it ended in between
            total += rss_mib(process)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--steps", type=int, default=1_000_000, help="env steps in total")
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--workers", default="1", help="server processes (default: 1)")
    parser.add_argument("--env-id", default="CartPole-v1")
    args = parser.parse_args()

    serve = ["gymnasium", "--env-id", args.env_id, "--workers", args.workers]
    serve += ["--max-sessions", str(args.sessions)]
    with LocalServerProcess(serve) as server:
        assert server.pid is not None
        assert server.base_url is not None
        envs = OpenEnvVectorEnv(None, args.sessions, base_url=server.base_url)
        rng = np.random.default_rng(0)
        n = envs.action_space.shape[0] if envs.action_space.shape else args.sessions
        envs.reset(seed=0)
        batches = max(1, args.steps // args.sessions)
        every = max(1, batches // args.samples)
        rows = []
        start = time.perf_counter()
        for batch in range(1, batches + 1):
            envs.step(rng.integers(0, 2, size=n))
            if batch % every == 0 or batch == batches:
                elapsed = time.perf_counter() - start
                steps = batch * args.sessions
                client, served = rss_mib(os.getpid()), tree_rss_mib(server.pid)
                rows.append((steps, elapsed, steps / elapsed, client, served))
                print(
                    f"{steps:>10,} steps {elapsed:7.1f}s {steps / elapsed:8.0f}/s "
                    f"client {rows[-1][3]:6.1f} MiB server {rows[-1][4]:6.1f} MiB",
                    file=sys.stderr,
                    flush=True,
                )
        envs.close()
    print(
        f"soak: {args.sessions} sessions of {args.env_id}, {rows[-1][0]:,} steps in total, "
        f"one server (--workers {args.workers}), random actions"
    )
    print("| steps | elapsed (s) | steps/s | client RSS (MiB) | server RSS (MiB) |")
    print("|---:|---:|---:|---:|---:|")
    for steps, elapsed, rate, client, served in rows:
        print(f"| {steps:,} | {elapsed:.0f} | {rate:,.0f} | {client:.1f} | {served:.1f} |")
    first, last = rows[0], rows[-1]
    print(
        f"drift from the first sample ({first[0]:,} steps) to the last: client "
        f"{last[3] - first[3]:+.1f} MiB, server {last[4] - first[4]:+.1f} MiB"
    )


if __name__ == "__main__":
    main()
