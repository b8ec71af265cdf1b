"""Trajectory logging on real servers: content, datasets round trip, chunks, crashes, memory."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import openenv_gym
from openenv_gym import OpenEnvEnv
from openenv_gym.errors import HubPushError, TrajectoryFormatError, WrapperConfigError
from openenv_gym.trajectories import (
    load_trajectories,
    push_to_hub,
    trajectory_arrays,
    trajectory_files,
    trajectory_metadata,
    trajectory_spaces,
)
from openenv_gym.wrappers import RecordTrajectories, Scale, ShapeReward, VectorRecordTrajectories

from .test_normalization import SplitCartPole, Tape

pytest.importorskip("pyarrow")


def _episodes(arrays: dict[str, np.ndarray]) -> dict[int, np.ndarray]:
    """Row indices of each episode id."""
    return {
        int(e): np.flatnonzero(arrays["episode_id"] == e) for e in np.unique(arrays["episode_id"])
    }


def test_single_env_rows_match_what_the_env_produced(cartpole_url: str, tmp_path: Path) -> None:
    tape = Tape(OpenEnvEnv(cartpole_url))
    env = RecordTrajectories(
        ShapeReward(tape, [Scale(0.5)]),
        tmp_path,
        chunk_size=64,
        info_keys={"raw_reward": "float64", "absent": "string"},
        env_id="openenv/CartPole-v1",
    )
    actions: list[int] = []
    env.action_space.seed(0)
    env.reset(seed=7)
    expected_obs = [tape.observations[-1]]
    final_obs = []
    for _ in range(200):
        action = int(env.action_space.sample())
        actions.append(action)
        obs, _, terminated, truncated, _ = env.step(action)
        final_obs.append(obs)
        if terminated or truncated:
            obs, _ = env.reset()
        expected_obs.append(obs)
    env.close()

    arrays = trajectory_arrays(tmp_path)
    assert len(trajectory_files(tmp_path)) == 4  # 64 + 64 + 64 + 8
    assert arrays["observation"].shape == (200, 4)
    assert arrays["observation"].dtype == np.float32
    np.testing.assert_array_equal(arrays["action"], actions)
    # Each row holds the observation the action was taken in.
    np.testing.assert_array_equal(arrays["observation"], np.array(expected_obs[:200]))
    # next_observation is s': the final observation on an episode's last row, not the reset one.
    np.testing.assert_array_equal(arrays["next_observation"], np.array(final_obs))
    last = arrays["terminated"] | arrays["truncated"]
    np.testing.assert_array_equal(
        arrays["next_observation"][:-1][~last[:-1]], arrays["observation"][1:][~last[:-1]]
    )
    np.testing.assert_array_equal(arrays["raw_reward"], 1.0)
    np.testing.assert_array_equal(arrays["reward"], 0.5)
    np.testing.assert_array_equal(arrays["info.raw_reward"], 1.0)
    assert all(v is None for v in arrays["info.absent"])
    episodes = _episodes(arrays)
    assert len(episodes) >= 5
    for rows in episodes.values():
        np.testing.assert_array_equal(arrays["step"][rows], np.arange(len(rows)))
        ends = arrays["terminated"][rows] | arrays["truncated"][rows]
        assert not ends[:-1].any()
    meta = trajectory_metadata(tmp_path)["metadata"]
    assert meta["env_id"] == "openenv/CartPole-v1"
    assert meta["server_url"] == cartpole_url
    assert meta["seed"] == 7
    assert meta["package_version"] == openenv_gym.__version__
    on_disk = json.loads((tmp_path / "metadata.json").read_text())
    assert on_disk["steps"] == 200
    assert on_disk["chunks"] == 4
    assert on_disk["episodes_ended"] == int(last.sum())
    observation_space, action_space = trajectory_spaces(tmp_path)
    assert observation_space == env.observation_space
    assert action_space == gym.spaces.Discrete(2)
    assert [p.name for p in tmp_path.glob(".*")] == [".lock"]
    assert not list((tmp_path / "data").glob(".*"))


def test_images_load_with_datasets_with_shape_and_dtype(tmp_path: Path) -> None:
    ale_py = pytest.importorskip("ale_py")
    datasets = pytest.importorskip("datasets")
    gym.register_envs(ale_py)
    env = RecordTrajectories(
        gym.wrappers.TimeLimit(gym.make("ALE/Pong-v5"), 25),
        tmp_path,
        chunk_size=20,
        info_keys={"lives": "int64", "frame_number": "int64"},
    )
    env.reset(seed=0)
    frames = []
    for _ in range(40):
        frames.append(env.unwrapped.ale.getScreenRGB())  # type: ignore[attr-defined]
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    env.close()

    arrays = trajectory_arrays(tmp_path)
    assert arrays["observation"].shape == (40, 210, 160, 3)
    assert arrays["observation"].dtype == np.uint8
    assert arrays["observation"][0].tobytes() == frames[0].tobytes()
    files = [str(f) for f in trajectory_files(tmp_path)]
    for dataset in (
        load_trajectories(tmp_path),
        datasets.Dataset.from_parquet(files),
        datasets.load_dataset("parquet", data_files=files, split="train"),
    ):
        feature = dataset.features["observation"]
        assert isinstance(feature, datasets.Array3D)
        assert (tuple(feature.shape), feature.dtype) == ((210, 160, 3), "uint8")
        assert dataset.features["info.frame_number"].dtype == "int64"
        images = np.asarray(dataset.with_format("numpy")[:]["observation"], dtype=np.uint8)
        np.testing.assert_array_equal(images, arrays["observation"])
        assert len(dataset) == 40


def test_dict_observations_get_one_column_per_entry(cartpole_url: str, tmp_path: Path) -> None:
    env = RecordTrajectories(SplitCartPole(OpenEnvEnv(cartpole_url)), tmp_path)
    env.reset(seed=0)
    for _ in range(5):
        env.step(1)
    env.close()
    arrays = trajectory_arrays(tmp_path)
    assert arrays["observation.cart"].shape == (5, 2)
    assert arrays["observation.pole"].dtype == np.float32
    assert arrays["observation.side"].dtype == np.int64
    datasets = pytest.importorskip("datasets")
    features = load_trajectories(tmp_path).features
    assert features["observation.cart"] == datasets.List(datasets.Value("float32"), length=2)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_vector_env_records_every_transition_once(
    cartpole_url: str, tmp_path: Path, mode: AutoresetMode
) -> None:
    def make() -> gym.Env[Any, Any]:
        return gym.wrappers.TimeLimit(OpenEnvEnv(cartpole_url), 15)

    venv = VectorRecordTrajectories(
        SyncVectorEnv([make, make, make], autoreset_mode=mode), tmp_path, chunk_size=40
    )
    venv.reset(seed=[1, 2, 3])
    transitions = 0
    autoreset = np.zeros(3, dtype=bool)
    for _ in range(50):
        _, _, terminated, truncated, _ = venv.step(np.array([0, 1, 1]))
        transitions += int((~autoreset).sum()) if mode == AutoresetMode.NEXT_STEP else 3
        if mode == AutoresetMode.NEXT_STEP:
            autoreset = terminated | truncated
    venv.close()
    arrays = trajectory_arrays(tmp_path)
    assert len(arrays["step"]) == transitions
    episodes = _episodes(arrays)
    for rows in episodes.values():
        assert len(set(arrays["env_index"][rows])) == 1
        np.testing.assert_array_equal(arrays["step"][rows], np.arange(len(rows)))
        assert len(rows) <= 15
        # s' of a row is s of the next row; the last s' is the final observation, never the
        # reset one (CartPole resets within +-0.05; 15 steps of one push leave that range).
        np.testing.assert_array_equal(
            arrays["next_observation"][rows[:-1]], arrays["observation"][rows[1:]]
        )
        if arrays["terminated"][rows[-1]] or arrays["truncated"][rows[-1]]:
            assert np.abs(arrays["next_observation"][rows[-1]]).max() > 0.05
    finished = [
        r for r in episodes.values() if arrays["terminated"][r[-1]] or arrays["truncated"][r[-1]]
    ]
    assert len(finished) >= 6
    assert trajectory_metadata(tmp_path)["metadata"]["seed"] == [1, 2, 3]


@pytest.mark.slow
def test_chunks_split_by_bytes_and_memory_stays_bounded(cartpole_url: str, tmp_path: Path) -> None:
    row_bytes = 2 * 4 * 4 + 8 + 7 * 8  # observation, next observation, action, scalars

    def run(steps: int, out: Path) -> tuple[int, int]:
        env = RecordTrajectories(
            OpenEnvEnv(cartpole_url), out, chunk_size=10_000, max_chunk_bytes=100 * row_bytes
        )
        peak = 0
        env.reset(seed=0)
        for _ in range(steps):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            peak = max(peak, env.writer.buffer_bytes)
            assert env.writer.buffered_steps <= 100
            if terminated or truncated:
                env.reset()
        env.close()
        return peak, len(trajectory_files(out))

    short_peak, short_chunks = run(500, tmp_path / "short")
    long_peak, long_chunks = run(3000, tmp_path / "long")
    assert short_peak == long_peak < 100 * row_bytes  # does not grow with the run length
    assert (short_chunks, long_chunks) == (5, 30)
    assert len(trajectory_arrays(tmp_path / "long")["step"]) == 3000


CHILD = textwrap.dedent(
    """
    import sys
    from openenv_gym import OpenEnvEnv
    from openenv_gym.wrappers import RecordTrajectories

    env = RecordTrajectories(OpenEnvEnv(sys.argv[1]), sys.argv[2], chunk_size=50)
    env.reset(seed=0)
    steps = 0
    while True:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
        print(steps, flush=True)
        if terminated or truncated:
            env.reset()
    """
)


@pytest.mark.slow
def test_kill_9_loses_at_most_the_open_chunk(cartpole_url: str, tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    out = tmp_path / "run"
    child = subprocess.Popen(
        [sys.executable, str(script), cartpole_url, str(out)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    last = 0
    try:
        assert child.stdout is not None
        for line in child.stdout:
            last = int(line)
            if last >= 437:  # mid-chunk: 8 finished chunks, 37 steps open
                break
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(30)
    assert child.returncode == -signal.SIGKILL
    files = trajectory_files(out)
    assert len(files) >= last // 50
    arrays = trajectory_arrays(out)  # every finished chunk reads back whole
    rows = len(arrays["step"])
    assert rows == 50 * len(files)
    assert rows >= last - 50
    np.testing.assert_array_equal(np.diff(arrays["episode_id"]) >= 0, True)
    assert not [p for p in out.iterdir() if p.suffix == ".parquet" and p not in files]


# --------------------------------------------------------------------------- errors


def test_bad_recorder_settings_are_typed_errors(tmp_path: Path) -> None:
    env = gym.make("CartPole-v1")
    with pytest.raises(WrapperConfigError, match="chunk_size"):
        RecordTrajectories(env, tmp_path / "a", chunk_size=0)
    with pytest.raises(WrapperConfigError, match="max_chunk_bytes"):
        RecordTrajectories(env, tmp_path / "a", max_chunk_bytes=-1)
    with pytest.raises(WrapperConfigError, match="expected one of"):
        RecordTrajectories(env, tmp_path / "a", info_keys={"x": "complex"})
    with pytest.raises(WrapperConfigError, match="list of names"):
        RecordTrajectories(env, tmp_path / "a", info_keys="lives")
    text_env = gym.wrappers.TransformObservation(
        gym.make("CartPole-v1"), lambda o: "x", spaces.Text(5)
    )
    with pytest.raises(TrajectoryFormatError, match="cannot record observation"):
        RecordTrajectories(text_env, tmp_path / "b")
    done = RecordTrajectories(gym.make("CartPole-v1"), tmp_path / "c")
    done.reset(seed=0)
    done.step(0)
    done.close()
    with pytest.raises(TrajectoryFormatError, match="already holds a recording"):
        RecordTrajectories(gym.make("CartPole-v1"), tmp_path / "c")
    with pytest.raises(gym.error.ResetNeeded):
        RecordTrajectories(gym.make("CartPole-v1"), tmp_path / "d").step(0)


class TagInfo(gym.Wrapper[Any, Any, Any, Any]):
    """Adds a string ``info["tag"]`` on every step."""

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, {**info, "tag": "left"}


def test_info_values_of_the_wrong_type_are_a_typed_error(tmp_path: Path) -> None:
    env = RecordTrajectories(
        TagInfo(gym.make("CartPole-v1")),
        tmp_path,
        info_keys=["tag"],
        chunk_size=2,
    )
    env.reset(seed=0)
    env.step(0)
    with pytest.raises(TrajectoryFormatError, match=r"info field 'tag' is recorded as float64"):
        env.step(0)


def test_reading_what_is_not_a_recording_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(TrajectoryFormatError, match="not a directory"):
        trajectory_arrays(tmp_path / "nowhere")
    with pytest.raises(TrajectoryFormatError, match="no finished chunk"):
        trajectory_arrays(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train-000000.parquet").write_bytes(b"garbage")
    with pytest.raises(TrajectoryFormatError, match="not a readable Parquet file"):
        trajectory_metadata(tmp_path)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1]}), tmp_path / "data" / "train-000000.parquet")
    with pytest.raises(TrajectoryFormatError, match="not written by openenv-gym"):
        trajectory_arrays(tmp_path)


# --------------------------------------------------------------------------- hub


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    env = RecordTrajectories(gym.make("CartPole-v1"), tmp_path / "rec")
    env.reset(seed=0)
    env.step(0)
    env.close()
    return tmp_path / "rec"


def test_push_to_hub_offline_fails_fast(recording: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("huggingface_hub")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubPushError, match="HF_HUB_OFFLINE"):
        push_to_hub(recording, "someone/trajectories")


def test_push_to_hub_to_an_unreachable_hub_fails_fast(
    recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("huggingface_hub")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    with pytest.raises(HubPushError, match="not reachable"):
        push_to_hub(recording, "someone/trajectories", endpoint=f"http://127.0.0.1:{closed_port}")


def test_push_to_hub_to_a_silent_hub_times_out(
    recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("huggingface_hub")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True).start()
    port = listener.getsockname()[1]
    try:
        env = RecordTrajectories(gym.make("CartPole-v1"), recording.parent / "rec2")
        env.reset(seed=0)
        env.step(0)
        with pytest.raises(HubPushError, match="ReadTimeout"):
            env.push_to_hub(
                "someone/trajectories", endpoint=f"http://127.0.0.1:{port}", timeout=0.5
            )
        env.close()
    finally:
        listener.close()
        for conn in accepted:
            conn.close()
