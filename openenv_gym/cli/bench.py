"""``openenv-gym bench``: the benchmark suite's entry point.

The suite itself lives in the repository's top-level ``benchmarks/`` package (it compares
against envpool, Gymnasium's vector envs and the official client, none of which the
installed package needs), so this command runs from a clone: it finds ``benchmarks/`` next
to an editable install's ``openenv_gym/`` or in the current directory. Progress goes to
stderr, one line per cell; the table, the target verdicts and the CSV and PNG paths to stdout.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="openenv-gym bench")
    >>> add_arguments(parser)
    >>> parser.parse_args(["--quick", "--n", "1,8"]).n
    [1, 8]
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Final

from openenv_gym.cli.arguments import positive_int, positive_seconds
from openenv_gym.cli.command import Command
from openenv_gym.errors import BenchmarkSuiteNotFoundError

_MARKER: Final = "openenv-gym"
_DESCRIPTION: Final = (
    "Run the benchmark suite: env steps/s of raw Gymnasium, Gymnasium SyncVectorEnv and "
    "AsyncVectorEnv, envpool, the official openenv client and ours (JSON and binary frames), "
    "for CartPole and Pong with N sub-envs, against servers started on 127.0.0.1. Prints "
    "progress to stderr, then a table with ratios to AsyncVectorEnv(N) and to the official "
    "client(N), the issue's targets marked met / not met, and the paths of the CSV and the "
    "PNG plot. Contenders whose prerequisite is missing are reported as skipped with the "
    "reason. Needs a clone of the repository (its benchmarks/ package): run it from the "
    "clone's root."
)


# --------------------------------------------------------------------------- options

#: Env names, as in :data:`benchmarks.suite.ENV_SPECS`.
ENV_NAMES: Final = ("CartPole", "Pong")
#: Contender keys, as in :data:`benchmarks.contenders.CONTENDERS`.
CONTENDER_KEYS: Final = (
    "raw",
    "sync",
    "async",
    "envpool",
    "official",
    "echo",
    "echo-thread",
    "ours-env",
    "ours-json",
    "ours-binary",
)
DEFAULT_SIZES: Final = (1, 2, 4, 8, 16)
QUICK_SIZES: Final = (1, 8)
DEFAULT_SECONDS: Final = 3.0
QUICK_SECONDS: Final = 1.0
MAX_WARMUP: Final = 0.5


def _name_list(choices: Sequence[str]) -> Callable[[str], list[str]]:
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


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        sizes = []
    if not sizes or any(size < 1 for size in sizes):
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of positive integers like 1,2,4,8,16, got {text!r}"
        )
    return sizes


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the suite's options to ``parser``."""
    parser.add_argument(
        "--envs",
        type=_name_list(ENV_NAMES),
        default=None,
        metavar="LIST",
        help=f"envs to run, from {','.join(ENV_NAMES)} (default: all; with --quick: CartPole)",
    )
    parser.add_argument(
        "--n",
        type=_sizes,
        default=None,
        metavar="LIST",
        help="numbers of sub-envs N, comma-separated (default: "
        f"{','.join(map(str, DEFAULT_SIZES))}; with --quick: {','.join(map(str, QUICK_SIZES))})",
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
        "--quick",
        action="store_true",
        help="a short run: N in {1,8}, 1 s cells, CartPole only unless --envs is given "
        "(under 2 minutes on 2 cores)",
    )
    parser.add_argument(
        "--contenders",
        type=_name_list(CONTENDER_KEYS),
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
        type=positive_int,
        default=None,
        metavar="K",
        help="--workers for each `openenv-gym serve` process, where the server supports it "
        "(default: the server's own default)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="directory for the CSV and PNG (default: benchmarks/results/ in the clone)",
    )


# --------------------------------------------------------------------------- command


def _candidate_roots() -> list[Path]:
    package_root = Path(__file__).resolve().parents[2]  # <root>/openenv_gym/cli/bench.py
    return [package_root, Path.cwd()]


def find_suite() -> ModuleType:
    """Import ``benchmarks.run`` from a clone of openenv-gym.

    Raises:
        BenchmarkSuiteNotFoundError: No clone's ``benchmarks/`` package was found.
    """
    for root in _candidate_roots():
        if (root / "benchmarks" / "run.py").is_file() and str(root) not in sys.path:
            sys.path.append(str(root))
    try:
        package: ModuleType | None = importlib.import_module("benchmarks")
    except ImportError:
        package = None
    if package is None or getattr(package, "SUITE", None) != _MARKER:
        raise BenchmarkSuiteNotFoundError(
            "the benchmark suite (the benchmarks/ package of the openenv-gym repository) is "
            "not importable: run `openenv-gym bench` from the root of a clone "
            "(git clone ... && cd openenv-gym && pip install -e . && openenv-gym bench)"
        )
    return importlib.import_module("benchmarks.run")


def run(args: argparse.Namespace) -> int:
    """``openenv-gym bench``: run the suite with the parsed options."""
    return int(find_suite().run_from_args(args))


COMMAND: Final = Command(
    name="bench",
    help="run the benchmark suite (steps/s table, CSV and PNG)",
    description=_DESCRIPTION,
    add_arguments=add_arguments,
    run=run,
)
