"""``python -m benchmarks.ws_stack``: real echo servers and clients, a table of every pair."""

from __future__ import annotations

import pytest

from openenv_gym.bench.ws_stack import (
    CLIENTS,
    SERVERS,
    EchoResult,
    format_table,
    installed,
    measure,
)


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


def test_the_table_has_a_row_per_server_and_a_column_per_client_in_their_order() -> None:
    results = [
        EchoResult("websockets/uvloop", "picows/uvloop", 20_000.0),
        EchoResult("websockets/uvloop", "websockets/uvloop", 10_000.0),
    ]
    assert format_table(results).splitlines() == [
        "| server \\ client | websockets/uvloop | picows/uvloop |",
        "|---|---:|---:|",
        "| websockets/uvloop | 10,000/s (100 µs) | 20,000/s (50 µs) |",
    ]


def test_installed_names_what_is_missing() -> None:
    assert installed("websockets-sans-io/blocking")  # a dependency of the package
    assert not installed("no-such-stack/uvloop")
