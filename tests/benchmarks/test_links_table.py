"""The link table (:mod:`openenv_gym.bench.links_table`): its rows and targets from measured
cells, and one real run of a linked row (a CartPole server with a private /dev/shm behind
the proxy)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_gym.bench.links_table import (
    LINK_ROWS,
    LinkRow,
    Measured,
    format_link_targets,
    format_links_table,
    main,
    measure_links,
)
from openenv_gym.bench.measure import CellResult
from openenv_gym.bench.report import parse_table


def _cell(env: str, key: str, n: int, rate: float, bound: float | None = None) -> CellResult:
    return CellResult(
        env,
        key,
        key,
        n,
        "ok",
        steps_per_s=rate,
        latency_us=(25_000.0, 0.0, 0.0),
        bound=bound,
        bounds="" if bound is None else f"bound {bound:,.0f}/s",
    )


def test_every_row_the_docs_need_is_planned() -> None:
    planned = {(row.link, row.env, n) for row in LINK_ROWS for n in row.sizes}
    assert {("loopback", "Pong", 8), ("docker", "Pong", 8), ("lan", "Pong", 16)} <= planned
    assert {("wan", "Pong", 16), ("wan", "CartPole", 64), ("rtt_ms=0", "Pong", 16)} <= planned
    assert all("official" in row.contenders for row in LINK_ROWS if row.link in ("lan", "wan"))


def test_targets_take_their_ratios_from_the_medians_of_the_runs() -> None:
    measured = {
        ("wan", "Pong", 16, "ours-zstd"): Measured(
            "wan", [_cell("Pong", "ours-zstd", 16, r, 650.0) for r in (600.0, 680.0, 640.0)]
        ),
        ("wan", "Pong", 16, "official"): Measured("wan", [_cell("Pong", "official", 16, 32.0)]),
        ("loopback", "Pong", 8, "ours-binary"): Measured(
            "loopback", [_cell("Pong", "ours-binary", 8, 1000.0)]
        ),
        ("docker", "Pong", 8, "ours-binary"): Measured(
            "docker", [_cell("Pong", "ours-binary", 8, 700.0)]
        ),
    }
    targets = {row["target"]: row for row in parse_table(format_link_targets(measured))}
    wan = targets["wan Pong N=16 >= 0.8 x N/RTT"]
    assert (wan["ratio"], wan["verdict"]) == ("0.80x", "**met**")  # the median, 640
    assert targets["wan Pong N=16 >= 20x the official client"]["ratio"] == "20.00x"
    docker = targets["docker Pong N=8 >= 0.8x a child-process server"]
    assert (docker["ratio"], docker["verdict"]) == ("0.70x", "not met")
    lan = targets["lan Pong N=16 >= 0.8x the same host without shared memory"]
    assert lan["verdict"] == "not measured"
    rows = parse_table(format_links_table(measured))
    wan_row = next(row for row in rows if row["link"] == "wan" and row["contender"] == "ours-zstd")
    assert wan_row["steps/s"] == "640"
    assert wan_row["of N/RTT"] == "0.80"
    assert wan_row["of N/(RTT + server)"] == "0.98"


def test_a_linked_row_runs_for_real_and_keeps_every_repeat() -> None:
    row = LinkRow("rtt_ms=4", "CartPole", (2,), ("ours-binary",))
    measured, notes = measure_links([row], 0.2, 0.05, 2, log=lambda line: None)
    (runs,) = measured.values()
    assert len(runs.cells) == 2
    assert all(cell.ok for cell in runs.cells), [cell.reason for cell in runs.cells]
    assert all(cell.bounds.startswith("N/RTT 500/s") for cell in runs.cells)
    assert any("4 ms round trip" in note for note in notes)


def test_unknown_links_are_refused_with_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--links", "moon"])
    assert "expected some of loopback, rtt_ms=0, docker, lan, wan" in capsys.readouterr().err


@pytest.mark.slow
def test_the_command_writes_markdown_and_csv(tmp_path: Path) -> None:
    assert main(["--links", "rtt_ms=0", "--seconds", "0.3", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "links.md").read_text()
    assert "| rtt_ms=0 | Pong | 16 |" in text
    assert "Targets of the link issue" in text
    assert (tmp_path / "links.csv").read_text().startswith("link,env,num_envs,contender")
