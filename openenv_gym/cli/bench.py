"""``openenv-gym bench``: the benchmark suite shipped in :mod:`openenv_gym.bench`.

This module only declares the command; the options live in :mod:`openenv_gym.bench.options`
(cheap to import, so ``--help`` stays fast) and the run in :func:`openenv_gym.bench.run_from_args`.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="openenv-gym bench")
    >>> COMMAND.add_arguments(parser)
    >>> parser.parse_args(["--quick"]).quick
    True
"""

from __future__ import annotations

import argparse
from typing import Final

from openenv_gym.bench.options import DESCRIPTION, add_arguments, conflicts
from openenv_gym.cli.command import Command, UsageError


def run(args: argparse.Namespace) -> int:
    """``openenv-gym bench``: run the suite (or measure ``--url``) with the parsed options."""
    from openenv_gym.bench import run_from_args

    problem = conflicts(args)
    if problem:
        raise UsageError(problem)
    return run_from_args(args)


COMMAND: Final = Command(
    name="bench",
    help="benchmark remote envs against raw Gymnasium (table, CSV, Markdown, PNG)",
    description=DESCRIPTION,
    add_arguments=add_arguments,
    run=run,
)
