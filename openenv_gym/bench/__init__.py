"""The benchmark suite, shipped with the package: ``openenv-gym bench`` (or ``python -m
openenv_gym.bench``).

Without ``--url`` it measures, for CartPole and Pong at N sub-envs, every way of stepping
them: raw Gymnasium, Gymnasium ``SyncVectorEnv`` / ``AsyncVectorEnv``, envpool, the official
``openenv`` client and ours, against our servers started on 127.0.0.1 (see
:mod:`openenv_gym.bench.suite`). With ``--url`` it measures a running server instead (see
:mod:`openenv_gym.bench.url`). The plot needs the ``[bench]`` extra (matplotlib; envpool
for its contender); everything else runs on the base install, and a contender whose
package is missing is reported as ``skipped: <reason>``.

Modules: :mod:`~openenv_gym.bench.measure` (timed loops, latency, CPU),
:mod:`~openenv_gym.bench.context` (env specs, settings, our servers),
:mod:`~openenv_gym.bench.local` and :mod:`~openenv_gym.bench.remote` (the contenders),
:mod:`~openenv_gym.bench.contenders` (their table), :mod:`~openenv_gym.bench.runner`
(running cells, progress, the report), :mod:`~openenv_gym.bench.report` (table, CSV,
Markdown), :mod:`~openenv_gym.bench.plot` (PNG), :mod:`~openenv_gym.bench.targets`.

Example:
    >>> from openenv_gym.bench import build_parser
    >>> build_parser().parse_args(["--quick"]).quick
    True
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import UTC, datetime

from openenv_gym.bench.options import (
    DEFAULT_OUT_ROOT,
    DEFAULT_SIZES,
    DESCRIPTION,
    add_arguments,
    conflicts,
)


def build_parser(prog: str = "python -m openenv_gym.bench") -> argparse.ArgumentParser:
    """The suite's argument parser (the same options as ``openenv-gym bench``)."""
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    add_arguments(parser)
    return parser


def run_from_args(args: argparse.Namespace) -> int:
    """Run the suite (or measure ``--url``) for parsed options; print and write the report."""
    from pathlib import Path

    from openenv_gym.bench import pool_contenders, suite, targets, url
    from openenv_gym.bench.runner import run_and_report

    settings = suite.settings_from_args(args)
    out_dir: Path = args.out or DEFAULT_OUT_ROOT / datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    if args.url is not None:
        from openenv_gym.client.http import resolve_token

        token = resolve_token(args.token)  # --token, else $OPENENV_TOKEN (every client sends it)
        sizes = args.n or list(DEFAULT_SIZES)
        info = url.probe(args.url, token, args.gym_id, max(sizes))
        groups = url.plan(info, sizes, token, args.contenders)
        what = (
            f"`openenv-gym bench --url {info.url} --n {','.join(map(str, sizes))} "
            f"--seconds {settings.seconds:g}"
            + (f" --contention {settings.contention}" if settings.contention else "")
            + f"` ({info.name or 'no name in /metadata'})"
        )
        judged: list[targets.Target] = []  # a server of its own: no target applies
    else:
        groups, what = suite.plan(settings), suite.describe(settings)
        judged = [
            *targets.situation_targets(settings.link, settings.contention),
            *pool_contenders.pool_targets(settings.link.name),
        ]
    report = run_and_report(
        groups,
        seconds=settings.seconds,
        warmup=settings.warmup,
        out_dir=out_dir,
        what=what,
        targets=lambda results: targets.format_targets(results, judged),
        contention=settings.contention,
    )
    return exit_code(report.measured)


def exit_code(measured: int) -> int:
    """0 when at least one cell was measured; else 1, saying so on stderr (every cell was
    skipped or failed: the table holds only reasons).

    Example:
        >>> exit_code(3)
        0
    """
    if measured:
        return 0
    import sys

    print(
        "bench: no cell was measured (every one was skipped or failed; the reasons are in "
        "the table above)",
        file=sys.stderr,
    )
    return 1


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m openenv_gym.bench") -> int:
    """``python -m openenv_gym.bench``: parse ``argv`` and run."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    problem = conflicts(args)
    if problem:
        parser.error(problem)
    return run_from_args(args)


__all__ = ["add_arguments", "build_parser", "exit_code", "main", "run_from_args"]
