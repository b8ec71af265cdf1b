"""A recording's files: what datasets loads, the card, the lock, a killed writer's leftovers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from openenv_gym.errors import TrajectoryFormatError
from openenv_gym.trajectories import (
    load_trajectories,
    remove_stale_temp_files,
    trajectory_arrays,
    trajectory_files,
)
from openenv_gym.wrappers import RecordTrajectories

pytest.importorskip("pyarrow")


def _record(out: Path, steps: int = 60, chunk_size: int = 25) -> RecordTrajectories:
    env = RecordTrajectories(gym.make("CartPole-v1"), out, chunk_size=chunk_size)
    env.reset(seed=0)
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    return env


@pytest.mark.parametrize("steps", [60, 47])
def test_every_documented_way_loads_the_same_rows(tmp_path: Path, steps: int) -> None:
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "rec"  # the same name twice: datasets' cache must not mix them up
    _record(out, steps=steps).close()
    (out / "experiment.yaml").write_text("env: {id: CartPole-v1}\n")  # beside the data
    arrays = trajectory_arrays(out)
    for dataset in (
        datasets.load_dataset("parquet", data_dir=str(out), split="train"),
        datasets.load_dataset(str(out), split="train"),
        load_trajectories(out),
    ):
        assert len(dataset) == steps
        table = dataset.with_format("numpy")[:]
        np.testing.assert_array_equal(np.stack(table["observation"]), arrays["observation"])
        np.testing.assert_array_equal(
            np.stack(table["next_observation"]), arrays["next_observation"]
        )
        np.testing.assert_array_equal(table["terminated"], arrays["terminated"])
        np.testing.assert_array_equal(table["episode_id"], arrays["episode_id"])


def test_the_dataset_card_points_datasets_at_the_chunks(tmp_path: Path) -> None:
    out = tmp_path / "rec"
    _record(out).close()
    card = (out / "README.md").read_text()
    assert card.startswith("---\ntags:")
    assert "(`data/train-*.parquet`)" in card
    assert "# Trajectories of CartPole-v1" in card
    assert "- steps: 60" in card
    assert '"type": "Discrete", "n": 2' in card
    huggingface_hub = pytest.importorskip("huggingface_hub")
    data = huggingface_hub.DatasetCard.load(out / "README.md").data
    assert "offline-rl" in data.tags


def test_a_writer_cleans_what_a_writer_killed_before_its_first_chunk_left(tmp_path: Path) -> None:
    out = tmp_path / "rec"
    (out / "data").mkdir(parents=True)
    stale = out / "data" / ".train-000000.parquet.tmp"
    stale.write_bytes(b"half a chunk")
    with pytest.raises(TrajectoryFormatError, match="no finished chunk"):
        trajectory_arrays(out)
    assert not stale.exists()  # the reader's open removed it
    stale.write_bytes(b"half a chunk")
    _record(out, steps=10).close()  # so does a writer's open; the directory is free to use
    assert not stale.exists()
    assert len(trajectory_arrays(out)["step"]) == 10


def test_a_writer_never_writes_into_a_directory_of_other_files(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# my project\n")
    with pytest.raises(TrajectoryFormatError, match="is not empty"):
        RecordTrajectories(gym.make("CartPole-v1"), project)
    assert (project / "README.md").read_text() == "# my project\n"
    (project / "README.md").unlink()
    (project / "notes.txt").write_text("x")
    with pytest.raises(TrajectoryFormatError, match=r"holds \['notes.txt'\]"):
        RecordTrajectories(gym.make("CartPole-v1"), project)


def test_a_live_writer_keeps_its_temp_files_and_excludes_a_second_writer(tmp_path: Path) -> None:
    out = tmp_path / "rec"
    live = _record(out, steps=30)
    in_progress = out / "data" / ".train-000009.parquet.tmp"
    in_progress.write_bytes(b"half a chunk")
    assert len(trajectory_files(out)) == 1
    assert in_progress.exists()  # a reader never touches a live writer's files
    with pytest.raises(TrajectoryFormatError, match="another live writer"):
        RecordTrajectories(gym.make("CartPole-v1"), out)
    live.close()
    assert remove_stale_temp_files(out) == [in_progress]
    assert not in_progress.exists()


CHILD = textwrap.dedent(
    """
    import sys
    import gymnasium as gym
    import numpy as np
    from gymnasium import spaces
    from openenv_gym.wrappers import RecordTrajectories

    class Noise(gym.ObservationWrapper):
        # CartPole with a large incompressible image: chunk writes take long enough to catch.
        def __init__(self, env):
            super().__init__(env)
            self.observation_space = spaces.Box(0, 255, (128, 128, 3), np.uint8)
            self.rng = np.random.default_rng(0)

        def observation(self, observation):
            return self.rng.integers(0, 256, (128, 128, 3), dtype=np.uint8)

    env = RecordTrajectories(Noise(gym.make("CartPole-v1")), sys.argv[1], chunk_size=400)
    env.reset(seed=0)
    while True:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    """
)


@pytest.mark.slow
def test_temp_files_of_a_killed_writer_are_removed_on_the_next_open(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    out = tmp_path / "rec"
    child = subprocess.Popen(
        [sys.executable, str(script), str(out)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    stale: list[Path] = []
    try:
        deadline = time.monotonic() + 90
        while not stale and time.monotonic() < deadline:
            temps = list((out / "data").glob(".train-*.parquet.tmp")) if out.exists() else []
            if not temps or not trajectory_files(out):  # wait for a second chunk in progress
                time.sleep(0.001)
                continue
            os.kill(child.pid, signal.SIGSTOP)  # freeze it mid-write, then check
            stale = [p for p in temps if p.exists()]
            if stale:
                os.kill(child.pid, signal.SIGKILL)
            else:
                os.kill(child.pid, signal.SIGCONT)
    finally:
        child.kill()
        child.wait(30)
    assert stale, "never caught the writer mid-chunk"
    assert all(p.exists() for p in stale)  # the killed writer left them
    files = trajectory_files(out)  # the next open
    assert not any(p.exists() for p in stale)
    arrays = trajectory_arrays(out)
    assert len(arrays["step"]) == 400 * len(files)  # every finished chunk reads back whole
    assert arrays["observation"].shape[1:] == (128, 128, 3)
    writer = RecordTrajectories(gym.make("CartPole-v1"), tmp_path / "fresh")
    writer.close()
    with pytest.raises(TrajectoryFormatError, match="already holds a recording"):
        RecordTrajectories(gym.make("CartPole-v1"), out)
