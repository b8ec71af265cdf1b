"""The variable-step-time measurement runs end to end (a short run; no speed is asserted:
the targets are the benchmark's, not the tests')."""

from __future__ import annotations

import re

import pytest

from openenv_gym.bench import variable_steps


@pytest.mark.slow
def test_variable_steps_measures_both_and_serves_every_sub_env(
    capsys: pytest.CaptureFixture[str],
) -> None:
    variable_steps.main(["--num-envs", "4", "--batch-size", "2", "--seconds", "1"])
    out = capsys.readouterr().out
    assert "vector env (sync)" in out
    assert re.search(r"ratio pool / vector:\s+\d+\.\d+x", out)
    served = re.search(r"steps per sub-env in the pool: min (\d+), max (\d+)", out)
    assert served is not None
    assert int(served.group(1)) > 0  # every sub-env was served
