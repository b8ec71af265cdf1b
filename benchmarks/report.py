"""Turning cell results into the table, the target verdicts, a CSV and a PNG plot.

The table is Markdown (pasteable into an issue), one row per measured cell plus one
``skipped: <reason>`` row per contender that could not run, with each rate's ratio to
gymnasium ``AsyncVectorEnv`` and to the official client at the same env and N.

Example:
    >>> from benchmarks.suite import CellResult
    >>> rows = [CellResult("CartPole", "async", "gymnasium AsyncVectorEnv", 1, "ok", 100.0)]
    >>> print(format_table(rows).splitlines()[2])
    | CartPole | gymnasium AsyncVectorEnv | 1 | 100 | 1.00x | - |
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from benchmarks.suite import STATUS_OK, CellResult

TABLE_COLUMNS: Final = ("env", "contender", "N", "steps/s", "vs Async(N)", "vs official(N)")
CSV_COLUMNS: Final = (
    "env",
    "contender",
    "label",
    "num_envs",
    "status",
    "steps_per_s",
    "vs_async",
    "vs_official",
    "env_steps",
    "seconds",
    "setup_seconds",
    "reason",
)


def _rate(results: Iterable[CellResult], env: str, contender: str, n: int) -> float | None:
    for result in results:
        if (result.env, result.contender, result.num_envs) == (env, contender, n):
            return result.steps_per_s if result.status == STATUS_OK else None
    return None


def ratios(results: Sequence[CellResult], result: CellResult) -> tuple[float | None, float | None]:
    """``result``'s rate over AsyncVectorEnv(N) and over the official client(N), if measured."""
    if result.status != STATUS_OK or result.steps_per_s is None:
        return None, None
    out: list[float | None] = []
    for reference in ("async", "official"):
        rate = _rate(results, result.env, reference, result.num_envs)
        out.append(result.steps_per_s / rate if rate else None)
    return out[0], out[1]


def _ratio_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def format_table(results: Sequence[CellResult]) -> str:
    """The Markdown table of every cell (skips and errors keep their reason)."""
    lines = [
        "| " + " | ".join(TABLE_COLUMNS) + " |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for result in results:
        n = str(result.num_envs) if result.num_envs else "*"
        if result.status == STATUS_OK and result.steps_per_s is not None:
            vs_async, vs_official = ratios(results, result)
            cells = [f"{result.steps_per_s:,.0f}", _ratio_text(vs_async), _ratio_text(vs_official)]
        else:
            reason = result.reason.replace("|", "/").replace("\n", " ")
            cells = [f"{result.status}: {reason}", "-", "-"]
        lines.append(f"| {result.env} | {result.label} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_table(text: str) -> list[dict[str, str]]:
    """Read a table written by :func:`format_table` back (rows as column -> text)."""
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    return [
        dict(zip(header, (cell.strip() for cell in row.strip("|").split("|")), strict=True))
        for row in rows[1:]
    ]


@dataclass(frozen=True)
class Target:
    """A throughput goal from the issue: ``best of contenders >= factor x reference``.

    Attributes:
        text: The goal as the issue states it.
        env: The env name.
        contenders: Ours; the best measured one counts.
        n: N for ours.
        reference: The contender compared against.
        reference_n: N for the reference.
        factor: The required ratio.
    """

    text: str
    env: str
    contenders: tuple[str, ...]
    n: int
    reference: str
    reference_n: int
    factor: float

    def verdict(self, results: Sequence[CellResult]) -> str:
        """``[met] ...``, ``[not met] ...`` or ``[not measured] ...`` with the numbers."""
        ours = [
            (rate, key)
            for key in self.contenders
            if (rate := _rate(results, self.env, key, self.n)) is not None
        ]
        reference = _rate(results, self.env, self.reference, self.reference_n)
        if not ours or reference is None:
            missing = [] if ours else ["/".join(self.contenders) + f"({self.n})"]
            missing += [] if reference is not None else [f"{self.reference}({self.reference_n})"]
            return f"[not measured] {self.text}: no result for {', '.join(missing)}"
        rate, key = max(ours)
        ratio = rate / reference
        status = "met" if ratio >= self.factor else "not met"
        return (
            f"[{status}] {self.text}: {key} {rate:,.0f} / {self.reference} "
            f"{reference:,.0f} = {ratio:.2f}x"
        )


_OURS_VECTOR: Final = ("ours-json", "ours-binary")

#: The targets of the vectorization issue.
TARGETS: Final = (
    Target("vector Pong N=8 >= 1.0x AsyncVectorEnv(8)", "Pong", _OURS_VECTOR, 8, "async", 8, 1.0),
    Target("vector Pong N=8 >= 0.7x envpool async(8)", "Pong", _OURS_VECTOR, 8, "envpool", 8, 0.7),
    Target(
        "vector CartPole N=8 >= 1.0x AsyncVectorEnv(8)",
        "CartPole",
        _OURS_VECTOR,
        8,
        "async",
        8,
        1.0,
    ),
    Target(
        "single-env CartPole >= 0.8x bare websockets echo",
        "CartPole",
        ("ours-env",),
        1,
        "echo",
        1,
        0.8,
    ),
)


def format_targets(results: Sequence[CellResult]) -> str:
    """One verdict line per target."""
    return "\n".join(target.verdict(results) for target in TARGETS)


def write_csv(results: Sequence[CellResult], path: Path) -> Path:
    """Write every cell (with its ratios) to ``path``; returns it."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        for result in results:
            vs_async, vs_official = ratios(results, result)
            writer.writerow(
                [
                    result.env,
                    result.contender,
                    result.label,
                    result.num_envs,
                    result.status,
                    "" if result.steps_per_s is None else f"{result.steps_per_s:.1f}",
                    "" if vs_async is None else f"{vs_async:.4f}",
                    "" if vs_official is None else f"{vs_official:.4f}",
                    result.env_steps,
                    f"{result.seconds:.3f}",
                    f"{result.setup_seconds:.3f}",
                    result.reason,
                ]
            )
    return path


#: One colour per contender, the same in every panel.
_COLORS: Final = {
    "raw": "tab:blue",
    "sync": "tab:orange",
    "async": "tab:green",
    "envpool": "tab:purple",
    "official": "tab:brown",
    "ours-env": "tab:pink",
    "ours-json": "tab:red",
    "ours-binary": "black",
}


def write_plot(results: Sequence[CellResult], path: Path, title: str = "") -> Path:
    """Steps/s against N (log-log), one panel per env; returns ``path``.

    Raises:
        ImportError: matplotlib is missing (``pip install 'openenv-gym[bench]'``).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = list(dict.fromkeys(r.env for r in results))
    figure, axes = plt.subplots(1, max(1, len(envs)), figsize=(6.5 * max(1, len(envs)), 4.8))
    axes_list = list(axes.flat) if hasattr(axes, "flat") else [axes]
    for axis, env in zip(axes_list, envs, strict=False):
        measured = [r for r in results if r.env == env and r.status == STATUS_OK and r.steps_per_s]
        for key in dict.fromkeys(r.contender for r in measured):
            points = sorted(
                (r.num_envs, float(r.steps_per_s or 0)) for r in measured if r.contender == key
            )
            label = next(r.label for r in measured if r.contender == key)
            color = _COLORS.get(key)
            if key == "echo":
                axis.axhline(points[0][1], linestyle=":", color="grey", label=label)
            elif len(points) == 1:
                xs, ys = zip(*points, strict=True)
                axis.plot(xs, ys, marker="*", markersize=12, linestyle="", color=color, label=label)
            else:
                xs, ys = zip(*points, strict=True)
                axis.plot(xs, ys, marker="o", color=color, label=label)
        sizes = sorted({r.num_envs for r in measured})
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        if sizes:
            axis.set_xticks(sizes, [str(size) for size in sizes])
        axis.set_xlabel("N (sub-envs)")
        axis.set_ylabel("env steps / s")
        axis.set_title(env)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=7)
    if title:
        figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
