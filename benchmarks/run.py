"""The benchmark suite: env steps/s of every contender, for CartPole and Pong, N = 1..16.

One process tree, one sitting: our servers (``openenv-gym serve ...``) and a bare
``websockets`` echo server run as child processes on 127.0.0.1; the contenders are raw
Gymnasium (N=1), Gymnasium ``SyncVectorEnv`` / ``AsyncVectorEnv``, envpool, the official
``openenv`` client (asyncio gather over N sessions) and ours (``OpenEnvVectorEnv``, JSON and
binary frames). A contender whose prerequisite is missing is reported as
``skipped: <reason>``. Progress goes to stderr, one line per cell; the table, the target
verdicts and the CSV / PNG paths go to stdout.

    python -m benchmarks.run                 # everything (< 15 min on 2 cores)
    python -m benchmarks.run --quick         # CartPole, N in {1, 8}, 1 s cells
    python -m benchmarks.run --envs Pong --n 8 --seconds 5 --servers 2
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from benchmarks.contenders import CONTENDERS, Contender
from benchmarks.report import format_table, format_targets, write_csv, write_plot
from benchmarks.suite import (
    ENV_SPECS,
    STATUS_ERROR,
    STATUS_SKIPPED,
    ActionStream,
    CellResult,
    ContenderUnavailableError,
    Context,
    Settings,
    measure,
    running_servers,
)
from openenv_gym.cli.bench import (
    DEFAULT_SECONDS,
    DEFAULT_SIZES,
    MAX_WARMUP,
    QUICK_SECONDS,
    QUICK_SIZES,
    add_arguments,
)

DEFAULT_OUT: Final = Path(__file__).resolve().parent / "results"

Log = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def build_parser(prog: str = "python -m benchmarks.run") -> argparse.ArgumentParser:
    """The suite's argument parser."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(__doc__ or "").split("\n\n")[0].replace("\n", " "),
    )
    add_arguments(parser)
    return parser


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The :class:`Settings` for parsed arguments (``--quick`` fills what was not given)."""
    seconds = args.seconds or (QUICK_SECONDS if args.quick else DEFAULT_SECONDS)
    return Settings(
        envs=args.envs or (["CartPole"] if args.quick else list(ENV_SPECS)),
        sizes=args.n or list(QUICK_SIZES if args.quick else DEFAULT_SIZES),
        seconds=seconds,
        warmup=args.warmup if args.warmup is not None else min(MAX_WARMUP, seconds / 6),
        servers=int(args.servers),
        workers=None if args.workers is None else int(args.workers),
        contenders=args.contenders,
    )


def _plan(settings: Settings, env: str) -> list[tuple[Contender, int]]:
    """The (contender, N) cells of one env, in run order: the N=1 anchors first."""
    chosen = [
        c
        for c in CONTENDERS
        if (settings.contenders is None or c.key in settings.contenders)
        and (c.envs is None or env in c.envs)
    ]
    cells = [(c, 1) for c in chosen if c.single_only]
    cells += [(c, n) for n in settings.sizes for c in chosen if not c.single_only]
    return cells


def run_suite(settings: Settings, log: Log = _stderr) -> tuple[list[CellResult], list[str]]:
    """Run every cell; return the results (skips and errors included) and report notes."""
    results: list[CellResult] = []
    notes: list[str] = []
    plans = {env: _plan(settings, env) for env in settings.envs}
    total = sum(len(cells) for cells in plans.values())
    log(
        f"{total} cells planned: {total * (settings.seconds + settings.warmup):.0f} s of "
        "timed windows and warm-ups, plus setup (skipped contenders take none)"
    )
    done = 0
    for env in settings.envs:
        context = Context(ENV_SPECS[env], settings)
        with running_servers(context, log):
            if context.server_problem:
                log(f"[{env}] no server: {context.server_problem}")
            skipped: set[str] = set()
            for index, (contender, n) in enumerate(plans[env]):
                if contender.key in skipped:
                    continue
                done += 1
                prefix = f"[{done:>3}/{total}] {env:<8} N={n:<2} {contender.label}"
                result = _run_cell(context, contender, n)
                if result.status == STATUS_SKIPPED:
                    skipped.add(contender.key)
                    total -= sum(1 for c, _ in plans[env][index + 1 :] if c.key == contender.key)
                    result.num_envs = 0
                    log(f"{prefix}: skipped: {result.reason}")
                elif result.status == STATUS_ERROR:
                    log(f"{prefix}: error: {result.reason}")
                else:
                    log(f"{prefix}: {result.steps_per_s or 0:,.0f} steps/s")
                results.append(result)
        notes += [f"{env}: {note}" for note in context.notes]
    return results, notes


def _run_cell(context: Context, contender: Contender, n: int) -> CellResult:
    env = context.spec.name
    opened = time.perf_counter()
    try:
        driver = contender.open(context, n)
    except ContenderUnavailableError as exc:
        return CellResult(env, contender.key, contender.label, n, STATUS_SKIPPED, reason=str(exc))
    except Exception as exc:
        return CellResult(env, contender.key, contender.label, n, STATUS_ERROR, reason=_line(exc))
    setup_seconds = time.perf_counter() - opened
    try:
        actions = ActionStream(context.spec.n_actions, n, context.settings.seed)
        result = measure(driver, actions, n, context.settings)
    except Exception as exc:
        return CellResult(env, contender.key, contender.label, n, STATUS_ERROR, reason=_line(exc))
    finally:
        try:
            driver.close()
        except Exception as exc:  # a failing close must not stop the suite
            context.notes.append(f"{contender.key} N={n}: close failed: {_line(exc)}")
    result.env, result.contender, result.label = env, contender.key, contender.label
    result.setup_seconds = setup_seconds
    return result


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def describe(settings: Settings) -> str:
    """One line saying where and how the suite ran."""
    return (
        f"{platform.node() or 'host'}: {os.cpu_count()} cores (load average "
        f"{os.getloadavg()[0]:.1f} at the start), Python "
        f"{platform.python_version()}, {settings.seconds:g} s cells after "
        f"{settings.warmup:.2g} s warm-up, N in {{{','.join(map(str, settings.sizes))}}}, "
        f"{settings.servers} server process(es) per env"
        + (f" x --workers {settings.workers}" if settings.workers else "")
    )


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m benchmarks.run") -> int:
    """Run the suite from the command line; return the exit code."""
    args = build_parser(prog).parse_args(argv)
    return run_from_args(args)


def run_from_args(args: argparse.Namespace, log: Log = _stderr) -> int:
    """Run the suite for parsed :func:`add_arguments` options, print and write the report."""
    settings = settings_from_args(args)
    out_dir: Path = args.out if args.out is not None else DEFAULT_OUT
    out_dir.mkdir(parents=True, exist_ok=True)
    header = describe(settings)
    log(f"benchmarks: {header}")
    started = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        results, notes = run_suite(settings, log)
    elapsed = time.monotonic() - started
    stamp = time.strftime("%Y%m%d-%H%M%S")
    csv_path = write_csv(results, out_dir / f"bench-{stamp}.csv")
    print(f"\nenv steps/s ({header}; suite took {elapsed:.0f} s)\n")
    print(format_table(results))
    print("\nTargets:")
    print(format_targets(results))
    for note in notes:
        print(f"note: {note}")
    print(f"\nCSV: {csv_path}")
    try:
        png_path = write_plot(results, out_dir / f"bench-{stamp}.png", title=header)
    except ImportError as exc:
        print(f"PNG: not written, matplotlib is missing ({exc}); pip install 'openenv-gym[bench]'")
    else:
        print(f"PNG: {png_path}")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
