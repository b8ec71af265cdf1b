"""A recording exported to Minari opens with minari.load_dataset, step for step the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from openenv_gym import OpenEnvEnv
from openenv_gym.errors import TrajectoryFormatError
from openenv_gym.trajectories import iter_episodes, to_minari, trajectory_arrays
from openenv_gym.wrappers import RecordTrajectories, VectorRecordTrajectories
from tests.wrappers.test_normalization import SplitCartPole

minari = pytest.importorskip("minari")


@pytest.fixture(autouse=True)
def minari_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    store = tmp_path / "minari-store"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(store))
    return store


def _assert_same_values(actual: Any, expected: Any) -> None:
    if isinstance(expected, dict):
        assert list(actual) == list(expected)
        for key in expected:
            _assert_same_values(actual[key], expected[key])
        return
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype
    np.testing.assert_array_equal(actual, expected)


def _record_steps(env: gym.Env[Any, Any], out: Path, steps: int) -> list[tuple[Any, ...]]:
    """Play ``steps`` random steps through a recorder; return what the env produced."""
    recorder = RecordTrajectories(env, out, chunk_size=37)
    recorder.action_space.seed(1)
    seen: list[tuple[Any, ...]] = []
    observation, _ = recorder.reset(seed=11)
    for _ in range(steps):
        action = recorder.action_space.sample()
        next_observation, reward, terminated, truncated, _ = recorder.step(action)
        seen.append((observation, action, reward, next_observation, terminated, truncated))
        observation = next_observation
        if terminated or truncated:
            observation, _ = recorder.reset()
    recorder.close()
    return seen


def test_remote_recording_opens_in_minari_step_for_step(cartpole_url: str, tmp_path: Path) -> None:
    env = gym.wrappers.TimeLimit(OpenEnvEnv(cartpole_url), 12)
    seen = _record_steps(env, tmp_path / "rec", 100)
    dataset = to_minari(tmp_path / "rec", "openenv/cartpole-test-v0")
    del dataset
    loaded = minari.load_dataset("openenv/cartpole-test-v0")
    assert loaded.observation_space == env.observation_space
    assert loaded.action_space == env.action_space
    assert loaded.total_steps == 100
    episodes = list(loaded.iterate_episodes())
    ours = list(iter_episodes(tmp_path / "rec"))
    assert len(episodes) == len(ours) >= 8
    row = 0
    for theirs, mine in zip(episodes, ours, strict=True):
        length = len(theirs.actions)
        assert len(theirs.observations) == length + 1
        expected = seen[row : row + length]
        _assert_same_values(theirs.observations[:-1], np.array([s[0] for s in expected]))
        _assert_same_values(theirs.observations[1:], np.array([s[3] for s in expected]))
        np.testing.assert_array_equal(theirs.actions, [s[1] for s in expected])
        np.testing.assert_array_equal(theirs.rewards, [s[2] for s in expected])
        np.testing.assert_array_equal(theirs.terminations, [s[4] for s in expected])
        np.testing.assert_array_equal(theirs.truncations, [s[5] for s in expected])
        _assert_same_values(theirs.observations, mine.observations)
        row += length
    assert row == 100
    truncated = [e for e in episodes if e.truncations[-1]]
    assert truncated, "the time limit cut some episodes"
    assert not episodes[-1].terminations[-1]  # cut off by the end of the recording
    assert not episodes[-1].truncations[-1]


def test_dict_observations_and_dropping_unfinished_episodes(
    cartpole_url: str, tmp_path: Path
) -> None:
    env = SplitCartPole(gym.wrappers.TimeLimit(OpenEnvEnv(cartpole_url), 9))
    seen = _record_steps(env, tmp_path / "rec", 40)
    to_minari(tmp_path / "rec", "split-v0", include_unfinished=False)
    loaded = minari.load_dataset("split-v0")
    assert loaded.observation_space == env.observation_space
    finished = [e for e in iter_episodes(tmp_path / "rec") if e.finished]
    assert loaded.total_episodes == len(finished) < len(list(iter_episodes(tmp_path / "rec")))
    first = next(loaded.iterate_episodes())
    assert list(first.observations) == ["cart", "pole", "side"]
    length = len(first.actions)
    np.testing.assert_array_equal(
        first.observations["cart"][:-1], [s[0]["cart"] for s in seen[:length]]
    )
    np.testing.assert_array_equal(
        first.observations["side"][1:], [s[3]["side"] for s in seen[:length]]
    )


def test_vector_recording_exports_each_sub_env_episode(cartpole_url: str, tmp_path: Path) -> None:
    def make() -> gym.Env[Any, Any]:
        return gym.wrappers.TimeLimit(OpenEnvEnv(cartpole_url), 7)

    venv = VectorRecordTrajectories(
        SyncVectorEnv([make, make], autoreset_mode=AutoresetMode.SAME_STEP), tmp_path / "rec"
    )
    venv.reset(seed=[3, 4])
    for _ in range(20):
        venv.step(np.array([0, 1]))
    venv.close()
    to_minari(tmp_path / "rec", "vector-v0")
    loaded = minari.load_dataset("vector-v0")
    arrays = trajectory_arrays(tmp_path / "rec")
    assert loaded.total_steps == len(arrays["step"]) == 40
    for episode in loaded.iterate_episodes():
        assert len(episode.actions) <= 7
        assert len(set(episode.actions.tolist())) == 1  # one sub-env played it


def test_export_errors_are_typed(cartpole_url: str, tmp_path: Path) -> None:
    _record_steps(OpenEnvEnv(cartpole_url), tmp_path / "rec", 5)
    with pytest.raises(TrajectoryFormatError, match="not a Minari dataset id"):
        to_minari(tmp_path / "rec", "no version here!")
    to_minari(tmp_path / "rec", "taken-v0")
    with pytest.raises(TrajectoryFormatError, match="already exists"):
        to_minari(tmp_path / "rec", "taken-v0")
    with pytest.raises(TrajectoryFormatError, match="no episode to export"):
        to_minari(tmp_path / "rec", "empty-v0", include_unfinished=False)
