"""Without pyarrow (the ``[datasets]`` extra) every reader names the install (issue 28, item 4)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from openenv_gym.errors import MissingExtraError
from openenv_gym.trajectories import iter_episodes, to_d4rl, trajectory_arrays, trajectory_spaces
from openenv_gym.wrappers import RecordTrajectories

pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run")
    env = RecordTrajectories(gym.make("CartPole-v1"), out)
    env.reset(seed=0)
    for _ in range(5):
        env.step(0)
    env.close()
    return out


@pytest.mark.parametrize(
    "read",
    [trajectory_arrays, trajectory_spaces, to_d4rl, lambda out: next(iter_episodes(out))],
    ids=["trajectory_arrays", "trajectory_spaces", "to_d4rl", "iter_episodes"],
)
def test_readers_name_the_extra_when_pyarrow_is_missing(
    recording: Path, read: Callable[[Path], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in [name for name in sys.modules if name.partition(".")[0] == "pyarrow"]:
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'openenv-gym\[datasets\]'") as caught:
        read(recording)
    assert caught.value.extra == "datasets"
    assert "reading a recording (Parquet) needs pyarrow" in str(caught.value)
