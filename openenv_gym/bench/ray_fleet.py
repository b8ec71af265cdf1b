"""Servers placed by Ray vs child processes: the same vector run, its startup and steps/s.

Both runs are ``OpenEnvVectorEnv(id, N, sessions_per_server=K, workers=1)``: N/K servers of
one worker process each, stepped with the same seeded random actions. The child-process run
starts them on this machine; the Ray run gets them from a :class:`~openenv_gym.providers.
ray.RayFleet` (each server an actor that owns the server process). Without ``--address``
the Ray run starts a one-node Ray cluster here (``ray start --node-ip-address 127.0.0.2``,
see :class:`~openenv_gym.bench.ray_cluster.LocalRayCluster`) and joins it, so both runs
share the machine and the difference is the cost of the placement: startup (actor
placement, then the server) and the step path (nothing of Ray is on it: the sessions go
straight to the servers). With ``--address`` the servers spread over that cluster.

The two runs alternate ``--repeats`` times (so both see the same load); reported per fleet,
best of its repeats: the startup (the vector env's construction: servers
up, sessions open), env steps per second, p50 latency of one vector step and the client's
CPU per env step, and the ratio of steps/s to the child-process run. Nothing is asserted.

    python -m openenv_gym.bench.ray_fleet --n 16 --per-server 4 --seconds 5 --repeats 3

Example:
    >>> build_parser().parse_args(["--n", "8"]).n
    8
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from openenv_gym.bench.measure import ActionStream, CellResult, LoopDriver, measure

#: The label of the child-process run.
LOCAL_LABEL = "child processes (this machine)"


@dataclass
class FleetRun:
    """The best of the repeats of one fleet."""

    label: str
    startup_seconds: float
    cell: CellResult


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m openenv_gym.bench.ray_fleet", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--id", default="openenv/CartPole-v1", help="the env id to serve")
    parser.add_argument("--n", type=int, default=16, help="sub-envs (sessions)")
    parser.add_argument("--per-server", type=int, default=4, help="sessions per server")
    parser.add_argument("--seconds", type=float, default=5.0, help="timed window per repeat")
    parser.add_argument("--warmup", type=float, default=1.0, help="warm-up per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--address",
        default=None,
        help="a running Ray cluster (ray.init(address=...)); default: a one-node cluster "
        "started here",
    )
    parser.add_argument("--num-cpus", type=float, default=1.0, help="CPUs per Ray server")
    return parser


def run_once(label: str, fleet: Any, args: argparse.Namespace, seed: int) -> FleetRun:
    """Open the vector env on ``fleet`` (timed: the startup), warm up, time it, close it."""
    from openenv_gym import OpenEnvVectorEnv

    started = time.perf_counter()
    envs = OpenEnvVectorEnv(
        args.id, args.n, sessions_per_server=args.per_server, fleet=fleet, workers=1
    )
    startup = time.perf_counter() - started
    try:
        envs.reset(seed=seed)
        envs.action_space.seed(seed)  # the same actions for every fleet
        stream = ActionStream.sampled(envs.action_space.sample)
        cell = measure(LoopDriver(envs.step, envs.close), stream, args.n, args.seconds, args.warmup)
    finally:
        envs.close()
    cell = replace(cell, env=args.id, contender=label, label=label, setup_seconds=startup)
    return FleetRun(label, startup, cell)


def best_of(runs: Sequence[FleetRun]) -> FleetRun:
    """The run with the most steps/s, with the shortest startup of all."""
    best = max(runs, key=lambda run: run.cell.steps_per_s or 0.0)
    return FleetRun(best.label, min(run.startup_seconds for run in runs), best.cell)


def format_runs(runs: Sequence[FleetRun], args: argparse.Namespace) -> str:
    """The Markdown table of the runs (ratios to the first)."""
    anchor = runs[0].cell.steps_per_s or 0.0
    servers = -(-args.n // args.per_server)
    lines = [
        f"{args.id}, N={args.n}, {servers} servers x {args.per_server} sessions, "
        f"best of {args.repeats} x {args.seconds:g}s; {platform.node()}, "
        f"{platform.processor() or platform.machine()}",
        "",
        "| servers | startup s | steps/s | x child processes | p50 step us | client CPU us/step |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        cell = run.cell
        rate = cell.steps_per_s or 0.0
        p50 = cell.latency_us[0] if cell.latency_us else float("nan")
        cpu = cell.cpu_us_per_step if cell.cpu_us_per_step is not None else float("nan")
        lines.append(
            f"| {run.label} | {run.startup_seconds:.2f} | {rate:,.0f} | "
            f"{rate / anchor if anchor else float('nan'):.2f} | {p50:,.0f} | {cpu:.1f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import ray

    from openenv_gym.bench.ray_cluster import LocalRayCluster
    from openenv_gym.providers.ray import RayFleet

    servers = -(-args.n // args.per_server)
    started = time.perf_counter()
    local: list[FleetRun] = []
    placed: list[FleetRun] = []
    with contextlib.ExitStack() as stack:
        address = args.address
        label = f"Ray actors ({address})"
        if address is None:  # on 127.0.0.2, by the public `ray start --node-ip-address`
            cluster = LocalRayCluster([], num_cpus=max(1, int(servers * args.num_cpus + 0.999)))
            stack.enter_context(cluster)
            os.environ.update(cluster.auth_env)  # a driver joins a cluster of its auth mode
            address, label = cluster.address, "Ray actors (one-node cluster here)"
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
        stack.callback(ray.shutdown)
        ray_init = time.perf_counter() - started
        fleet = RayFleet(num_cpus=args.num_cpus)
        for repeat in range(args.repeats):  # interleaved: both see the same machine load
            local.append(run_once(LOCAL_LABEL, None, args, repeat))
            placed.append(run_once(label, fleet, args, repeat))
    runs = [best_of(local), best_of(placed)]
    print(format_runs(runs, args))
    print(f"\n(Ray's start and ray.init took {ray_init:.2f}s, not counted in the startup above)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
