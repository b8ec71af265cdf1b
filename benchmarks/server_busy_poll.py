"""``python -m benchmarks.server_busy_poll``: does the server's busy-polling cost throughput?

For each number of sessions (``--sessions 8 64 300``) and each way of carrying them
(``plain``: one WebSocket connection per session, JSON frames; ``batch``: the sessions
multiplexed on one ``openenv-gym.batch.v1`` connection), one ``OpenEnvVectorEnv`` of
CartPole-v1 steps against two ``openenv-gym serve`` processes (``--workers 1``) that differ
only in ``--busy-poll-us``: the default, and ``0`` (never spin). The two are measured in
interleaved pairs (``--pairs``, each ``--seconds`` long, the order alternating), so a change
in the machine's load hits both. The ratio ``default / 0`` of each pair is reported, with the
median: above 1, busy-polling pays; below 1, it costs. The servers' CPU time per env step
(``/proc/PID/stat``, summed over the pairs) shows what spinning burns, which wall-clock
ratios on a loaded machine hide.

``--server-tree LABEL=PATH`` (repeatable) runs the servers from another source tree
(``PYTHONPATH=PATH``), e.g. the commit before a change, extracted with
``git archive COMMIT openenv_gym | tar -x -C /tmp/before``; every tree's pairs are
interleaved in the same rounds. The client always runs from this tree.

Not a test: figures depend on the machine and its load (``uptime`` is printed).

Example::

    python -m benchmarks.server_busy_poll --sessions 8 64 300 --pairs 3 --seconds 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from openenv_gym import OpenEnvVectorEnv
from openenv_gym.providers.ready_line import read_ready_line

#: Seconds stepped before each measurement (fills the caches, wakes the spin).
WARM_UP = 0.3


@dataclass
class Server:
    """One ``openenv-gym serve`` child."""

    tree: str
    busy_poll_us: int | None
    process: subprocess.Popen[str]
    url: str

    @classmethod
    def start(cls, tree: str, path: str, busy_poll_us: int | None, max_sessions: int) -> Server:
        command = [sys.executable, "-m", "openenv_gym.cli", "serve", "gymnasium"]
        command += ["--env-id", "CartPole-v1", "--port", "0", "--workers", "1"]
        command += ["--max-sessions", str(max_sessions)]
        if busy_poll_us is not None:
            command += ["--busy-poll-us", str(busy_poll_us)]
        env = {**os.environ, "PYTHONPATH": path}
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        assert process.stdout is not None
        return cls(tree, busy_poll_us, process, str(read_ready_line(process.stdout)["url"]))

    @property
    def label(self) -> str:
        return "default" if self.busy_poll_us is None else f"{self.busy_poll_us} us"

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process so far (``/proc/PID/stat``)."""
        with open(f"/proc/{self.process.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


@dataclass
class Row:
    """The pairs of one tree, session count and mode."""

    tree: str
    sessions: int
    mode: str
    on: list[float] = field(default_factory=list)
    off: list[float] = field(default_factory=list)
    #: Server CPU seconds and env steps of every measurement, default and off.
    cpu_on: list[tuple[float, int]] = field(default_factory=list)
    cpu_off: list[tuple[float, int]] = field(default_factory=list)

    @property
    def ratios(self) -> list[float]:
        return [a / b for a, b in zip(self.on, self.off, strict=True)]


def cpu_per_step_us(samples: Sequence[tuple[float, int]]) -> float:
    """Server CPU µs per env step over all ``samples``."""
    return sum(cpu for cpu, _ in samples) / max(1, sum(n for _, n in samples)) * 1e6


def steps_per_second(
    env: OpenEnvVectorEnv, seconds: float, server: Server
) -> tuple[float, tuple[float, int]]:
    """Env steps per second (sub-env steps) over ``seconds`` of stepping ``env``, and the
    server's CPU seconds and env steps over the same time."""
    actions = np.zeros(env.num_envs, dtype=np.int64)
    end = time.perf_counter() + WARM_UP
    while time.perf_counter() < end:
        env.step(actions)
    steps = 0
    cpu = server.cpu_seconds()
    start = time.perf_counter()
    end = start + seconds
    while (now := time.perf_counter()) < end:
        env.step(actions)
        steps += 1
    cpu = server.cpu_seconds() - cpu
    return steps * env.num_envs / (now - start), (cpu, steps * env.num_envs)


def load() -> str:
    return os.getloadavg().__repr__()


def run(
    trees: Sequence[tuple[str, str]],
    sessions: Sequence[int],
    modes: Sequence[str],
    pairs: int,
    seconds: float,
) -> list[Row]:
    """Measure every (tree, sessions, mode) in ``pairs`` interleaved rounds."""
    servers = [
        Server.start(tree, path, busy, max(sessions)) for tree, path in trees for busy in (None, 0)
    ]
    rows: list[Row] = []
    try:
        for count in sessions:
            for mode in modes:
                encoding = "json" if mode == "plain" else "auto"
                envs = {
                    id(server): OpenEnvVectorEnv(
                        None, count, base_url=server.url, encoding=encoding
                    )
                    for server in servers
                }
                try:
                    for env in envs.values():
                        env.reset(seed=0)
                    by_tree = {tree: Row(tree, count, mode) for tree, _ in trees}
                    for round_ in range(pairs):
                        order = servers if round_ % 2 == 0 else servers[::-1]
                        for server in order:
                            rate, cpu = steps_per_second(envs[id(server)], seconds, server)
                            row = by_tree[server.tree]
                            if server.busy_poll_us is None:
                                row.on.append(rate)
                                row.cpu_on.append(cpu)
                            else:
                                row.off.append(rate)
                                row.cpu_off.append(cpu)
                    for row in by_tree.values():
                        print(
                            f"{row.tree} N={count} {mode}: ratios "
                            f"{[round(r, 2) for r in row.ratios]} load {load()}",
                            file=sys.stderr,
                            flush=True,
                        )
                    rows.extend(by_tree.values())
                finally:
                    for env in envs.values():
                        env.close()
    finally:
        for server in servers:
            server.stop()
    return rows


def table(rows: Sequence[Row]) -> str:
    lines = [
        "| server | sessions | mode | steps/s default | steps/s `--busy-poll-us 0` "
        "| ratio (median) | ratios | server CPU µs/step default | `0` |",
        "|---|---:|---|---:|---:|---:|---|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row.tree} | {row.sessions} | {row.mode} | {statistics.median(row.on):,.0f} "
            f"| {statistics.median(row.off):,.0f} | {statistics.median(row.ratios):.2f}x "
            f"| {', '.join(f'{r:.2f}' for r in row.ratios)} "
            f"| {cpu_per_step_us(row.cpu_on):.0f} | {cpu_per_step_us(row.cpu_off):.0f} |"
        )
    return "\n".join(lines)


def _tree(text: str) -> tuple[str, str]:
    label, sep, path = text.partition("=")
    if not sep or not label or not os.path.isdir(os.path.join(path, "openenv_gym")):
        raise argparse.ArgumentTypeError(
            f"expected LABEL=PATH with PATH/openenv_gym a directory, got {text!r}"
        )
    return label, os.path.abspath(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[8, 64, 300])
    modes = ["plain", "batch"]
    parser.add_argument("--modes", nargs="+", choices=modes, default=modes)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument(
        "--server-tree",
        type=_tree,
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="run servers from this source tree too (default: only this one, 'this')",
    )
    args = parser.parse_args(argv)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = [*args.server_tree, ("this", here)]
    print(f"load before: {load()}", file=sys.stderr)
    rows = run(trees, args.sessions, args.modes, args.pairs, args.seconds)
    print(table(rows))
    print(f"\nload average after: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
