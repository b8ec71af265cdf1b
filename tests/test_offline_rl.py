"""The offline-RL path end to end: a YAML experiment config records a remote env, the data
loads every documented way (datasets, our reader, Minari), the transitions replay exactly on
the env, the saved config reproduces the recording, and behavioural cloning learns the policy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from openenv_gym import OpenEnvEnv, __version__, load_experiment
from openenv_gym.cli import main
from openenv_gym.trajectories import iter_episodes, to_minari, trajectory_arrays, trajectory_spaces

datasets = pytest.importorskip("datasets")
yaml = pytest.importorskip("yaml")

LIMIT = 120
COLUMNS = ("observation", "action", "reward", "next_observation", "terminated", "truncated")


def expert(observation: Any, action_space: Any) -> int:
    """A CartPole controller: push towards where the pole is falling."""
    return int(3.0 * observation[2] + observation[3] > 0.0)


def _record(config: Path, out: Path) -> None:
    argv = ["record", "--config", str(config), "--episodes", "5", "--out", str(out)]
    assert main([*argv, "--policy", f"{__name__}:expert", "--no-progress"]) == 0


def _transitions(rows: Any) -> dict[str, np.ndarray]:
    return {
        key: np.asarray(np.stack(rows[key]) if key.endswith("observation") else rows[key])
        for key in COLUMNS
    }


def _replay(url: str, arrays: dict[str, np.ndarray], seed: int) -> dict[str, list[Any]]:
    """Play the recorded actions again on the env, episode after episode."""
    env = gym.wrappers.TimeLimit(OpenEnvEnv(url), LIMIT)
    out: dict[str, list[Any]] = {key: [] for key in COLUMNS}
    try:
        observation, _ = env.reset(seed=seed)
        for action in arrays["action"]:
            next_observation, reward, terminated, truncated, _ = env.step(int(action))
            for key, value in zip(
                COLUMNS,
                (observation, action, reward, next_observation, terminated, truncated),
                strict=True,
            ):
                out[key].append(value)
            observation = next_observation
            if terminated or truncated:
                observation, _ = env.reset()
    finally:
        env.close()
    return out


def _clone(observations: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Logistic regression observation -> action by gradient descent (behavioural cloning)."""
    x = np.c_[observations, np.ones(len(observations))].astype(np.float64)
    scale = np.abs(x).max(axis=0)
    x /= scale
    w = np.zeros(x.shape[1])
    for _ in range(3000):
        p = 1.0 / (1.0 + np.exp(-x @ w))
        w -= 2.0 * x.T @ (p - actions) / len(x)
    return w / scale


def _evaluate(url: str, w: np.ndarray, episodes: int) -> float:
    env = gym.wrappers.TimeLimit(OpenEnvEnv(url), LIMIT)
    total = 0.0
    try:
        for episode in range(episodes):
            observation, _ = env.reset(seed=1000 + episode)
            done = False
            while not done:
                action = int(np.r_[observation, 1.0] @ w > 0.0)
                observation, reward, terminated, truncated, _ = env.step(action)
                total += float(reward)
                done = terminated or truncated
    finally:
        env.close()
    return total / episodes


@pytest.mark.slow
def test_record_from_yaml_load_every_way_replay_reproduce_and_clone(
    cartpole_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    minari = pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    config = tmp_path / "experiment.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "env": {"id": "openenv/Remote-v0", "base_url": cartpole_url},
                "seed": 7,
                "wrappers": [
                    {"type": "TimeLimit", "max_episode_steps": LIMIT},
                    {"type": "RecordEpisodeStatistics"},
                    {"type": "record", "chunk_size": 128},
                ],
            }
        )
    )
    out = tmp_path / "run"
    _record(config, out)

    # 1. Our reader: numpy arrays, spaces restored.
    arrays = trajectory_arrays(out)
    observation_space, action_space = trajectory_spaces(out)
    assert observation_space.shape == (4,)
    assert action_space == gym.spaces.Discrete(2)
    ends = arrays["terminated"] | arrays["truncated"]
    assert ends.sum() == 5
    assert ends[-1]
    # 2. datasets, both ways; 3. Minari: all hold the same transitions.
    ours = {key: arrays[key] for key in COLUMNS}
    for dataset in (
        datasets.load_dataset("parquet", data_dir=str(out), split="train"),
        datasets.load_dataset(str(out), split="train"),
    ):
        theirs = _transitions(dataset.with_format("numpy")[:])
        for key in COLUMNS:
            np.testing.assert_array_equal(theirs[key], ours[key], err_msg=key)
    to_minari(out, "openenv/cartpole-expert-v0")
    loaded = minari.load_dataset("openenv/cartpole-expert-v0")
    assert loaded.observation_space == observation_space
    assert loaded.action_space == action_space
    row = 0
    for episode, mine in zip(loaded.iterate_episodes(), iter_episodes(out), strict=True):
        rows = slice(row, row + len(episode.actions))
        np.testing.assert_array_equal(episode.observations[:-1], ours["observation"][rows])
        np.testing.assert_array_equal(episode.observations[1:], ours["next_observation"][rows])
        np.testing.assert_array_equal(episode.actions, ours["action"][rows])
        np.testing.assert_array_equal(episode.rewards, ours["reward"][rows])
        np.testing.assert_array_equal(episode.terminations, ours["terminated"][rows])
        np.testing.assert_array_equal(episode.truncations, ours["truncated"][rows])
        np.testing.assert_array_equal(episode.observations, mine.observations)
        row += len(episode.actions)
    assert row == len(ours["action"])

    # (s, a, r, s', terminated, truncated) is exactly what the env does with those actions.
    replayed = _replay(cartpole_url, arrays, seed=7)
    for key in COLUMNS:
        np.testing.assert_array_equal(np.asarray(replayed[key]), ours[key], err_msg=key)
    assert ours["truncated"].any()  # the time limit cut the expert's episodes

    # The resolved config beside the data reproduces the recording.
    saved = yaml.safe_load((out / "experiment.yaml").read_text())
    assert saved["openenv_gym_version"] == __version__
    assert saved["wrappers"][0] == {"type": "TimeLimit", "max_episode_steps": LIMIT}
    assert saved["wrappers"][-1]["directory"] == str(out)
    assert "experiment.yaml" in (out / "README.md").read_text()
    assert load_experiment(out / "experiment.yaml").seed == 7
    again = tmp_path / "again"
    _record(out / "experiment.yaml", again)
    for key, value in trajectory_arrays(again).items():
        np.testing.assert_array_equal(value, arrays[key], err_msg=key)

    # Behavioural cloning from the datasets copy plays like the expert.
    rows = datasets.load_dataset("parquet", data_dir=str(out), split="train")
    table = rows.with_format("numpy")[:]
    weights = _clone(np.stack(table["observation"]), table["action"].astype(np.float64))
    assert _evaluate(cartpole_url, weights, episodes=3) >= 0.9 * LIMIT


@pytest.mark.parametrize("num_envs", [1, 2])
def test_recorded_actions_are_the_executed_ones_and_replay_under_noise(
    cartpole_url: str, tmp_path: Path, num_envs: int
) -> None:
    """Issue 28, item 2: recorded outside epsilon noise (the shipped example's order), the
    ``action`` column holds what the env executed, so every episode replays exactly; the
    policy's choice is the ``policy_action`` column, and the dataset card says so."""
    config = tmp_path / "experiment.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "env": {"id": "openenv/Remote-v0", "base_url": cartpole_url},
                "num_envs": num_envs,
                "seed": 3,
                "wrappers": [
                    {"type": "TimeLimit", "max_episode_steps": LIMIT},
                    {"type": "action_noise", "kind": "epsilon", "epsilon": 0.3},
                    {"type": "record"},
                ],
            }
        )
    )
    out = tmp_path / "run"
    _record(config, out)
    arrays = trajectory_arrays(out)
    policy = np.array([expert(o, None) for o in arrays["observation"]])
    np.testing.assert_array_equal(arrays["policy_action"], policy)
    assert (arrays["action"] != arrays["policy_action"]).any()  # the noise changed some
    card = (out / "README.md").read_text()
    assert "`policy_action[.key]` holds the policy's action" in card
    assert "--config experiment.yaml --episodes 5 --out NEW_DIR" in card
    for index in range(num_envs):
        rows = arrays["env_index"] == index
        mine = {key: value[rows] for key, value in arrays.items()}
        # Each sub-env's first reset seed: 3 + index (the vector env's seed convention).
        replayed = _replay(cartpole_url, mine, seed=3 + index)
        for key in COLUMNS:
            np.testing.assert_array_equal(np.asarray(replayed[key]), mine[key], err_msg=key)
