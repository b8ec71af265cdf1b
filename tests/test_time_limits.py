"""``max_episode_steps`` on the served ids behaves as on the raw Gymnasium id (issue 28, item 1).

The embedded server runs the env without its own ``TimeLimit``; the one ``gymnasium.make`` (or
``make_vec``, or ``openenv-gym record --max-episode-steps``) adds on this side is the only limit,
so a limit above the id's default (CartPole-v1: 500) holds, and the default still applies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the openenv/... ids)

LIMIT = 1000


def balance(observation: Any, action_space: Any = None) -> int:
    """A controller that keeps CartPole's pole up for longer than 500 steps (seeds 1 and 2
    reach 1000 on the raw id)."""
    return int(observation[2] + 0.5 * observation[3] > 0)


def _episode(env: gym.Env, seed: int) -> tuple[int, bool, bool]:
    observation, _ = env.reset(seed=seed)
    steps = 0
    while True:
        observation, _, terminated, truncated, _ = env.step(balance(observation))
        steps += 1
        if terminated or truncated:
            return steps, bool(terminated), bool(truncated)


def _raw_episodes(seeds: list[int], **kwargs: Any) -> list[tuple[int, bool, bool]]:
    env = gym.make("CartPole-v1", **kwargs)
    try:
        return [_episode(env, seed) for seed in seeds]
    finally:
        env.close()


def test_a_limit_above_the_served_one_runs_episodes_as_the_raw_id_does() -> None:
    seeds = [0, 1, 2]
    raw = _raw_episodes(seeds, max_episode_steps=LIMIT)
    assert max(steps for steps, _, _ in raw) == LIMIT  # the controller outlives 500 steps
    env = gym.make("openenv/CartPole-v1", max_episode_steps=LIMIT)
    try:
        assert env.spec is not None
        assert env.spec.max_episode_steps == LIMIT
        remote = [_episode(env, seed) for seed in seeds]
    finally:
        env.close()
    assert remote == raw


def test_the_default_limit_still_truncates_at_the_ids_own_limit() -> None:
    env = gym.make("openenv/CartPole-v1")
    try:
        assert _episode(env, 1) == (500, False, True)
    finally:
        env.close()


def test_a_limit_below_the_served_one_truncates_there() -> None:
    env = gym.make("openenv/CartPole-v1", max_episode_steps=20)
    try:
        assert _episode(env, 1) == (20, False, True)
    finally:
        env.close()


def _vector_lengths(envs: Any, episodes: int) -> list[int]:
    observation, _ = envs.reset(seed=1)
    lengths = np.zeros(envs.num_envs, dtype=np.int64)
    ended: list[int] = []
    while len(ended) < episodes:
        actions = np.array([balance(row) for row in observation])
        observation, _, terminated, truncated, _ = envs.step(actions)
        lengths += 1
        for i in np.flatnonzero(terminated | truncated):
            ended.append(int(lengths[i]))
            lengths[i] = 0
    return ended


@pytest.mark.parametrize(("kwargs", "expected"), [({"max_episode_steps": LIMIT}, LIMIT), ({}, 500)])
def test_make_vec_keeps_the_users_limit_and_the_default(
    kwargs: dict[str, Any], expected: int
) -> None:
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=2, **kwargs)
    try:
        # Seeds 1 and 2 outlive any of these limits on the raw id.
        assert _vector_lengths(envs, 2) == [expected, expected]
    finally:
        envs.close()


def test_record_max_episode_steps_above_the_served_limit(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    from openenv_gym.cli import main
    from openenv_gym.trajectories import trajectory_arrays

    out = tmp_path / "run"
    code = main(
        [
            "record",
            "--episodes",
            "1",
            "--seed",
            "1",
            "--out",
            str(out),
            "--policy",
            f"{__name__}:balance",
            "--max-episode-steps",
            str(LIMIT),
            "--no-progress",
        ]
    )
    assert code == 0
    arrays = trajectory_arrays(out)
    assert len(arrays["step"]) == LIMIT
    assert bool(arrays["truncated"][-1])
    assert not arrays["terminated"].any()
