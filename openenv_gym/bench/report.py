"""Turning cell results into the Markdown table, a Markdown report file and a CSV.

The table has one row per measured cell plus one ``skipped: <reason>`` row per contender
that could not run: steps/s with its ratio to gymnasium ``AsyncVectorEnv(N)``, to
``SyncVectorEnv(N)`` and to raw Gymnasium (one env), the latency of one ``step()`` call
(p50 / p90 / p99) and the client-process CPU time per env step.

Example:
    >>> from openenv_gym.bench.measure import CellResult
    >>> rows = [CellResult("CartPole", "async", "AsyncVectorEnv", 1, "ok", 100.0,
    ...                    latency_us=(5.0, 7.5, 20.0), cpu_us_per_step=3.0)]
    >>> print(format_table(rows).splitlines()[2])
    | CartPole | AsyncVectorEnv | 1 | 100 | 1.00x | - | - | 5.0 | 7.5 | 20 | 3.0 |
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from openenv_gym.bench.measure import CellResult
from openenv_gym.bench.targets import find

TABLE_COLUMNS: Final = (
    "env",
    "contender",
    "N",
    "steps/s",
    "vs Async(N)",
    "vs Sync(N)",
    "vs raw",
    "p50 µs",
    "p90 µs",
    "p99 µs",
    "CPU µs/step",
)
CSV_COLUMNS: Final = (
    "env",
    "contender",
    "label",
    "num_envs",
    "status",
    "steps_per_s",
    "vs_async",
    "vs_sync",
    "vs_raw",
    "p50_us",
    "p90_us",
    "p99_us",
    "cpu_us_per_step",
    "env_steps",
    "seconds",
    "setup_seconds",
    "reason",
    "bound_steps_per_s",
    "bounds",
)
#: The column a linked run adds: the row's physical bounds (:mod:`openenv_gym.bench.bounds`).
BOUNDS_COLUMN: Final = "bounds"
#: What each ratio column divides by: (contender, N or None for the row's N).
REFERENCES: Final = (("async", None), ("sync", None), ("raw", 1))


def ratios(cells: Sequence[CellResult], cell: CellResult) -> list[float | None]:
    """``cell``'s rate over AsyncVectorEnv(N), SyncVectorEnv(N) and raw Gymnasium."""
    out: list[float | None] = []
    for key, n in REFERENCES:
        reference = find(cells, cell.env, key, cell.num_envs if n is None else n)
        if not cell.ok or reference is None or not reference.steps_per_s:
            out.append(None)
        else:
            out.append((cell.steps_per_s or 0.0) / reference.steps_per_s)
    return out


def micros(value: float | None) -> str:
    """Microseconds for a table: ``5.1``, ``237``, ``12,345``."""
    if value is None:
        return "-"
    return f"{value:.1f}" if value < 10 else f"{value:,.0f}"


def _ratio_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def format_table(cells: Sequence[CellResult]) -> str:
    """The Markdown table of every cell (skips and errors keep their reason); a
    :data:`BOUNDS_COLUMN` is added when a cell has bounds."""
    bounded = any(cell.bounds for cell in cells)
    columns = (*TABLE_COLUMNS, BOUNDS_COLUMN) if bounded else TABLE_COLUMNS
    lines = [
        "| " + " | ".join(columns) + " |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---|" if bounded else ""),
    ]
    for cell in cells:
        n = str(cell.num_envs) if cell.num_envs else "*"
        if cell.ok:
            latency = cell.latency_us or (None, None, None)
            values = [
                f"{cell.steps_per_s:,.0f}",
                *(_ratio_text(r) for r in ratios(cells, cell)),
                *(micros(v) for v in latency),
                micros(cell.cpu_us_per_step),
            ]
        else:
            reason = cell.reason.replace("|", "/").replace("\n", " ")
            values = [f"{cell.status}: {reason}", *["-"] * (len(TABLE_COLUMNS) - 4)]
        if bounded:
            values.append(cell.bounds or "-")
        lines.append(f"| {cell.env} | {cell.label} | {n} | " + " | ".join(values) + " |")
    return "\n".join(lines)


def parse_table(text: str, index: int = 0) -> list[dict[str, str]]:
    """Read the ``index``-th Markdown table in ``text`` back (rows as column -> text)."""
    tables: list[list[str]] = []
    previous = ""
    for line in text.splitlines():
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            tables[-1].append(line)
        previous = line
    header, _rule, *rows = tables[index]
    names = [cell.strip() for cell in header.strip("|").split("|")]
    return [
        dict(zip(names, (cell.strip() for cell in row.strip("|").split("|")), strict=True))
        for row in rows
    ]


def write_rows(path: Path, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> Path:
    """Write a CSV of ``columns`` and ``rows`` to ``path``; returns it."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        writer.writerows(rows)
    return path


def _number(value: float | None, digits: int) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def write_csv(cells: Sequence[CellResult], path: Path) -> Path:
    """Write every cell (with its ratios) to ``path``; returns it."""
    return write_rows(
        path,
        CSV_COLUMNS,
        (
            [
                cell.env,
                cell.contender,
                cell.label,
                cell.num_envs,
                cell.status,
                _number(cell.steps_per_s, 1),
                *(_number(r, 4) for r in ratios(cells, cell)),
                *(_number(v, 2) for v in cell.latency_us or (None, None, None)),
                _number(cell.cpu_us_per_step, 2),
                cell.env_steps,
                f"{cell.seconds:.3f}",
                f"{cell.setup_seconds:.3f}",
                cell.reason,
                _number(cell.bound, 1),
                cell.bounds,
            ]
            for cell in cells
        ),
    )


def write_markdown(
    path: Path,
    *,
    header: dict[str, str],
    table: str,
    targets: str,
    notes: Sequence[str],
    png_name: str | None,
    targets_title: str = "Targets measured in this run",
) -> Path:
    """The report as one Markdown file (what the README's benchmark section shows)."""
    facts = "\n".join(f"- **{key}:** {value}" for key, value in header.items())
    parts = [facts + "\n", table + "\n"]
    if targets:
        parts.append(f"{targets_title} (ratios within this run):\n\n{targets}\n")
    if notes:
        parts.append("\n".join(f"- {note}" for note in notes) + "\n")
    if png_name:
        parts.append(f"![throughput and latency of every contender]({png_name})\n")
    path.write_text("\n".join(parts))
    return path
