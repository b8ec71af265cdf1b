"""The PNG: per env, a throughput panel (steps/s against N) and a latency panel (N=1).

Needs matplotlib (the ``[bench]`` extra); :func:`write_plot` raises ``ImportError`` without it.
Every contender keeps one colour and one marker in every panel; the legend sits below the
panels, never on the data.

Example:
    >>> len(set(MARKERS.values())) == len(MARKERS)
    True
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from openenv_gym.bench.measure import CellResult
from openenv_gym.bench.options import CONTENDER_STYLES

#: One colour and one marker per contender, as :data:`~openenv_gym.bench.options.CONTENDER_STYLES`.
COLORS: Final = {key: color for key, (color, _) in CONTENDER_STYLES.items()}
MARKERS: Final = {key: marker for key, (_, marker) in CONTENDER_STYLES.items()}


def _throughput(axis: Any, cells: Sequence[CellResult], env: str) -> None:
    for key in dict.fromkeys(c.contender for c in cells):
        points = sorted(
            (c.num_envs, float(c.steps_per_s or 0)) for c in cells if c.contender == key
        )
        label = next(c.label for c in cells if c.contender == key)
        xs, ys = zip(*points, strict=True)
        single = len(points) == 1  # one-env contenders: hollow, so overlaps stay visible
        axis.plot(
            xs,
            ys,
            marker=MARKERS.get(key, "o"),
            markersize=12 if single else 7,
            markerfacecolor="none" if single else COLORS.get(key),
            markeredgewidth=1.6 if single else 1.0,
            linestyle="" if single else "-",
            color=COLORS.get(key),
            label=label,
        )
    sizes = sorted({c.num_envs for c in cells})
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xticks(sizes, [str(size) for size in sizes])
    axis.set_xlabel("N (sub-envs)")
    axis.set_ylabel("env steps / s (higher is better)")
    axis.set_title(f"{env}: throughput")
    axis.grid(True, which="both", alpha=0.3)


def _latency(axis: Any, cells: Sequence[CellResult], env: str) -> None:
    single = [c for c in cells if c.num_envs == 1 and c.latency_us is not None]
    single.sort(key=lambda c: c.latency_us[0] if c.latency_us else 0.0, reverse=True)
    for row, cell in enumerate(single):
        p50, p90, p99 = cell.latency_us or (0.0, 0.0, 0.0)
        color = COLORS.get(cell.contender)
        axis.barh(row, p50, color=color, alpha=0.75, height=0.6)
        axis.plot([p50, p99], [row, row], color="black", linewidth=1)
        axis.plot([p90], [row], marker="D", color="black", markersize=4)
        axis.plot([p99], [row], marker="|", color="black", markersize=12)
        axis.annotate(
            f" {p50:,.1f}" if p50 < 10 else f" {p50:,.0f}",
            (p99, row),
            va="center",
            fontsize=8,
        )
    axis.set_yticks(range(len(single)), [c.label for c in single], fontsize=8)
    axis.set_xscale("log")
    axis.set_xlabel("µs per step at N=1: bar p50 (value), ◆ p90, | p99 (lower is better)")
    axis.set_title(f"{env}: latency of one step")
    axis.grid(True, axis="x", which="both", alpha=0.3)
    if single:
        low = min((c.latency_us or (1.0,))[0] for c in single)
        high = max((c.latency_us or (1.0, 1.0, 1.0))[2] for c in single)
        axis.set_xlim(low / 2, high * 4)  # room for the value labels


def write_plot(cells: Sequence[CellResult], path: Path, title: str = "") -> Path:
    """Write the throughput and latency panels of every env to ``path``; returns it.

    Raises:
        ImportError: matplotlib is missing (``pip install 'openenv-gym[bench]'``).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measured = [c for c in cells if c.ok]
    envs = list(dict.fromkeys(c.env for c in measured)) or [""]
    figure, axes = plt.subplots(
        len(envs),
        2,
        figsize=(14, 4.6 * len(envs) + 1.6),
        layout="constrained",
        squeeze=False,
        width_ratios=(1.15, 1),
    )
    for row, env in enumerate(envs):
        env_cells = [c for c in measured if c.env == env]
        if env_cells:
            _throughput(axes[row][0], env_cells, env)
            _latency(axes[row][1], env_cells, env)
    handles: dict[str, Any] = {}
    for axis in axes[:, 0]:
        for handle, label in zip(*axis.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    if handles:
        figure.legend(
            list(handles.values()),
            list(handles),
            loc="outside lower center",
            ncol=min(5, len(handles)),
            fontsize=9,
            frameon=False,
        )
    if title:
        figure.suptitle("\n".join(textwrap.wrap(title.replace("`", ""), 130)), fontsize=10)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
