"""``openenv-gym record`` against real servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from openenv_gym.cli import main
from openenv_gym.trajectories import trajectory_arrays, trajectory_metadata

pytest.importorskip("pyarrow")


def always_right(observation: Any, action_space: Any) -> int:
    """A policy for ``--policy``: push the cart right."""
    return 1


def _episode_ends(arrays: dict[str, np.ndarray]) -> int:
    return int((arrays["terminated"] | arrays["truncated"]).sum())


def test_record_random_episodes_from_a_base_url(
    cartpole_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    code = main(
        ["record", "--base-url", cartpole_url, "--episodes", "4", "--out", str(out), "--seed", "3"]
    )
    assert code == 0
    arrays = trajectory_arrays(out)
    assert _episode_ends(arrays) == 4
    assert len(np.unique(arrays["episode_id"])) == 4
    assert set(np.unique(arrays["action"])) == {0, 1}
    meta = trajectory_metadata(out)["metadata"]
    assert meta["server_url"] == cartpole_url
    assert meta["seed"] == 3
    assert meta["policy"] == "random"
    captured = capsys.readouterr()
    assert f"recorded 4 episodes, {len(arrays['step'])} steps, 1 chunk(s)" in captured.out


def test_record_with_a_named_policy_and_plain_progress_lines(
    cartpole_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)  # tqdm missing: plain lines
    out = tmp_path / "run"
    code = main(
        [
            "record",
            "--base-url",
            cartpole_url,
            "--episodes",
            "2",
            "--out",
            str(out),
            "--policy",
            f"{__name__}:always_right",
            "--max-episode-steps",
            "5",
        ]
    )
    assert code == 0
    arrays = trajectory_arrays(out)
    np.testing.assert_array_equal(arrays["action"], 1)
    assert len(arrays["step"]) <= 10
    err = capsys.readouterr().err
    assert "episode 1/2: return" in err
    assert "episode 2/2: return" in err


def test_bad_record_arguments_are_clear_errors(
    cartpole_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["record", "--base-url", cartpole_url, "--out", str(tmp_path / "a")]
    assert main([*base, "--episodes", "0"]) == 2
    assert "expected a positive integer" in capsys.readouterr().err
    assert main([*base, "--episodes", "1", "--policy", "greedy"]) == 2
    assert "expected 'random' or package.module:function" in capsys.readouterr().err
    (tmp_path / "b" / "data").mkdir(parents=True)
    (tmp_path / "b" / "data" / "train-000000.parquet").write_bytes(b"")
    code = main(
        ["record", "--base-url", cartpole_url, "--episodes", "1", "--out", str(tmp_path / "b")]
    )
    assert code == 1
    assert "TrajectoryFormatError" in capsys.readouterr().err


@pytest.mark.slow
def test_record_console_command_with_an_embedded_server(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "openenv_gym.cli", "record", "--episodes", "2", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert result.returncode == 0, result.stderr
    assert "recorded 2 episodes" in result.stdout
    assert "2/2" in result.stderr  # the progress bar
    assert trajectory_metadata(out)["metadata"]["env_id"] == "openenv/CartPole-v1"


def test_record_a_vector_env_from_a_config(cartpole_url: str, tmp_path: Path) -> None:
    config = tmp_path / "experiment.json"
    config.write_text(
        json.dumps(
            {
                "env": {"id": "openenv/Remote-v0", "base_url": cartpole_url},
                "num_envs": 3,
                "autoreset_mode": "same_step",
                "seed": 4,
                "wrappers": [
                    {"type": "shape_reward", "terms": [{"scale": 0.0}]},
                    {"type": "terminate_when", "conditions": [{"no_reward_for": {"steps": 1}}]},
                ],
            }
        )
    )
    out = tmp_path / "run"
    argv = ["record", "--config", str(config), "--episodes", "6", "--out", str(out)]
    assert main([*argv, "--no-progress", "--info-key", "raw_reward"]) == 0
    arrays = trajectory_arrays(out)
    assert int((arrays["terminated"] | arrays["truncated"]).sum()) >= 6
    assert set(np.unique(arrays["env_index"])) == {0, 1, 2}
    np.testing.assert_array_equal(arrays["reward"], 0.0)  # shaped to 0: a dry step ends it
    np.testing.assert_array_equal(arrays["info.raw_reward"], 1.0)
    np.testing.assert_array_equal(arrays["truncated"], True)
    saved = json.loads(json.dumps(trajectory_metadata(out)["metadata"]["experiment"]))
    assert saved["num_envs"] == 3
    assert saved["wrappers"][-1]["type"] == "record"
    assert (out / "experiment.yaml").exists()


def test_record_config_conflicts_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"env": {"id": "CartPole-v1"}}))
    argv = ["record", "--config", str(config), "--episodes", "1", "--out", str(tmp_path / "o")]
    assert main([*argv, "--env-id", "CartPole-v1"]) == 2
    assert "cannot be combined with --config" in capsys.readouterr().err
    config.write_text(json.dumps({"env": {"id": "CartPole-v1"}, "num_envs": -1}))
    assert main(argv) == 1
    assert "num_envs" in capsys.readouterr().err


def test_record_summary_counts_what_the_vector_data_holds(
    cartpole_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 28, item 7: with num_envs=4 the printed counts are those of the rows written."""
    config = tmp_path / "experiment.json"
    env = {"id": "openenv/Remote-v0", "base_url": cartpole_url}
    config.write_text(json.dumps({"env": env, "num_envs": 4, "seed": 0, "wrappers": []}))
    out = tmp_path / "run"
    argv = ["record", "--config", str(config), "--episodes", "5", "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 0
    arrays = trajectory_arrays(out)
    ends = arrays["terminated"] | arrays["truncated"]
    rows = len(arrays["step"])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith(f"recorded {int(ends.sum())} episodes, {rows} steps, 1 chunk(s)")
    # Rows after the last end of each sub-env belong to its unfinished episode.
    unfinished_rows = 0
    for index in range(4):
        mine = np.flatnonzero(arrays["env_index"] == index)
        mine_ends = mine[ends[mine]]
        unfinished_rows += len(mine) if not len(mine_ends) else int((mine > mine_ends[-1]).sum())
    assert unfinished_rows > 0
    assert f"({unfinished_rows} of the steps are of " in last
