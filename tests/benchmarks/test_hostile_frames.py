"""``benchmarks.hostile_frames``: a packed frame nobody agreed to costs the client no memory,
and the benchmark runs end to end (its figures are in the closing note, not asserted)."""

from __future__ import annotations

import pytest

from benchmarks.hostile_frames import client_cost, main, packed_zeros
from openenv_gym.wire.compressed import COMPRESSED_MAGIC


def test_a_packed_frame_not_agreed_allocates_nothing_on_the_client() -> None:
    size, _cpu, peak_mib = client_cost()
    assert size < 3000  # a few KB that declare 64 MiB
    assert peak_mib < 1.0  # it allocated 64 MiB before it was refused unread


def test_the_hostile_frame_is_small_and_declares_a_large_content() -> None:
    frame = packed_zeros(10_000_000)
    assert frame.startswith(COMPRESSED_MAGIC)
    assert len(frame) < 1000


@pytest.mark.slow
def test_the_benchmark_runs_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--seconds", "0.3"]) == 0
    out = capsys.readouterr().out
    assert "bystander median step" in out
    assert "load average" in out
