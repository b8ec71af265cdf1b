"""``openenv-gym build`` streams a condensed log of pip and docker build while it runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from openenv_gym.errors import ImageBuildError
from openenv_gym.images.build_output import condense
from openenv_gym.images.wheelhouse import build_wheelhouse


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("Step 4/9 : RUN pip install --no-index /tmp/src[atari]\n", "Step 4/9 : RUN pip install"),
        ("#7 [3/5] COPY . /tmp/src", "#7 [3/5] COPY . /tmp/src"),
        ("Collecting gymnasium==1.2.2", "Collecting gymnasium==1.2.2"),
        ("  Saved ./docker/wheelhouse/numpy-2.4.6.whl", "Saved ./docker/wheelhouse/numpy"),
        ("Successfully installed openenv-gym-0.1.0", "Successfully installed"),
        ("ERROR: No matching distribution found for nope", "ERROR: No matching"),
        ("  Downloading numpy-2.4.6.whl (16.8 MB)", None),
        (" ---> Running in 2f3c1d", None),
        ("WARNING: Location 'file:///opt/x' is ignored", None),
        ("", None),
    ],
)
def test_condense_keeps_the_steps(line: str, shown: str | None) -> None:
    result = condense(line)
    if shown is None:
        assert result is None
    else:
        assert result is not None
        assert result.startswith(shown)


def test_pip_progress_is_streamed_and_a_failure_carries_the_log(tmp_path: Path) -> None:
    lines: list[str] = []
    with pytest.raises(
        ImageBuildError, match=r"(?s)pip wheel failed \(exit \d+\).*ERROR: Invalid requirement"
    ):
        build_wheelhouse(
            tmp_path, ["./no-such-project-dir"], python=sys.executable, progress=lines.append
        )
    assert lines[0].startswith("wheelhouse: pip wheel 1 requirements into ")
    assert any(line.startswith("wheelhouse: ERROR") for line in lines[1:]), lines
