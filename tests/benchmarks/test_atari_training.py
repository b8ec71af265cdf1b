"""The Atari training benchmark's CPU accounting: the CPU of the processes below this one
(an embedded server's workers) counts, as this process's own does."""

from __future__ import annotations

import subprocess
import sys

import pytest

from openenv_gym.bench.atari_training import main, tree_cpu_seconds

BURN = "import time\nend = time.process_time() + 0.15\nwhile time.process_time() < end: pass\n"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_tree_cpu_seconds_counts_a_child_process() -> None:
    before = tree_cpu_seconds()
    assert before is not None
    child = subprocess.Popen(
        [sys.executable, "-c", BURN + "print('done', flush=True)\ntime.sleep(30)"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "done"  # burned its CPU, still alive
        spent = tree_cpu_seconds()
    finally:
        child.kill()
        child.wait()
    assert spent is not None
    assert spent - before >= 0.13  # the child's 0.15 s counts (ticks are 10 ms)


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_env_pairs_must_be_a_positive_integer(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--no-train", "--env-pairs", value])
    assert exited.value.code == 2  # argparse's usage error, before anything runs
    assert "--env-pairs: expected a positive integer" in capsys.readouterr().err


def test_env_only_pairs_take_turns_and_end_with_the_median() -> None:
    """Ours against envpool, two pairs of a few real steps: the second pair runs envpool
    first and a last row gives the median; without envpool, ours runs once and the envpool
    row says it was skipped (no ratio is made up)."""
    from openenv_gym.bench.atari_training import env_only

    try:
        import envpool  # noqa: F401
    except ImportError:
        rows = env_only(2, 3, pairs=2)
        assert [row.name for row in rows] == ["env only, ours N=2", "env only, envpool N=2"]
        assert rows[0].steps_per_s > 0
        assert rows[1].note.startswith("skipped:")
        return
    rows = env_only(2, 3, pairs=2)
    names = [row.name.removeprefix("env only, ") for row in rows]
    assert names == ["ours N=2", "envpool N=2", "envpool N=2", "ours N=2", "ours / envpool N=2"]
    ratios = [
        rows[0].steps_per_s / rows[1].steps_per_s,  # ours first
        rows[3].steps_per_s / rows[2].steps_per_s,  # envpool first
    ]
    assert f"ours {ratios[0]:.2f}x" in rows[1].note
    assert f"ours {ratios[1]:.2f}x" in rows[3].note
    assert rows[-1].note.startswith(f"median {sum(ratios) / 2:.2f}x of 2 pairs")
