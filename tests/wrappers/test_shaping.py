"""Reward shaping on real servers: terms, config forms, the potential-based invariant."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from openenv_gym import OpenEnvEnv
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.errors import WrapperConfigError
from openenv_gym.server import ServerThread
from openenv_gym.wrappers import (
    Clip,
    FieldBonus,
    FieldPotential,
    Offset,
    PotentialShaping,
    RewardShaper,
    Scale,
    ShapeReward,
    Transition,
    VectorShapeReward,
)

GAMMA = 0.9


def constant_potential(observation: Any) -> float:
    """A potential used through the config's 'package.module:function' form."""
    return 1.0


@pytest.fixture(scope="module")
def frozenlake_url() -> Iterator[str]:
    """A deterministic FrozenLake 4x4 served over OpenEnv: a small known MDP."""
    server = gymnasium_server("FrozenLake-v1", make_kwargs={"is_slippery": False})
    with ServerThread(server) as thread:
        yield thread.url


def _transition(reward_terminated: bool = False, truncated: bool = False) -> Transition:
    return Transition(np.zeros(4), np.ones(4), reward_terminated, truncated, {})


# --------------------------------------------------------------------------- terms


def test_terms_compose_in_order() -> None:
    shaper = RewardShaper([Scale(10.0), Clip(-1.0, 1.0), Offset(0.5)])
    assert shaper(0.3, _transition()) == pytest.approx(1.5)
    assert shaper(-0.01, _transition()) == pytest.approx(0.4)
    assert RewardShaper([Offset(0.5), Scale(10.0)])(0.3, _transition()) == pytest.approx(8.0)


def test_potential_is_zero_at_terminal_but_not_at_truncation() -> None:
    term = PotentialShaping(FieldPotential(0, weight=2.0), gamma=GAMMA)  # Phi(s) = 2 * s[0]
    # s[0] = 0 before, s'[0] = 1 after.
    assert term(1.0, _transition()) == pytest.approx(1.0 + GAMMA * 2.0)
    assert term(1.0, _transition(reward_terminated=True)) == pytest.approx(1.0)
    assert term(1.0, _transition(truncated=True)) == pytest.approx(1.0 + GAMMA * 2.0)


def test_shape_reward_on_remote_cartpole_keeps_raw_reward_and_handles_the_terminal_step(
    cartpole_url: str,
) -> None:
    env = ShapeReward(OpenEnvEnv(cartpole_url), [PotentialShaping(constant_potential, gamma=GAMMA)])
    try:
        env.reset(seed=3)
        terminated = False
        while not terminated:
            _, reward, terminated, _truncated, info = env.step(0)
            assert info["raw_reward"] == 1.0
            # F = 0.9 * 1 - 1 on ordinary steps, 0 - 1 on the terminal step.
            assert reward == pytest.approx(0.0 if terminated else 0.9)
    finally:
        env.close()


def test_truncated_step_keeps_the_next_potential(cartpole_url: str) -> None:
    env = ShapeReward(
        gym.wrappers.TimeLimit(OpenEnvEnv(cartpole_url), max_episode_steps=3),
        [PotentialShaping(constant_potential, gamma=GAMMA)],
    )
    try:
        env.reset(seed=0)
        rewards, truncated = [], False
        while not truncated:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            assert not terminated
            rewards.append(reward)
        assert rewards == pytest.approx([0.9, 0.9, 0.9])
    finally:
        env.close()


def test_bonus_from_observation_and_info() -> None:
    env = ShapeReward(
        gym.make("CartPole-v1"),
        [FieldBonus("observation", 1, weight=3.0), FieldBonus("info", "missing", default=2.0)],
    )
    env.reset(seed=0)
    obs, reward, *_ = env.step(1)
    assert reward == pytest.approx(1.0 + 3.0 * float(obs[1]) + 2.0)
    strict = ShapeReward(gym.make("CartPole-v1"), [FieldBonus("info", "lives", default=None)])
    strict.reset(seed=0)
    with pytest.raises(KeyError, match="lives"):
        strict.step(0)


def test_step_before_reset_is_a_clear_error() -> None:
    env = ShapeReward(gym.make("CartPole-v1"), [Scale(2.0)])
    with pytest.raises(gym.error.ResetNeeded):
        env.step(0)


# --------------------------------------------------------------------------- invariant


def _value_iteration(
    transitions: dict[int, dict[int, list[tuple[float, int, float, bool]]]],
    shape: Any,
    gamma: float,
) -> np.ndarray:
    """Q* of a known MDP, with each reward passed through ``shape(s, s', r, done)``."""
    n_states, n_actions = len(transitions), len(transitions[0])
    q = np.zeros((n_states, n_actions))
    for _ in range(500):
        v = q.max(axis=1)
        new = np.zeros_like(q)
        for s in range(n_states):
            for a in range(n_actions):
                for p, s_next, r, done in transitions[s][a]:
                    target = shape(s, s_next, r, done)
                    if not done:
                        target += gamma * v[s_next]
                    new[s, a] += p * target
        q = new
    return q


def _greedy_sets(q: np.ndarray) -> list[frozenset[int]]:
    return [frozenset(np.flatnonzero(row >= row.max() - 1e-6)) for row in q]


@pytest.mark.parametrize("slippery", [False, True])
def test_potential_shaping_keeps_the_optimal_policy(slippery: bool) -> None:
    known = gym.make("FrozenLake-v1", is_slippery=slippery).unwrapped
    transitions = known.P  # type: ignore[attr-defined]
    rng = np.random.default_rng(0)
    phi = rng.uniform(-5.0, 5.0, size=len(transitions))
    term = PotentialShaping(lambda s: phi[int(s)], gamma=GAMMA)

    def shaped(s: int, s_next: int, r: float, done: bool) -> float:
        return term(r, Transition(s, s_next, done, False, {}))

    plain = _value_iteration(transitions, lambda s, s2, r, d: r, GAMMA)
    with_f = _value_iteration(transitions, shaped, GAMMA)
    # Q_shaped(s, a) = Q(s, a) - Phi(s) (for states that can still act).
    live = [s for s in range(len(transitions)) if plain[s].max() > 0]
    assert len(live) > 3
    np.testing.assert_allclose(with_f[live], plain[live] - phi[live, None], atol=1e-6)
    assert [_greedy_sets(plain)[s] for s in live] == [_greedy_sets(with_f)[s] for s in live]

    # Control: forgetting Phi(terminal) = 0 changes the optimal policy for this potential.
    def wrong(s: int, s_next: int, r: float, done: bool) -> float:
        return r + GAMMA * phi[s_next] - phi[s]

    broken = _value_iteration(transitions, wrong, GAMMA)
    assert [_greedy_sets(plain)[s] for s in live] != [_greedy_sets(broken)[s] for s in live]


def test_shaped_greedy_policy_solves_the_remote_mdp(frozenlake_url: str) -> None:
    known = gym.make("FrozenLake-v1", is_slippery=False).unwrapped
    phi = np.random.default_rng(1).uniform(-5.0, 5.0, size=16)
    term = PotentialShaping(lambda s: phi[int(s)], gamma=GAMMA)
    q = _value_iteration(
        known.P,  # type: ignore[attr-defined]
        lambda s, s2, r, d: term(r, Transition(s, s2, d, False, {})),
        GAMMA,
    )
    env = ShapeReward(OpenEnvEnv(frozenlake_url), [term])
    try:
        obs, _ = env.reset(seed=0)
        shaped_return, raw_return, terminated, steps = 0.0, 0.0, False, 0
        while not terminated and steps < 20:
            before = int(obs)
            obs, reward, terminated, _, info = env.step(int(q[before].argmax()))
            assert reward == pytest.approx(
                info["raw_reward"] + (0.0 if terminated else GAMMA * phi[int(obs)]) - phi[before]
            )
            shaped_return += reward
            raw_return += info["raw_reward"]
            steps += 1
        assert terminated
        assert raw_return == 1.0
        assert steps == 6
    finally:
        env.close()


# --------------------------------------------------------------------------- vector


def _vector(url: str, n: int, mode: AutoresetMode, limit: int | None = None) -> SyncVectorEnv:
    def make() -> gym.Env[Any, Any]:
        env: gym.Env[Any, Any] = OpenEnvEnv(url)
        return gym.wrappers.TimeLimit(env, limit) if limit else env

    return SyncVectorEnv([make] * n, autoreset_mode=mode)


def test_vector_next_step_mode_matches_single_env_shaping(cartpole_url: str) -> None:
    term = PotentialShaping(FieldPotential(2, weight=10.0), gamma=GAMMA)  # pole angle
    venv = VectorShapeReward(_vector(cartpole_url, 3, AutoresetMode.NEXT_STEP), [term])
    try:
        obs, _ = venv.reset(seed=[1, 2, 3])
        autoreset = np.zeros(3, dtype=bool)
        ends = 0
        for _ in range(60):
            before = obs.copy()
            obs, rewards, terminated, truncated, info = venv.step(np.array([0, 1, 0]))
            np.testing.assert_array_equal(info["raw_reward"][~autoreset], 1.0)
            for i in range(3):
                if autoreset[i]:
                    assert rewards[i] == info["raw_reward"][i]  # a reset step: unshaped
                    continue
                after = 0.0 if terminated[i] else GAMMA * 10.0 * obs[i, 2]
                assert rewards[i] == pytest.approx(1.0 + after - 10.0 * before[i, 2], rel=1e-5)
            autoreset = terminated | truncated
            ends += int(autoreset.sum())
        assert ends >= 3
    finally:
        venv.close()


def test_vector_same_step_mode_reads_the_final_observation(cartpole_url: str) -> None:
    term = PotentialShaping(FieldPotential(0, weight=100.0), gamma=GAMMA)  # cart position
    venv = VectorShapeReward(_vector(cartpole_url, 2, AutoresetMode.SAME_STEP, limit=4), [term])
    try:
        obs, _ = venv.reset(seed=[5, 6])
        truncations_seen = 0
        for _ in range(9):
            before = obs.copy()
            obs, rewards, _terminated, truncated, info = venv.step(np.array([1, 0]))
            for i in range(2):
                after_obs = info["final_obs"][i] if truncated[i] else obs[i]
                expected = 1.0 + GAMMA * 100.0 * after_obs[0] - 100.0 * before[i, 0]
                assert rewards[i] == pytest.approx(expected, rel=1e-5)
            truncations_seen += int(truncated.sum())
        assert truncations_seen == 4
    finally:
        venv.close()


# --------------------------------------------------------------------------- config

CONFIG: dict[str, Any] = {
    "terms": [
        {"scale": 2.0},
        {"clip": [-1.5, 1.5]},
        {"offset": 0.25},
        {"potential": {"function": f"{__name__}:constant_potential", "gamma": 0.5}},
        {"bonus": {"source": "observation", "key": 0, "weight": 0.0}},
    ]
}


def _rewards(env: gym.Env[Any, Any]) -> list[float]:
    env.reset(seed=0)
    return [float(env.step(i % 2)[1]) for i in range(5)]


def test_config_dict_yaml_and_json_agree(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    yaml_file = tmp_path / "shaping.yaml"
    yaml_file.write_text(yaml.safe_dump(CONFIG))
    json_file = tmp_path / "shaping.json"
    json_file.write_text(json.dumps(CONFIG))
    expected = [1.5 + 0.25 + 0.5 - 1.0] * 5
    for config in (CONFIG, yaml_file, str(json_file)):
        env = ShapeReward.from_config(gym.make("CartPole-v1"), config)
        assert _rewards(env) == pytest.approx(expected)


BAD_CONFIGS: list[tuple[Any, str]] = [
    ([{"scale": 1.0}], ""),
    ({"terms": []}, "terms"),
    ({"terms": [{"scale": 1.0}], "gamma": 0.9}, "gamma"),
    ({"terms": [{"scale": "big"}]}, "terms[0].scale"),
    ({"terms": [{"scale": True}]}, "terms[0].scale"),
    ({"terms": [{"scale": float("nan")}]}, "terms[0].scale"),
    ({"terms": [{"scale": 1.0, "offset": 1.0}]}, "terms[0]"),
    ({"terms": [{"multiply": 3}]}, "terms[0].multiply"),
    ({"terms": [{"clip": [1.0]}]}, "terms[0].clip"),
    ({"terms": [{"clip": [2.0, 1.0]}]}, "terms[0].clip"),
    ({"terms": [{"clip": {"low": 0.0}}]}, "terms[0].clip.high"),
    ({"terms": [{"potential": {"gamma": 0.9}}]}, "terms[0].potential"),
    ({"terms": [{"potential": {"field": 0, "gamma": 1.5}}]}, "terms[0].potential.gamma"),
    ({"terms": [{"potential": {"function": "no_colon"}}]}, "terms[0].potential.function"),
    ({"terms": [{"potential": {"function": "math:nothing_here"}}]}, "terms[0].potential.function"),
    ({"terms": [{"potential": {"function": "math:pi"}}]}, "terms[0].potential.function"),
    ({"terms": [{"potential": {"field": 0, "shape": 1}}]}, "terms[0].potential.shape"),
    ({"terms": [{"bonus": {"source": "reward", "key": 0}}]}, "terms[0].bonus.source"),
    ({"terms": [{"bonus": {"source": "info"}}]}, "terms[0].bonus.key"),
    ({"terms": [{"bonus": {"source": "info", "key": [1]}}]}, "terms[0].bonus.key"),
]


@pytest.mark.parametrize(("config", "path"), BAD_CONFIGS)
def test_bad_configs_are_typed_errors_naming_the_entry(config: Any, path: str) -> None:
    with pytest.raises(WrapperConfigError) as caught:
        RewardShaper.from_config(config)
    assert caught.value.path == path
    assert isinstance(caught.value, ValueError)


def test_bad_config_files_are_typed_errors(tmp_path: Path) -> None:
    with pytest.raises(WrapperConfigError, match="cannot read"):
        RewardShaper.from_config(tmp_path / "missing.yaml")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(WrapperConfigError, match="not valid JSON"):
        RewardShaper.from_config(tmp_path / "bad.json")
    (tmp_path / "bad.toml").write_text("x = 1")
    with pytest.raises(WrapperConfigError, match=r"expected \.yaml, \.yml or \.json"):
        RewardShaper.from_config(tmp_path / "bad.toml")
    pytest.importorskip("yaml")
    (tmp_path / "bad.yaml").write_text("terms: [scale: 1\n  - :")
    with pytest.raises(WrapperConfigError, match="not valid YAML"):
        RewardShaper.from_config(tmp_path / "bad.yaml")


def test_fields_the_observation_lacks_are_refused_at_wrap_time(cartpole_url: str) -> None:
    with pytest.raises(WrapperConfigError, match="out of range") as caught:
        ShapeReward(gym.make("CartPole-v1"), [FieldBonus("observation", 4)])
    assert caught.value.path == "terms[0]"
    with pytest.raises(WrapperConfigError, match="does not exist"):
        ShapeReward(gym.make("CartPole-v1"), [FieldBonus("observation", "angle")])
    with pytest.raises(WrapperConfigError, match="expected a RewardTerm"):
        ShapeReward(gym.make("CartPole-v1"), [lambda r, t: r])  # type: ignore[list-item]
    venv = _vector(cartpole_url, 2, AutoresetMode.NEXT_STEP)
    try:
        with pytest.raises(WrapperConfigError, match="out of range"):
            VectorShapeReward(venv, [FieldBonus("observation", -5)])
    finally:
        venv.close()
