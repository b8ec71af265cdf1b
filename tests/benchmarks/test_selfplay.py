"""``python -m benchmarks.selfplay`` runs: every row prints a rate (a tiny run)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("chess")

from benchmarks import selfplay


@pytest.mark.slow
def test_every_row_prints_a_rate(capsys: pytest.CaptureFixture[str]) -> None:
    selfplay.main(["--seconds", "0.2", "--num-games", "2"])
    out = capsys.readouterr().out
    for row in ("pettingzoo chess_v6 (local)", "openenv AEC (1 game)", "(2 games)"):
        assert re.search(re.escape(row) + r"\s+\d+$", out, re.M), out
    assert "load average before:" in out
