"""Every link row of the README and ``docs/benchmarks.md`` from one command, with the bounds
and the link issue's targets.

``python -m benchmarks.links_table [--seconds S] [--repeats R] [--out DIR]`` runs, for each
link, our servers where the link puts them (:mod:`openenv_gym.bench.links`; the servers with
``--workers auto``, as a deployment would run them) and the contenders that matter there:

=============  ======================================================================
link           rows
=============  ======================================================================
``loopback``   Pong N=8 and N=16, ours (the same host: shared memory applies)
``rtt_ms=0``   Pong N=16, ours plain and with zstd (the same host without shared memory)
``docker``     Pong N=8 and N=16, ours and the official client (containers of our image)
``lan``        Pong N=16, ours plain and with zstd, the official client
``wan``        Pong N=16 and CartPole N=64, ours (plain, zstd) and the official client
=============  ======================================================================

Each remote row carries its bounds (:mod:`openenv_gym.bench.bounds`): ``N/RTT`` and
``N/(RTT + server time)``, the server time measured by the servers themselves. With
``--repeats R`` the whole sequence runs R times, interleaved, and each row is the median.
The table and the targets go to stdout and to ``links.md`` / ``links.csv`` in ``--out``.
Rows that cannot run here (no Docker engine, no ``unshare``) are skipped with the reason.

Example:
    >>> [(row.link, row.env, row.sizes) for row in LINK_ROWS][:2]
    [('loopback', 'Pong', (8, 16)), ('rtt_ms=0', 'Pong', (16,))]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from openenv_gym.bench.contenders import CONTENDERS
from openenv_gym.bench.context import ENV_SPECS, Context, Settings, running_servers
from openenv_gym.bench.links import parse_link
from openenv_gym.bench.measure import CellResult
from openenv_gym.bench.options import DEFAULT_OUT_ROOT, workers
from openenv_gym.bench.report import write_markdown, write_rows
from openenv_gym.bench.runner import Group, Log, load_average, machine, run_groups, stderr_line
from openenv_gym.bench.suite import planned_cell


@dataclass(frozen=True)
class LinkRow:
    """The cells of one link and env.

    Attributes:
        link: The ``--link`` value.
        env: The env name.
        sizes: The N values.
        contenders: The contender keys.
    """

    link: str
    env: str
    sizes: tuple[int, ...]
    contenders: tuple[str, ...]


_OURS: Final = ("ours-binary", "ours-zstd")

#: What one run measures, in order.
LINK_ROWS: Final = (
    LinkRow("loopback", "Pong", (8, 16), ("ours-binary",)),
    LinkRow("rtt_ms=0", "Pong", (16,), _OURS),
    LinkRow("docker", "Pong", (8, 16), ("ours-binary", "official")),
    LinkRow("lan", "Pong", (16,), (*_OURS, "official")),
    LinkRow("wan", "Pong", (16,), (*_OURS, "official")),
    LinkRow("wan", "CartPole", (64,), (*_OURS, "official")),
)

#: The columns of ``links.csv``.
LINKS_CSV_COLUMNS: Final = (
    "link",
    "env",
    "num_envs",
    "contender",
    "repeat",
    "status",
    "steps_per_s",
    "p50_us",
    "bound_steps_per_s",
    "bounds",
    "reason",
)
#: Default timed window per cell, and warm-up.
DEFAULT_SECONDS: Final = 5.0
WARMUP: Final = 0.5


@dataclass
class Measured:
    """The runs of one cell (one per repeat) at one link."""

    link: str
    cells: list[CellResult]

    @property
    def first(self) -> CellResult:
        return self.cells[0]

    def median(self, attribute: str) -> float | None:
        values = [getattr(c, attribute) for c in self.cells if c.ok]
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    @property
    def rate(self) -> float | None:
        return self.median("steps_per_s")


def _group(row: LinkRow, seconds: float, warmup: float) -> Group:
    settings = Settings(
        envs=[row.env],
        sizes=list(row.sizes),
        seconds=seconds,
        warmup=warmup,
        workers=workers("auto"),
        link=parse_link(row.link),
        server_bounds=True,
    )
    context = Context(ENV_SPECS[row.env], settings)
    chosen = [c for c in CONTENDERS if c.key in row.contenders]
    cells = [planned_cell(context, c, n) for n in row.sizes for c in chosen]
    return Group(cells, lambda: running_servers(context, lambda line: None), context.notes)


def measure_links(
    rows: Sequence[LinkRow], seconds: float, warmup: float, repeats: int, log: Log
) -> tuple[dict[tuple[str, str, int, str], Measured], list[str]]:
    """Run every row ``repeats`` times, interleaved; the runs of each cell, and the notes."""
    measured: dict[tuple[str, str, int, str], Measured] = {}
    notes: list[str] = []
    for repeat in range(repeats):
        for row in rows:
            group = _group(row, seconds, warmup)
            log(f"[repeat {repeat + 1}/{repeats}] {row.link}: {row.env} N={row.sizes}")
            for result in run_groups([group], seconds, warmup, log):
                key = (row.link, result.env, result.num_envs, result.contender)
                measured.setdefault(key, Measured(row.link, [])).cells.append(result)
            if repeat == 0:
                notes += [note for note in group.notes if note not in notes]
    return measured, notes


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _share(rate: float | None, bound: float | None) -> str:
    if rate is None or bound is None or bound <= 0 or bound == float("inf"):
        return "-"
    return f"{rate / bound:.2f}"


def format_links_table(measured: dict[tuple[str, str, int, str], Measured]) -> str:
    """The rows as Markdown: steps/s, p50, the bounds and the share of each bound reached."""
    lines = [
        "| link | env | N | contender | steps/s | p50 ms | bounds | of N/RTT | "
        "of N/(RTT + server) |",
        "|---|---|---:|---|---:|---:|---|---:|---:|",
    ]
    for (link, env, n, _key), runs in measured.items():
        cell = runs.first
        if not any(c.ok for c in runs.cells):
            reason = cell.reason.replace("|", "/").splitlines()[0] if cell.reason else ""
            lines.append(
                f"| {link} | {env} | {n or '*'} | {cell.label} | {cell.status}: "
                f"{reason} | - | - | - | - |"
            )
            continue
        rate = runs.rate
        p50 = statistics.median(c.latency_us[0] for c in runs.cells if c.ok and c.latency_us)
        profile = parse_link(link)
        bounds = next((c.bounds for c in runs.cells if c.bounds), "-")
        lines.append(
            f"| {link} | {env} | {n} | {cell.label} | {_rate(rate)} | {p50 / 1000:.1f} | "
            f"{bounds} | {_share(rate, profile.round_trip_bound(n))} | "
            f"{_share(rate, runs.median('bound'))} |"
        )
    return "\n".join(lines)


def _best(
    measured: dict[tuple[str, str, int, str], Measured],
    link: str,
    env: str,
    n: int,
    keys: Sequence[str],
) -> tuple[float | None, str]:
    found = [
        (rate, key)
        for key in keys
        if (runs := measured.get((link, env, n, key))) is not None and (rate := runs.rate)
    ]
    return max(found) if found else (None, "/".join(keys))


def format_link_targets(measured: dict[tuple[str, str, int, str], Measured]) -> str:
    """The link issue's targets, each with its measured ratio (or why it is missing)."""
    lines = ["| target | measured | ratio | verdict |", "|---|---|---:|---|"]

    def add(
        text: str, ours: tuple[float | None, str], ref: float | None, ref_text: str, factor: float
    ) -> None:
        rate, key = ours
        if rate is None or ref is None or ref <= 0:
            lines.append(
                f"| {text} | no result for {key if rate is None else ref_text} | - | not measured |"
            )
            return
        ratio = rate / ref
        verdict = "**met**" if ratio >= factor else "not met"
        lines.append(
            f"| {text} | {key} {rate:,.0f} / {ref_text} {ref:,.0f} | {ratio:.2f}x | {verdict} |"
        )

    wan = parse_link("wan")
    wan_pong = _best(measured, "wan", "Pong", 16, _OURS)
    add("wan Pong N=16 >= 0.8 x N/RTT", wan_pong, wan.round_trip_bound(16), "N/RTT", 0.8)
    official = measured.get(("wan", "Pong", 16, "official"))
    add(
        "wan Pong N=16 >= 20x the official client",
        wan_pong,
        official.rate if official else None,
        "official",
        20.0,
    )
    same_host = _best(measured, "rtt_ms=0", "Pong", 16, _OURS)
    add(
        "lan Pong N=16 >= 0.8x the same host without shared memory",
        _best(measured, "lan", "Pong", 16, _OURS),
        same_host[0],
        f"rtt_ms=0 {same_host[1]}",
        0.8,
    )
    add(
        "wan CartPole N=64 >= 0.8 x N/RTT",
        _best(measured, "wan", "CartPole", 64, _OURS),
        wan.round_trip_bound(64),
        "N/RTT",
        0.8,
    )
    child = measured.get(("loopback", "Pong", 8, "ours-binary"))
    add(
        "docker Pong N=8 >= 0.8x a child-process server",
        _best(measured, "docker", "Pong", 8, ("ours-binary",)),
        child.rate if child else None,
        "loopback ours-binary",
        0.8,
    )
    return "\n".join(lines)


def write_links_csv(measured: dict[tuple[str, str, int, str], Measured], path: Path) -> Path:
    """Every run of every cell, one line each (the repeat's own numbers, not medians)."""
    return write_rows(
        path,
        LINKS_CSV_COLUMNS,
        (
            [
                link,
                env,
                n,
                key,
                repeat + 1,
                cell.status,
                "" if cell.steps_per_s is None else f"{cell.steps_per_s:.1f}",
                "" if not cell.latency_us else f"{cell.latency_us[0]:.0f}",
                "" if cell.bound is None else f"{cell.bound:.1f}",
                cell.bounds,
                cell.reason,
            ]
            for (link, env, n, key), runs in measured.items()
            for repeat, cell in enumerate(runs.cells)
        ),
    )


def main(argv: Sequence[str] | None = None, log: Log = stderr_line) -> int:
    """``python -m benchmarks.links_table``: measure, print and write the link rows."""
    from openenv_gym.argument_types import positive_int, positive_seconds

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.links_table", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--seconds",
        type=positive_seconds,
        default=DEFAULT_SECONDS,
        help=f"timed window per cell (default: {DEFAULT_SECONDS:g})",
    )
    parser.add_argument(
        "--repeats",
        type=positive_int,
        default=1,
        help="run the whole sequence this many times, interleaved; each row "
        "is the median (default: 1)",
    )
    parser.add_argument(
        "--links",
        default=None,
        metavar="LIST",
        help="only these links, comma-separated (default: every row's)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"where links.md and links.csv go (default: {DEFAULT_OUT_ROOT}/links-<date-time>/)",
    )
    args = parser.parse_args(argv)
    chosen = None if args.links is None else {name.strip() for name in args.links.split(",")}
    rows = [row for row in LINK_ROWS if chosen is None or row.link in chosen]
    if not rows:
        parser.error(
            f"--links {args.links!r}: expected some of "
            f"{', '.join(dict.fromkeys(r.link for r in LINK_ROWS))}"
        )
    load_at_start = load_average()
    started = datetime.now(UTC)
    measured, notes = measure_links(
        rows, args.seconds, min(WARMUP, args.seconds / 6), args.repeats, log
    )
    run = (
        f"`python -m benchmarks.links_table --seconds {args.seconds:g} --repeats {args.repeats}`"
        + ("" if chosen is None else f" `--links {args.links}`")
        + "; our servers with `--workers auto`, rows are medians over the repeats"
    )
    header = {
        "Date": f"{started:%Y-%m-%d %H:%M} UTC",
        "Machine": machine(),
        "Load average": f"{load_at_start:.1f} at the start, {load_average():.1f} at the end",
        "Run": run,
    }
    out_dir: Path = args.out or DEFAULT_OUT_ROOT / f"links-{started:%Y%m%d-%H%M%S}"
    out_dir.mkdir(parents=True, exist_ok=True)
    markdown = write_markdown(
        out_dir / "links.md",
        header=header,
        table=format_links_table(measured),
        targets=format_link_targets(measured),
        notes=notes,
        png_name=None,
        targets_title="Targets of the link issue",
    )
    csv_path = write_links_csv(measured, out_dir / "links.csv")
    print(markdown.read_text() + f"\nMarkdown: {markdown}\nCSV: {csv_path}")
    return 0


__all__ = [
    "LINK_ROWS",
    "LinkRow",
    "format_link_targets",
    "format_links_table",
    "main",
    "measure_links",
]
