"""``--contention K``'s processes: they burn CPU while the run goes on, stop with it, and stop
by themselves when the bench is gone or their time is up (bounded waits, no timed
assertion)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from openenv_gym.bench.contention import CpuContention


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _gone(pid: int, within: float = 60.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return True
        if "State:\tZ" in state:
            return True
        time.sleep(0.05)
    return False


def test_the_processes_burn_cpu_and_stop_with_the_run() -> None:
    with CpuContention(2) as busy:
        assert len(busy.pids) == 2
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and min(map(_cpu_ticks, busy.pids)) == 0:
            time.sleep(0.05)
        assert min(map(_cpu_ticks, busy.pids)) > 0
        assert busy.alive() == [True, True]
        assert busy.describe().startswith("2 CPU-bound pure-Python processes")
    assert busy.alive() == [False, False]


def test_none_asked_none_started() -> None:
    with CpuContention(0) as busy:
        assert busy.pids == []
    assert "none" in busy.describe()


def test_a_process_stops_when_its_time_is_up() -> None:
    with CpuContention(1, max_seconds=0.05) as busy:
        (pid,) = busy.pids
        assert _gone(pid)


def test_the_processes_stop_when_the_bench_is_gone() -> None:
    # A bench that dies without cleaning up (os._exit): its processes notice and exit.
    code = (
        "import os; from openenv_gym.bench.contention import CpuContention\n"
        "busy = CpuContention(1).__enter__()\n"
        "print(busy.pids[0], flush=True)\n"
        "os._exit(0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    pid = int(done.stdout.strip())
    assert _gone(pid)


@pytest.mark.parametrize(("count", "seconds"), [(-1, 1.0), (1, 0.0)])
def test_bad_arguments_say_what_was_expected(count: int, seconds: float) -> None:
    with pytest.raises(ValueError, match="expected"):
        CpuContention(count, max_seconds=seconds)
