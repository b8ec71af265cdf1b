"""The experiment config: forms, the wrapper registry, vector building, errors with paths."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import SyncVectorEnv

from openenv_gym import OpenEnvVectorEnv, make_from_config
from openenv_gym.config import load_experiment
from openenv_gym.errors import WrapperConfigError
from openenv_gym.trajectories import trajectory_arrays
from openenv_gym.wrappers import (
    ActionNoise,
    ShapeReward,
    TerminateWhen,
    VectorShapeReward,
)

CONFIG: dict[str, Any] = {
    "env": {"id": "Pendulum-v1"},
    "seed": 3,
    "wrappers": [
        {"type": "TimeLimit", "max_episode_steps": 20},
        {"type": "terminate_when", "conditions": [{"no_reward_for": {"steps": 50}}]},
        {"type": "shape_reward", "terms": [{"scale": 0.5}]},
        {"type": "action_noise", "kind": "ornstein_uhlenbeck", "sigma": 0.3},
        {"type": "ClipAction"},
    ],
}


def _rollout(env: gym.Env[Any, Any]) -> list[float]:
    env.reset(seed=3)
    return [float(env.step(np.zeros(1, dtype=np.float32))[1]) for _ in range(10)]


def test_dict_yaml_and_json_build_the_same_pipeline(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(CONFIG))
    (tmp_path / "c.json").write_text(json.dumps(CONFIG))
    results = []
    for config in (CONFIG, tmp_path / "c.yaml", str(tmp_path / "c.json")):
        env = make_from_config(config)
        assert isinstance(env, gym.Env)
        chain = []
        inner: Any = env
        while isinstance(inner, gym.Wrapper):
            chain.append(type(inner).__name__)
            inner = inner.env
        assert chain[:5] == [
            "ClipAction",
            "ActionNoise",
            "ShapeReward",
            "TerminateWhen",
            "TimeLimit",
        ]
        results.append(_rollout(env))
    assert results[0] == results[1] == results[2]  # the noise is seeded by reset(seed=)
    assert isinstance(env.env, ActionNoise)
    assert isinstance(env.env.env, ShapeReward)
    assert isinstance(env.env.env.env, TerminateWhen)


def test_a_vector_config_uses_the_native_vector_env_and_vector_wrappers(
    cartpole_url: str, tmp_path: Path
) -> None:
    venv = make_from_config(
        {
            "env": {"id": "openenv/Remote-v0", "base_url": cartpole_url, "max_episode_steps": 30},
            "num_envs": 3,
            "autoreset_mode": "same_step",
            "wrappers": [
                {
                    "type": "terminate_when",
                    "conditions": [{"field_bound": {"key": 0, "high": 0.1}}],
                },
                {"type": "shape_reward", "terms": [{"offset": 1.0}]},
                {"type": "normalize", "reward": False},
                {"type": "RecordEpisodeStatistics"},
                {"type": "record", "directory": str(tmp_path / "rec")},
            ],
        }
    )
    try:
        inner: Any = venv
        kinds = []
        while not isinstance(inner, OpenEnvVectorEnv):
            kinds.append(type(inner).__name__)
            inner = inner.env
        assert kinds == [
            "VectorRecordTrajectories",
            "RecordEpisodeStatistics",
            "VectorNormalize",
            "VectorShapeReward",
            "VectorTerminateWhen",
        ]
        venv.reset(seed=0)
        for _ in range(40):
            venv.step(np.ones(3, dtype=np.int64))
    finally:
        venv.close()
    arrays = trajectory_arrays(tmp_path / "rec")
    assert len(arrays["step"]) == 120
    np.testing.assert_array_equal(arrays["reward"], 2.0)  # shaped: 1 + 1
    assert arrays["truncated"].sum() >= 6  # the field bound cut episodes
    assert (tmp_path / "rec" / "experiment.yaml").exists()


def test_wrappers_without_a_vector_form_wrap_each_sub_env(cartpole_url: str) -> None:
    venv = make_from_config(
        {
            "env": {"id": "openenv/Remote-v0", "base_url": cartpole_url},
            "num_envs": 2,
            "wrappers": [
                {"type": "TimeLimit", "max_episode_steps": 5},
                {"type": "terminate_when", "conditions": [{"no_reward_for": {"steps": 3}}]},
                {"type": "shape_reward", "terms": [{"scale": 2.0}]},
            ],
        }
    )
    try:
        assert isinstance(venv, VectorShapeReward)
        assert isinstance(venv.env, SyncVectorEnv)
        venv.reset(seed=0)
        truncated = [venv.step(np.zeros(2, dtype=np.int64))[3] for _ in range(5)]
        assert truncated[4].all()  # TimeLimit(5) inside each sub-env
    finally:
        venv.close()
    with pytest.raises(WrapperConfigError, match="set vectorization: sync") as caught:
        make_from_config(
            {
                "env": {"id": "openenv/Remote-v0", "base_url": cartpole_url},
                "num_envs": 2,
                "vectorization": "native",
                "wrappers": [
                    {"type": "normalize"},
                    {"type": "FrameStackObservation", "stack_size": 4},
                ],
            }
        )
    assert caught.value.path == "wrappers[1]"


BAD: list[tuple[dict[str, Any], str, str]] = [
    ({"env": {}}, "env", "give an env 'id'"),
    ({"env": {"id": "CartPole-v1"}, "num_envs": 0}, "num_envs", "greater than 0"),
    ({"env": {"id": "CartPole-v1"}, "typo": 1}, "typo", "unknown key"),
    ({"env": {"id": "CartPole-v1"}, "wrappers": [{"kind": "x"}]}, "wrappers[0]", "a 'type'"),
    ({"env": {"id": "CartPole-v1"}, "wrappers": [{"type": "Nope"}]}, "wrappers[0].type", "unknown"),
    (
        {
            "env": {"id": "Pendulum-v1"},
            "wrappers": [
                {"type": "TimeLimit", "max_episode_steps": 5},
                {"type": "ClipAction"},
                {"type": "action_noise", "kind": "gaussian", "sigma": -0.5},
            ],
        },
        "wrappers[2].sigma",
        ">= 0",
    ),
    (
        {"env": {"id": "Pendulum-v1"}, "wrappers": [{"type": "action_noise", "kind": "epsilon"}]},
        "wrappers[0]",
        "needs 'epsilon'",
    ),
    (
        {
            "env": {"id": "CartPole-v1"},
            "wrappers": [{"type": "action_noise", "kind": "gaussian", "sigma": 1}],
        },
        "wrappers[0]",
        "needs a Box action space",
    ),
    (
        {
            "env": {"id": "CartPole-v1"},
            "wrappers": [{"type": "TimeLimit", "max_episode_steps": -1}],
        },
        "wrappers[0].max_episode_steps",
        "greater than 0",
    ),
    (
        {
            "env": {"id": "CartPole-v1"},
            "wrappers": [{"type": "shape_reward", "terms": [{"scale": "x"}]}],
        },
        "wrappers[0].terms[0].scale",
        "valid number",
    ),
    (
        {
            "env": {"id": "CartPole-v1"},
            "wrappers": [
                {"type": "terminate_when", "conditions": [{"field_bound": {"key": 9, "high": 1}}]}
            ],
        },
        "wrappers[0].conditions[0]",
        "out of range",
    ),
    (
        {"env": {"id": "CartPole-v1"}, "wrappers": [{"type": "record"}]},
        "wrappers[0].directory",
        "required",
    ),
    (
        {
            "env": {"id": "CartPole-v1"},
            "num_envs": 2,
            "wrappers": [
                {"type": "record", "directory": "x"},
                {"type": "TimeLimit", "max_episode_steps": 5},
            ],
        },
        "wrappers[0]",
        "record must come after",
    ),
]


@pytest.mark.parametrize(("config", "path", "message"), BAD)
def test_bad_configs_name_the_entry(config: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(WrapperConfigError, match=message) as caught:
        make_from_config(config)
    assert caught.value.path == path
    assert path in str(caught.value)


def test_the_resolved_config_fills_defaults_and_round_trips() -> None:
    cfg = load_experiment(CONFIG)
    resolved = cfg.resolved()
    assert resolved["num_envs"] == 1
    assert resolved["wrappers"][3]["theta"] == 0.15
    assert load_experiment(resolved).resolved() == resolved
    assert isinstance(make_from_config(resolved), gym.Env)


def test_the_example_config_builds_against_a_server(cartpole_url: str, tmp_path: Path) -> None:
    example = Path(__file__).parents[1] / "examples" / "cartpole_experiment.yaml"
    cfg = load_experiment(example)
    assert [w.type for w in cfg.wrappers] == [
        "terminate_when",
        "RecordEpisodeStatistics",
        "action_noise",
        "record",
    ]
    data = cfg.model_dump(mode="json")
    data["env"]["base_url"] = cartpole_url
    data["env"]["id"] = "openenv/Remote-v0"
    env = make_from_config(data, record_to=tmp_path / "rec")
    try:
        env.reset(seed=0)
        _, _, _, _, info = env.step(1)
        assert info["noise_free_action"] == 1
    finally:
        env.close()
    assert (tmp_path / "rec" / "experiment.yaml").exists()


def test_atari_preprocessing_and_frame_stack_wrap_each_sub_env(tmp_path: Path) -> None:
    pytest.importorskip("ale_py")
    venv = make_from_config(
        {
            "env": {"id": "ale_py:ALE/Pong-v5", "kwargs": {"frameskip": 1}},
            "num_envs": 2,
            "wrappers": [
                {"type": "AtariPreprocessing", "frame_skip": 4, "noop_max": 0},
                {"type": "FrameStackObservation", "stack_size": 4},
                {"type": "record", "directory": str(tmp_path / "rec")},
            ],
        }
    )
    try:
        assert isinstance(venv.unwrapped, SyncVectorEnv)
        venv.reset(seed=0)
        for _ in range(6):
            venv.step(venv.action_space.sample())
    finally:
        venv.close()
    arrays = trajectory_arrays(tmp_path / "rec")
    assert arrays["observation"].shape == (12, 4, 84, 84)
    assert arrays["next_observation"].dtype == np.uint8
