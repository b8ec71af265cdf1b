"""Running planned cells with progress on stderr, and writing the report.

A run is a list of :class:`Group` (one per env: its cells, and what must run around them,
e.g. our servers). Each cell is opened, warmed up, timed and closed in turn; a contender
that is unavailable is skipped at every N with its reason, one that fails gets an
``error`` row and the run goes on. Progress is one stderr line per cell with the time left.

Example:
    >>> progress = Progress(total=4, estimate=2.0, log=lambda line: None)
    >>> progress.left()
    '8 s'
"""

from __future__ import annotations

import os
import platform
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from openenv_gym.bench.context import one_line
from openenv_gym.bench.measure import (
    STATUS_ERROR,
    STATUS_SKIPPED,
    ActionStream,
    CellResult,
    ContenderUnavailableError,
    Driver,
    measure,
)
from openenv_gym.bench.report import format_table, micros, write_csv, write_markdown

Log = Callable[[str], None]


def stderr_line(line: str) -> None:
    """Print one progress line to stderr, now."""
    print(line, file=sys.stderr, flush=True)


@dataclass
class PlannedCell:
    """One contender at one env and N, not yet run.

    Attributes:
        env: The env name for the table.
        key: The contender key.
        label: The contender's human name.
        num_envs: N.
        open: Opens the contender (raises ``ContenderUnavailableError`` to skip it).
        actions: Draws the action stream (called once the contender is open).
        annotate: Adds what is known only after the cell ran to its result (a linked
            run's bounds, :mod:`openenv_gym.bench.bounds`), or ``None``.
    """

    env: str
    key: str
    label: str
    num_envs: int
    open: Callable[[], Driver]
    actions: Callable[[], ActionStream]
    annotate: Callable[[CellResult], None] | None = None


@dataclass
class Group:
    """Cells that share a setup (our servers for one env), run inside ``setup()``.

    Attributes:
        cells: The cells, in run order.
        setup: A context manager to hold open while the cells run.
        notes: Remarks for the report, filled while running.
    """

    cells: list[PlannedCell]
    setup: Callable[[], AbstractContextManager[object]] = nullcontext
    notes: list[str] = field(default_factory=list)


def _clock(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60:02d} s"


class Progress:
    """Counts cells and estimates the time left from the ones done so far.

    Args:
        total: Cells planned.
        estimate: Seconds one cell is expected to take before any has run.
        log: Where the lines go.
    """

    def __init__(self, total: int, estimate: float, log: Log) -> None:
        self.total = total
        self.done = 0
        self._estimate = estimate
        self._started = time.monotonic()
        self._log = log

    def drop(self, count: int) -> None:
        """``count`` planned cells will not run (their contender was skipped)."""
        self.total -= count

    def left(self) -> str:
        """The time left, as text."""
        per_cell = self._estimate
        if self.done:
            per_cell = (time.monotonic() - self._started) / self.done
        return _clock((self.total - self.done) * per_cell)

    def report(self, prefix: str, text: str, counted: bool = True) -> None:
        """Log one cell's outcome with the time left."""
        if counted:
            self.done += 1
        self._log(f"[{self.done:>3}/{self.total}] {prefix}: {text} (~{self.left()} left)")


def run_groups(
    groups: Sequence[Group], seconds: float, warmup: float, log: Log = stderr_line
) -> list[CellResult]:
    """Run every cell of every group; return the results (skips and errors included)."""
    progress = Progress(sum(len(g.cells) for g in groups), seconds + warmup + 1.5, log)
    log(f"{progress.total} cells planned, about {progress.left()}")
    results: list[CellResult] = []
    for group in groups:
        with group.setup():
            skipped: set[str] = set()
            for index, cell in enumerate(group.cells):
                if cell.key in skipped:
                    continue
                prefix = f"{cell.env} N={cell.num_envs:<2} {cell.label}"
                result = run_cell(cell, seconds, warmup, group.notes)
                if result.status == STATUS_SKIPPED:
                    skipped.add(cell.key)
                    progress.drop(sum(1 for c in group.cells[index + 1 :] if c.key == cell.key))
                    result.num_envs = 0
                    progress.report(prefix, f"skipped: {result.reason}")
                elif result.status == STATUS_ERROR:
                    progress.report(prefix, f"error: {result.reason}")
                else:
                    p50 = micros((result.latency_us or (None,))[0])
                    progress.report(
                        prefix,
                        f"{result.steps_per_s or 0:,.0f} steps/s, p50 {p50} µs, "
                        f"CPU {micros(result.cpu_us_per_step)} µs/step",
                    )
                results.append(result)
    return results


def run_cell(cell: PlannedCell, seconds: float, warmup: float, notes: list[str]) -> CellResult:
    """Open, measure and close one cell."""
    failed = CellResult(cell.env, cell.key, cell.label, cell.num_envs, STATUS_ERROR)
    opened = time.perf_counter()
    try:
        driver = cell.open()
    except ContenderUnavailableError as exc:
        failed.status, failed.reason = STATUS_SKIPPED, str(exc)
        return failed
    except Exception as exc:
        failed.reason = one_line(exc)
        return failed
    setup_seconds = time.perf_counter() - opened
    try:
        result = measure(driver, cell.actions(), cell.num_envs, seconds, warmup)
    except Exception as exc:
        failed.reason = one_line(exc)
        return failed
    finally:
        try:
            driver.close()
        except Exception as exc:  # a failing close must not stop the run
            notes.append(f"{cell.key} N={cell.num_envs}: close failed: {one_line(exc)}")
    result.env, result.contender, result.label = cell.env, cell.key, cell.label
    result.setup_seconds = setup_seconds
    if cell.annotate is not None:
        try:
            cell.annotate(result)
        except Exception as exc:  # the measurement stands without its annotation
            notes.append(f"{cell.key} N={cell.num_envs}: no bounds: {one_line(exc)}")
    return result


def machine() -> str:
    """The machine, for the report header: host, CPU model, cores, Python."""
    model = ""
    try:
        with open("/proc/cpuinfo") as handle:
            model = next(
                (line.split(":", 1)[1].strip() for line in handle if "model name" in line), ""
            )
    except OSError:
        model = platform.processor()
    return (
        f"{platform.node() or 'host'} ({model or platform.machine()}, {os.cpu_count()} cores), "
        f"Python {platform.python_version()}"
    )


def load_average() -> float:
    """The 1-minute load average (NaN where the OS has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def versions() -> str:
    """The versions of the packages measured (``name version``, or ``name -`` if missing)."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("openenv-gym", "gymnasium", "envpool", "openenv", "ale-py", "websockets"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} -")
    return ", ".join(found)


def plot_title(header: dict[str, str]) -> str:
    """The PNG's title: what ran, when, where, the load average and the contention (the
    facts of the .md header that a figure shown alone must carry).

    Example:
        >>> plot_title({"Run": "a run", "Load average": "0.3 at the start", "Versions": "x"})
        'a run · load average 0.3 at the start'
    """
    keys = ("Run", "Date", "Machine", "Load average", "Contention")
    return " · ".join(
        f"load average {header[key]}" if key == "Load average" else header[key]
        for key in keys
        if key in header
    )


@dataclass
class Report:
    """Where a run's report went, and how many cells were measured (not skipped, no error)."""

    csv: Path
    markdown: Path
    png: Path | None
    measured: int = 0


def write_report(
    results: Sequence[CellResult],
    out_dir: Path,
    *,
    header: dict[str, str],
    targets: str,
    notes: Sequence[str],
) -> Report:
    """Print the table (and targets, notes) to stdout; write bench.csv, bench.png, bench.md.

    ``header`` holds the facts of the run (``{"Date": ..., "Machine": ..., ...}``).
    """
    out_dir = out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    table = format_table(results)
    print("\n" + "\n".join(f"{key}: {value}" for key, value in header.items()) + "\n")
    print(table)
    if targets:
        print("\nTargets measured in this run (ratios within this run):\n")
        print(targets)
    for note in notes:
        print(f"note: {note}")
    csv_path = write_csv(results, out_dir / "bench.csv")
    png: Path | None
    try:
        from openenv_gym.bench.plot import write_plot

        png = write_plot(results, out_dir / "bench.png", title=plot_title(header))
    except ImportError as exc:
        png = None
        print(
            f"\nPNG: not written, matplotlib is missing ({exc}); pip install 'openenv-gym[bench]'"
        )
    markdown = write_markdown(
        out_dir / "bench.md",
        header=header,
        table=table,
        targets=targets,
        notes=notes,
        png_name=png.name if png else None,
    )
    print(f"\nCSV: {csv_path}\nMarkdown: {markdown}")
    if png is not None:
        print(f"PNG: {png}")
    sys.stdout.flush()
    return Report(csv_path, markdown, png, sum(1 for result in results if result.ok))


def run_and_report(
    groups: Sequence[Group],
    *,
    seconds: float,
    warmup: float,
    out_dir: Path,
    what: str,
    targets: Callable[[Sequence[CellResult]], str],
    notes: Sequence[str] = (),
    log: Log = stderr_line,
    contention: int = 0,
) -> Report:
    """Run ``groups`` and write the report; ``what`` says what ran (for the header);
    ``contention``: CPU-bound processes beside every cell (:mod:`.contention`)."""
    from openenv_gym.bench.contention import CpuContention

    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    host, load_at_start = machine(), load_average()
    log(f"benchmarks: {what}; {host}, load average {load_at_start:.1f}")
    started = time.monotonic()
    busy = CpuContention(contention)
    with warnings.catch_warnings(), busy:
        warnings.simplefilter("ignore", UserWarning)
        if contention:
            log(f"contention: {busy.describe()} (pids {', '.join(map(str, busy.pids))})")
        results = run_groups(groups, seconds, warmup, log)
    header = {
        "Date": date,
        "Machine": host,
        "Load average": (
            f"{load_at_start:.1f} at the start, {load_average():.1f} at the end (above the "
            f"number of cores, other work shares the CPU: compare ratios, not absolute rates)"
        ),
        "Contention": busy.describe(),
        "Versions": versions(),
        "Run": f"{what}; it took {_clock(time.monotonic() - started)}",
        "Latency": "one step() call (N env steps at N > 1)",
    }
    from openenv_gym.bench.contenders import CPU_NOTE

    all_notes = [*notes, *(note for group in groups for note in group.notes), CPU_NOTE]
    return write_report(results, out_dir, header=header, targets=targets(results), notes=all_notes)
