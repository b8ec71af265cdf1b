"""``python -m benchmarks.ws_stack``: real echo servers and clients, a table of every pair."""

from __future__ import annotations

import pytest

from openenv_gym.bench.ws_stack import CLIENTS, SERVERS, format_table, installed, measure


@pytest.mark.slow
def test_every_installed_pair_echoes_and_lands_in_the_table() -> None:
    results = measure(seconds=0.2)
    pairs = {(r.server, r.client) for r in results}
    expected = {(s, c) for s in SERVERS if installed(s) for c in CLIENTS if installed(c)}
    assert pairs == expected
    assert all(r.round_trips_per_s > 0 for r in results)
    table = format_table(results)
    assert table.count("\n") == 1 + len({s for s, _ in expected})
    assert "websockets-sans-io/uvloop" in table
