"""Optional and nullable fields against an official ``openenv`` server (docs/spaces.md).

The server (:class:`tests.official_shapes.NullableEnvironment`) has repl_env's action shape
(every field has a default, ``final_answer: Optional[str] = None``), plus ``Optional[float]``
and ``Optional[int]``, and OpenSpiel's observation ``opponent_last_action: Optional[int] =
None``. It echoes what arrived, so each test sees exactly what was sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import ActionOutOfSpaceError
from tests.official_shapes import serve_shape


@pytest.fixture(scope="module")
def nullable_url() -> Iterator[str]:
    with serve_shape("nullable") as url:
        yield url


@pytest.fixture
def env(nullable_url: str) -> Iterator[gym.Env[Any, Any]]:
    env = gym.make("openenv/Remote-v0", base_url=nullable_url)
    yield env
    env.close()


def test_each_nullable_field_has_a_presence_flag_and_nothing_needs_a_keyword(
    env: gym.Env[Any, Any],
) -> None:
    action = env.action_space
    assert isinstance(action, spaces.Dict)
    assert list(action.spaces) == [
        "code",
        "is_final",
        "final_answer",
        "final_answer_present",
        "weight",
        "weight_present",
        "count",
        "count_present",
    ]
    assert action["count"] == spaces.Discrete(10)
    assert action["final_answer_present"] == spaces.Discrete(2)
    observation = env.observation_space
    assert isinstance(observation, spaces.Dict)
    assert observation["opponent_last_action_present"] == spaces.Discrete(2)
    assert list(observation.spaces)[:2] == ["opponent_last_action", "opponent_last_action_present"]


def test_an_observation_none_is_told_apart_from_the_value_0(env: gym.Env[Any, Any]) -> None:
    obs, _ = env.reset(seed=0)
    assert obs["opponent_last_action_present"] == 0  # None at reset
    obs, *_ = env.step({"count": 0})
    assert obs["opponent_last_action"] == 0
    assert obs["opponent_last_action_present"] == 1  # action 0, not None
    obs, *_ = env.step({"count": None})
    assert obs["opponent_last_action_present"] == 0
    assert env.observation_space.contains(obs)


def test_an_action_field_left_out_is_not_sent_and_its_default_applies(
    env: gym.Env[Any, Any],
) -> None:
    env.reset(seed=0)
    obs, *_ = env.step({})
    assert obs["sent"] == ""  # nothing arrived: every field took the server's default
    assert obs["final_answer_present"] == 0
    assert obs["code"] == ""


def test_an_action_field_given_none_sends_null(env: gym.Env[Any, Any]) -> None:
    env.reset(seed=0)
    obs, *_ = env.step({"final_answer": None, "weight": None, "code": "x = 1"})
    assert obs["sent"] == "code,final_answer,weight"  # null arrived for both
    assert obs["final_answer_present"] == 0
    assert obs["weight_present"] == 0
    assert obs["code"] == "x = 1"
    # The flag form says the same: present 0 sends null whatever the value holds.
    obs, *_ = env.step({"final_answer": "ignored", "final_answer_present": 0})
    assert obs["sent"] == "final_answer"
    assert obs["final_answer_present"] == 0
    obs, *_ = env.step({"weight_present": 0})  # the flag alone says None too
    assert obs["sent"] == "weight"
    assert obs["weight_present"] == 0


def test_an_action_field_given_a_value_sends_it(env: gym.Env[Any, Any]) -> None:
    env.reset(seed=0)
    obs, *_ = env.step({"final_answer": "42", "weight": 0.5, "count": 3})
    assert obs["sent"] == "count,final_answer,weight"
    assert obs["final_answer"] == "42"
    assert obs["final_answer_present"] == 1
    assert obs["weight"] == np.float32(0.5)
    assert obs["weight_present"] == 1
    assert obs["count"] == 3
    assert obs["count_present"] == 1


def test_a_sampled_action_sends_every_field_and_honours_its_flags(
    env: gym.Env[Any, Any],
) -> None:
    env.reset(seed=0)
    env.action_space.seed(3)
    seen = set()
    for _ in range(12):
        action = env.action_space.sample()
        action["is_final"] = 0
        obs, *_ = env.step(action)
        assert obs["sent"] == "code,count,final_answer,is_final,weight"
        for name in ("final_answer", "weight", "count"):
            assert obs[f"{name}_present"] == action[f"{name}_present"]
            seen.add((name, int(action[f"{name}_present"])))
        if action["count_present"]:
            assert obs["count"] == action["count"]
    assert len(seen) == 6  # both flags of every field were drawn and sent


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ({"code": None}, "not nullable"),
        ({"final_answer": None, "final_answer_present": 1}, "final_answer_present=1"),
        ({"count": 12}, "count"),
        ({"count_present": 1}, "count_present=1 but no value"),
        ({"answer": "42"}, "unknown action fields ['answer']"),
    ],
)
def test_a_bad_optional_action_is_refused_before_anything_is_sent(
    env: gym.Env[Any, Any], action: dict[str, Any], message: str
) -> None:
    env.reset(seed=0)
    with pytest.raises(ActionOutOfSpaceError, match=message.replace("[", r"\[")):
        env.step(action)
    obs, *_ = env.step({"count": 1})  # the session lives on and nothing else arrived
    assert obs["sent"] == "count"


def test_gymnasium_check_env_passes(nullable_url: str) -> None:
    env = gym.make("openenv/Remote-v0", base_url=nullable_url)
    try:
        check_env(env.unwrapped)
    finally:
        env.close()


def test_a_vector_env_sends_and_reads_the_flags_as_the_single_env(nullable_url: str) -> None:
    envs = gym.make_vec("openenv/Remote-v0", num_envs=2, base_url=nullable_url)
    try:
        obs, _ = envs.reset(seed=0)
        np.testing.assert_array_equal(obs["opponent_last_action_present"], [0, 0])
        actions = envs.action_space.sample()
        actions["is_final"][:] = 0
        actions["count_present"][:] = [1, 0]
        obs, *_ = envs.step(actions)
        np.testing.assert_array_equal(obs["opponent_last_action_present"], [1, 0])
        np.testing.assert_array_equal(obs["count_present"], [1, 0])
        assert obs["count"][0] == actions["count"][0]
        assert envs.observation_space.contains(obs)
    finally:
        envs.close()
