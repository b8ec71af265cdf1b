"""The suite's command-line options, shared by ``openenv-gym bench`` and ``python -m``.

Importing this module is cheap (no gymnasium, no matplotlib): ``--help`` stays fast.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_arguments(parser)
    >>> args = parser.parse_args(["--quick", "--n", "1,4"])
    >>> args.quick, args.n
    (True, [1, 4])
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from openenv_gym.argument_types import int_argument, microseconds, positive_int, positive_seconds
from openenv_gym.bench.links import link_argument

#: Env names, as in :data:`openenv_gym.bench.context.ENV_SPECS`.
ENV_NAMES: Final = ("CartPole", "Pong", "Variable")
#: Every contender key, in table order (:data:`openenv_gym.bench.contenders.CONTENDERS`),
#: with its plot colour and marker, all distinct (colour-blind-safe where it matters: ours vs
#: the anchors); ``ours-vector`` is the vector row of ``--url``.
CONTENDER_STYLES: Final = {
    "raw": ("#1f77b4", "*"),
    "sync": ("#ff7f0e", "s"),
    "async": ("#2ca02c", "^"),
    "envpool-sync": ("#9467bd", "v"),
    "envpool": ("#8c564b", "D"),
    "official-sync": ("#bcbd22", "P"),
    "official": ("#7f7f7f", "X"),
    "ours-env": ("#e377c2", "h"),
    "ours-env-zstd": ("#f7b6d2", "3"),
    "ours-env-raw": ("#c49c94", "4"),
    "ours-json": ("#d62728", "o"),
    "ours-binary": ("#000000", "p"),
    "ours-zstd": ("#17becf", "d"),
    "ours-raw": ("#aec7e8", "|"),
    "ours-pool": ("#393b79", "H"),
    "learner-vector": ("#ff9896", "<"),
    "learner-pool": ("#31a354", ">"),
    "variable-vector": ("#e6550d", "1"),
    "variable-pool": ("#3182bd", "2"),
    "ours-vector": ("#d62728", "8"),
}
#: The ``--contenders`` choices.
CONTENDER_KEYS: Final = tuple(key for key in CONTENDER_STYLES if key != "ours-vector")
DEFAULT_SIZES: Final = (1, 2, 4, 8, 16)
#: ``--contention K``: how many CPU-bound processes may run beside the contenders.
contention_count = int_argument(
    "a number of processes", minimum=0, maximum=256, bound="a number of processes in 0..256"
)
QUICK_SIZES: Final = (1, 8)
DEFAULT_SECONDS: Final = 3.0
QUICK_SECONDS: Final = 1.0
MAX_WARMUP: Final = 0.5
#: Where results go without ``--out`` (a fresh time-stamped folder inside it).
DEFAULT_OUT_ROOT: Final = Path("bench-results")

DESCRIPTION: Final = (
    "Benchmark remote OpenEnv envs against raw Gymnasium. Without --url: for CartPole and "
    "Pong at N sub-envs, raw Gymnasium, Gymnasium SyncVectorEnv and AsyncVectorEnv, envpool "
    "(sync and async), the official openenv client (asyncio gather, and .sync() for one env) "
    "and ours (one env; vector env with JSON and binary frames) against servers started on "
    "127.0.0.1. With --url: a running OpenEnv server (ours or the official package's): one "
    "session's latency and the throughput at the N it holds, next to raw Gymnasium when the "
    "server names its Gymnasium id (or --gym-id does). For every contender: env steps/s, the "
    "ratios to AsyncVectorEnv(N), SyncVectorEnv(N) and raw Gymnasium, the p50/p90/p99 "
    "latency of one step() call and the client process's CPU time per env step. Progress "
    "and the time left go to stderr; the table and the throughput targets to stdout; "
    "bench.csv, bench.md and bench.png (throughput and latency panels) to --out."
)


def name_list(choices: Sequence[str]) -> Callable[[str], list[str]]:
    """An argparse type: a comma-separated subset of ``choices`` (case-insensitive)."""
    lowered = {choice.lower(): choice for choice in choices}

    def parse(text: str) -> list[str]:
        names = [name.strip() for name in text.split(",") if name.strip()]
        unknown = [name for name in names if name.lower() not in lowered]
        if not names or unknown:
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated list of {', '.join(choices)}, got {text!r}"
            )
        return [lowered[name.lower()] for name in names]

    return parse


def sizes(text: str) -> list[int]:
    """An argparse type: comma-separated positive integers (``1,8,16``)."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = []
    if not values or any(value < 1 for value in values):
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of positive integers like 1,2,4,8,16, got {text!r}"
        )
    return values


def workers(text: str) -> int:
    """An argparse type: ``auto`` (one per usable core) or a positive integer."""
    from openenv_gym.server.workers import resolve_workers

    try:
        return resolve_workers(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the suite's options to ``parser``."""
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a short run: N in {1,8}, 1 s cells, CartPole only unless --envs is given "
        "(under 2 minutes on an idle 2-core machine)",
    )
    parser.add_argument(
        "--envs",
        type=name_list(ENV_NAMES),
        default=None,
        metavar="LIST",
        help=f"envs to run, from {','.join(ENV_NAMES)} (default: CartPole,Pong; with --quick: "
        "CartPole; Variable, an official server whose steps take a variable time, when "
        "--contenders names variable-vector or variable-pool)",
    )
    parser.add_argument(
        "--n",
        type=sizes,
        default=None,
        metavar="LIST",
        help="numbers of sub-envs N, comma-separated (default: "
        f"{','.join(map(str, DEFAULT_SIZES))}; with --quick: {','.join(map(str, QUICK_SIZES))}; "
        "with --url: those the server holds)",
    )
    parser.add_argument(
        "--seconds",
        type=positive_seconds,
        default=None,
        metavar="S",
        help=f"timed window per cell (default: {DEFAULT_SECONDS:g}; with --quick: "
        f"{QUICK_SECONDS:g})",
    )
    parser.add_argument(
        "--warmup",
        type=positive_seconds,
        default=None,
        metavar="S",
        help=f"untimed warm-up per cell (default: a sixth of --seconds, at most {MAX_WARMUP:g})",
    )
    parser.add_argument(
        "--contenders",
        type=name_list(CONTENDER_KEYS),
        default=None,
        metavar="LIST",
        help=f"contenders to run, from {','.join(CONTENDER_KEYS)} (default: all)",
    )
    parser.add_argument(
        "--servers",
        type=positive_int,
        default=1,
        metavar="S",
        help="our server processes per env; sessions are spread over them (default: 1)",
    )
    parser.add_argument(
        "--workers",
        type=workers,
        default=None,
        metavar="K",
        help="--workers for each `openenv-gym serve` process: K processes sharing its port, or "
        "'auto' for one per core, as AsyncVectorEnv and envpool also use every core "
        "(default: auto)",
    )
    parser.add_argument(
        "--busy-poll-us",
        type=microseconds,
        default=None,
        metavar="US",
        help="--busy-poll-us for our servers: spin up to US microseconds after each reply, "
        "0: off (default: the servers' own, see `openenv-gym serve gymnasium --help`)",
    )
    parser.add_argument(
        "--link",
        type=link_argument,
        default=None,
        metavar="LINK",
        help="where our servers stand: loopback (this host, every same-host shortcut), "
        "docker (containers of our images, `openenv-gym build`, through the provider of "
        "openenv/Docker-v0), lan (1 Gbit/s, 0.5 ms round trip), wan "
        "(100 Mbit/s, 20 ms), tunnel (the wan link reached as ssh -L or kubectl "
        "port-forward reach a server: the client connects to 127.0.0.1) or custom values "
        "rtt_ms=..,mbit=.. (delay_ms=.. for the one-way delay); lan, wan, tunnel and custom "
        "start the servers with a private /dev/shm, as on another host, behind a proxy on "
        "127.0.0.1 with that delay and bandwidth. The private /dev/shm needs root or "
        "CAP_SYS_ADMIN (the server runs under `unshare -m`); without them the cells on our "
        "servers are skipped with that reason, the local anchors (raw, sync, async, envpool) "
        "still run, and the bench exits 1 if no cell ran (default: loopback)",
    )
    parser.add_argument(
        "--contention",
        type=contention_count,
        default=0,
        metavar="K",
        help="run every contender beside K CPU-bound pure-Python processes (a learner's "
        "threads, a second experiment, data loading), started and stopped by the bench; "
        "each one also stops when the bench is gone (default: 0, none)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="directory for bench.csv, bench.md and bench.png (default: a new "
        f"{DEFAULT_OUT_ROOT}/<date-time>/ in the current directory)",
    )
    remote = parser.add_argument_group("a running server (--url)")
    remote.add_argument(
        "--url",
        default=None,
        metavar="URL",
        help="measure this OpenEnv server (http://HOST:PORT) instead of starting ours",
    )
    remote.add_argument(
        "--token",
        default=None,
        metavar="T",
        help="bearer token for --url (default: $OPENENV_TOKEN)",
    )
    remote.add_argument(
        "--gym-id",
        default=None,
        metavar="ID",
        help="the Gymnasium id the server runs, for the raw Gymnasium anchors (default: the "
        "name in the server's GET /metadata when it is a registered Gymnasium id)",
    )


def conflicts(args: argparse.Namespace) -> str:
    """Why the parsed options do not go together, or ``""``."""
    url_only = [
        flag for flag, value in (("--token", args.token), ("--gym-id", args.gym_id)) if value
    ]
    if args.url is None and url_only:
        return f"{' and '.join(url_only)} go with --url URL (a running server to measure)"
    local_only = [
        flag
        for flag, given in (
            ("--envs", args.envs is not None),
            ("--servers", args.servers != 1),
            ("--workers", args.workers is not None),
            ("--busy-poll-us", args.busy_poll_us is not None),
            ("--link", getattr(args, "link", None) is not None),
        )
        if given
    ]
    if args.url is not None and local_only:
        return (
            f"{' and '.join(local_only)} choose the servers the suite starts; with --url the "
            "server is yours: leave them out"
        )
    return ""
