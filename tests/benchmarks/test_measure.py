"""The measurement core, the table, the targets and the plot, on hand-made results (no timings)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from openenv_gym.bench.measure import (
    ActionStream,
    CellResult,
    LoopDriver,
    measure,
    timed_loop,
)
from openenv_gym.bench.plot import COLORS, MARKERS
from openenv_gym.bench.report import (
    CSV_COLUMNS,
    TABLE_COLUMNS,
    format_table,
    parse_table,
    write_csv,
    write_markdown,
)
from openenv_gym.bench.targets import CPU, TARGETS, Target


def _cell(contender: str, n: int, rate: float, cpu: float = 10.0) -> CellResult:
    return CellResult(
        "CartPole",
        contender,
        contender.upper(),
        n,
        "ok",
        steps_per_s=rate,
        env_steps=int(rate),
        seconds=1.0,
        latency_us=(100.0, 150.0, 900.0),
        cpu_us_per_step=cpu,
    )


def test_action_streams_are_seeded_and_cycle() -> None:
    first = ActionStream.discrete(6, 4, seed=3)
    again = ActionStream.discrete(6, 4, seed=3)
    rows = [first.next() for _ in range(5)]
    assert all(np.array_equal(a, again.next()) for a in rows)
    assert all(row.shape == (4,) and row.min() >= 0 and row.max() < 6 for row in rows)
    cycling = ActionStream([10, 20])
    assert [cycling.next() for _ in range(5)] == [10, 20, 10, 20, 10]
    with pytest.raises(ValueError, match="at least one row"):
        ActionStream([])


def test_resets_run_outside_the_per_step_latency() -> None:
    steps: list[int] = []
    resets: list[int] = []

    def step(row: np.ndarray) -> bool:
        steps.append(int(row[0]))
        return len(steps) % 3 == 0  # every third step ends an episode

    window = timed_loop(step, ActionStream.discrete(2, 1), 0.02, reset=lambda: resets.append(1))
    assert window.calls == len(steps) == len(window.latencies)
    assert len(resets) == len(steps) // 3
    assert window.seconds > 0
    assert window.cpu_seconds >= 0


def test_measure_reports_rate_percentiles_and_cpu_per_env_step() -> None:
    calls: list[object] = []
    driver = LoopDriver(calls.append, close=lambda: None)
    result = measure(driver, ActionStream.discrete(2, 4), num_envs=4, seconds=0.02, warmup=0.01)
    assert result.ok
    assert result.env_steps % 4 == 0
    assert result.env_steps < len(calls) * 4  # the warm-up is not counted
    assert result.latency_us is not None
    p50, p90, p99 = result.latency_us
    assert 0 < p50 <= p90 <= p99
    assert result.cpu_us_per_step is not None
    assert result.cpu_us_per_step >= 0


def test_table_has_ratios_latency_and_cpu_and_reads_back() -> None:
    cells = [
        _cell("raw", 1, 50_000.0),
        _cell("sync", 8, 40_000.0),
        _cell("async", 8, 10_000.0),
        _cell("ours-json", 8, 15_000.0),
        CellResult("CartPole", "envpool", "envpool async", 0, "skipped", reason="no | envpool"),
    ]
    rows = parse_table(format_table(cells))
    assert list(rows[0]) == list(TABLE_COLUMNS)
    ours = rows[3]
    assert ours["steps/s"] == "15,000"
    assert ours["vs Async(N)"] == "1.50x"
    assert ours["vs Sync(N)"] == "0.38x"
    assert ours["vs raw"] == "0.30x"
    assert (ours["p50 µs"], ours["p90 µs"], ours["p99 µs"]) == ("100", "150", "900")
    assert ours["CPU µs/step"] == "10"
    assert rows[0]["vs Async(N)"] == "-"  # no AsyncVectorEnv(1) in this run
    assert rows[4]["N"] == "*"
    assert rows[4]["steps/s"] == "skipped: no / envpool"


def test_csv_and_markdown_carry_every_cell(tmp_path: Path) -> None:
    cells = [_cell("async", 8, 10_000.0), _cell("ours-json", 8, 15_000.0)]
    with write_csv(cells, tmp_path / "bench.csv").open() as handle:
        records = list(csv.DictReader(handle))
    assert tuple(records[0]) == CSV_COLUMNS
    assert records[1]["vs_async"] == "1.5000"
    assert records[1]["p99_us"] == "900.00"
    markdown = write_markdown(
        tmp_path / "bench.md",
        header={"Date": "today", "Machine": "this one"},
        table=format_table(cells),
        targets="| target |\n|---|\n| a |",
        notes=["a note"],
        png_name="bench.png",
    ).read_text()
    assert markdown.startswith("- **Date:** today\n- **Machine:** this one\n")
    assert "this run):\n\n| target |\n|---|\n| a |\n" in markdown
    assert "![throughput and latency of every contender](bench.png)" in markdown


def test_rate_and_cpu_targets_say_met_not_met_or_not_measured() -> None:
    rate = Target("x", "CartPole", ("ours-json", "ours-binary"), 8, "async", 8, 1.5)
    assert rate.verdict([_cell("async", 8, 10.0), _cell("ours-json", 8, 16.0)]).startswith(
        "[met] x: ours-json 16 / async 10 steps/s = 1.60x"
    )
    assert rate.verdict([_cell("async", 8, 10.0), _cell("ours-binary", 8, 14.0)]).startswith(
        "[not met]"
    )
    assert rate.verdict([_cell("async", 8, 10.0)]) == (
        "[not measured] x: no result for ours-json/ours-binary(8)"
    )
    cpu = Target("c", "CartPole", ("ours-json",), 16, "official", 16, 1 / 3, CPU)
    official = _cell("official", 16, 1.0, cpu=90.0)
    assert cpu.verdict([official, _cell("ours-json", 16, 1.0, cpu=20.0)]).startswith("[met] c")
    assert cpu.verdict([official, _cell("ours-json", 16, 1.0, cpu=40.0)]).startswith(
        "[not met] c: ours-json 40.0 / official 90.0 µs CPU per step = 0.44x"
    )
    texts = [target.text for target in TARGETS]
    assert len(texts) == 7
    assert any("2x official client .sync()" in text for text in texts)


def test_every_contender_has_its_own_colour_and_marker() -> None:
    from openenv_gym.bench.contenders import CONTENDER_KEYS

    assert set(CONTENDER_KEYS) <= set(MARKERS)
    assert len(set(MARKERS.values())) == len(MARKERS)
    assert len({COLORS[key] for key in CONTENDER_KEYS}) == len(CONTENDER_KEYS)


def test_the_plot_is_a_png(tmp_path: Path) -> None:
    from openenv_gym.bench.plot import write_plot

    cells = [_cell("raw", 1, 50_000.0), _cell("async", 1, 9_000.0), _cell("async", 8, 20_000.0)]
    path = write_plot(cells, tmp_path / "bench.png", title="a title " * 30)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_targets_table_has_one_row_per_measured_target_and_none_unmeasured() -> None:
    from openenv_gym.bench.targets import format_targets

    cells = [_cell("official-sync", 1, 1_000.0), _cell("ours-env", 1, 2_500.0)]
    rows = parse_table(format_targets(cells))
    assert rows == [
        {
            "target": "single-env CartPole >= 2x official client .sync()",
            "verdict": "**met**",
            "measured": "ours-env 2,500 / official-sync 1,000 steps/s",
            "ratio": "2.50x",
        }
    ]
    # A run that measured no target prints no table at all (no "not measured" rows).
    assert format_targets([_cell("raw", 1, 50_000.0)]) == ""
