"""``openenv-gym bench``: the benchmark suite shipped in :mod:`openenv_gym.bench`.

This module only defines the command; the options live in :mod:`openenv_gym.bench.options`
(cheap to import, so ``--help`` stays fast) and the run in :func:`openenv_gym.bench.run_from_args`.

Example:
    >>> import argparse
    >>> commands = argparse.ArgumentParser(prog="openenv-gym").add_subparsers(dest="command")
    >>> add_bench_command(commands)
"""

from __future__ import annotations

import argparse
from typing import Any

from openenv_gym.bench.options import DESCRIPTION, add_arguments


def run_bench(args: argparse.Namespace) -> int:
    """``openenv-gym bench``: run the suite (or measure ``--url``) with the parsed options."""
    from openenv_gym.bench import run_from_args

    return run_from_args(args)


def add_bench_command(commands: Any) -> None:
    """Add ``bench`` to the ``openenv-gym`` subparsers."""
    parser = commands.add_parser(
        "bench",
        help="benchmark remote envs against raw Gymnasium (table, CSV, Markdown, PNG)",
        description=DESCRIPTION,
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the full traceback when the command fails",
    )
    add_arguments(parser)
    parser.set_defaults(handler=run_bench)
