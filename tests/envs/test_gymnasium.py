"""Gymnasium env ids served as OpenEnv: exact trajectories, accurate schemas, clear errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from websockets.sync.client import ClientConnection, connect

from openenv_gym.envs.gymnasium import (
    GymnasiumEnvironment,
    gymnasium_models,
    gymnasium_server,
    json_safe,
)
from openenv_gym.errors import SpaceMappingError
from openenv_gym.server import ServerThread
from openenv_gym.spaces.serialization import (
    X_ACTION_KEY,
    X_OBSERVATION_KEY,
    X_SPACE,
    X_TRUNCATED_KEY,
    from_wire,
    space_from_json,
)
from openenv_gym.wire.messages import http_to_ws_url


def ask(ws: ClientConnection, message: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps(message))
    reply = ws.recv(timeout=10)
    assert isinstance(reply, str)
    return dict(json.loads(reply))


@pytest.fixture(scope="module")
def pendulum_url() -> Iterator[str]:
    with ServerThread(gymnasium_server("Pendulum-v1")) as running:
        yield running.url


# --------------------------------------------------------------------------- trajectories


def play_both(url: str, env_id: str, seed: int, actions: Any) -> int:
    """Play the same seeded episode on our server and on raw Gymnasium; compare each step."""
    raw = gym.make(env_id)
    try:
        with connect(http_to_ws_url(url), open_timeout=10) as ws:
            reply = ask(ws, {"type": "reset", "data": {"seed": seed}})
            expected, _ = raw.reset(seed=seed)
            observation = from_wire(
                raw.observation_space, reply["data"]["observation"]["observation"]
            )
            np.testing.assert_array_equal(observation, expected)
            assert observation.dtype == expected.dtype
            steps = 0
            while True:
                action = actions(raw.action_space, steps)
                wire_action = action.tolist() if isinstance(action, np.ndarray) else action
                reply = ask(ws, {"type": "step", "data": {"action": wire_action}})
                assert reply["type"] == "observation", reply
                expected, reward, terminated, truncated, _ = raw.step(action)
                steps += 1
                data = reply["data"]
                observation = from_wire(raw.observation_space, data["observation"]["observation"])
                np.testing.assert_array_equal(observation, expected)
                assert data["reward"] == float(reward)
                assert data["observation"]["truncated"] is bool(truncated)
                assert (data["done"] and not data["observation"]["truncated"]) is bool(terminated)
                if terminated or truncated:
                    assert data["done"] is True
                    state = ask(ws, {"type": "state"})["data"]
                    assert state["step_count"] == steps
                    assert state["env_id"] == env_id
                    return steps
    finally:
        raw.close()


def test_cartpole_trajectories_match_raw_gymnasium(cartpole_url: str) -> None:
    for seed in (0, 1, 42):
        choices = np.random.default_rng(seed).integers(2, size=500).tolist()
        steps = play_both(cartpole_url, "CartPole-v1", seed, lambda _s, i, c=choices: c[i])
        assert steps < 500  # random play terminates


def test_pendulum_trajectory_matches_raw_gymnasium_until_truncation(pendulum_url: str) -> None:
    rng = np.random.default_rng(3)

    def actions(space: spaces.Box, _: int) -> np.ndarray:
        return rng.uniform(space.low, space.high).astype(np.float32)

    assert play_both(pendulum_url, "Pendulum-v1", 3, actions) == 200  # TimeLimit truncation


def test_same_seed_same_episode(cartpole_url: str) -> None:
    with connect(http_to_ws_url(cartpole_url), open_timeout=10) as ws:
        first = ask(ws, {"type": "reset", "data": {"seed": 11}})
        ask(ws, {"type": "step", "data": {"action": 1}})
        again = ask(ws, {"type": "reset", "data": {"seed": 11}})
        assert first["data"]["observation"] == again["data"]["observation"]


def test_env_kwargs_reach_gymnasium_make() -> None:
    server = gymnasium_server("CartPole-v1", make_kwargs={"max_episode_steps": 3})
    with ServerThread(server) as running, connect(http_to_ws_url(running.url)) as ws:
        ask(ws, {"type": "reset", "data": {"seed": 0}})
        replies = [ask(ws, {"type": "step", "data": {"action": i % 2}}) for i in range(3)]
        assert [r["data"]["done"] for r in replies] == [False, False, True]
        assert replies[-1]["data"]["observation"]["truncated"] is True


def test_state_and_episode_id(cartpole_url: str) -> None:
    with connect(http_to_ws_url(cartpole_url), open_timeout=10) as ws:
        ask(ws, {"type": "reset", "data": {"seed": 0, "episode_id": "mine"}})
        ask(ws, {"type": "step", "data": {"action": 0}})
        assert ask(ws, {"type": "state"})["data"] == {
            "episode_id": "mine",
            "step_count": 1,
            "env_id": "CartPole-v1",
        }
        ask(ws, {"type": "reset"})
        state = ask(ws, {"type": "state"})["data"]
        assert state["step_count"] == 0
        assert state["episode_id"] not in (None, "mine")  # a fresh id per episode


# --------------------------------------------------------------------------- bad actions


@pytest.mark.parametrize(
    ("action", "fragment"),
    [
        pytest.param([5.0], "not an element of the action space", id="out-of-bounds"),
        pytest.param([1.0, 2.0], "at most 1 item", id="too-long"),
        pytest.param(["a"], "valid number", id="not-a-number"),
        pytest.param(1.0, "valid list", id="scalar"),
    ],
)
def test_bad_box_actions_are_validation_errors(
    pendulum_url: str, action: Any, fragment: str
) -> None:
    with connect(http_to_ws_url(pendulum_url), open_timeout=10) as ws:
        ask(ws, {"type": "reset", "data": {"seed": 0}})
        reply = ask(ws, {"type": "step", "data": {"action": action}})
        assert reply["data"]["code"] == "VALIDATION_ERROR"
        assert fragment in json.dumps(reply["data"])
        assert ask(ws, {"type": "step", "data": {"action": [0.5]}})["type"] == "observation"


@pytest.mark.parametrize("action", [2, -1, 0.5, "one", None, [1]])
def test_bad_discrete_actions_are_validation_errors(cartpole_url: str, action: Any) -> None:
    with connect(http_to_ws_url(cartpole_url), open_timeout=10) as ws:
        ask(ws, {"type": "reset", "data": {"seed": 0}})
        reply = ask(ws, {"type": "step", "data": {"action": action}})
        assert reply["type"] == "error"
        assert reply["data"]["code"] == "VALIDATION_ERROR"
        assert ask(ws, {"type": "step", "data": {"action": 1}})["type"] == "observation"


def test_step_before_reset_is_an_execution_error(cartpole_url: str) -> None:
    with connect(http_to_ws_url(cartpole_url), open_timeout=10) as ws:
        reply = ask(ws, {"type": "step", "data": {"action": 1}})
        assert reply["data"]["code"] == "EXECUTION_ERROR"
        assert "reset" in reply["data"]["message"].lower()
        assert ask(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"


def test_bad_seed_is_an_execution_error(cartpole_url: str) -> None:
    with connect(http_to_ws_url(cartpole_url), open_timeout=10) as ws:
        reply = ask(ws, {"type": "reset", "data": {"seed": "abc"}})
        assert reply["data"]["code"] == "EXECUTION_ERROR"
        assert ask(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"


# --------------------------------------------------------------------------- schemas


def schema_pair(action_space: Any, observation_space: Any) -> tuple[dict, dict]:
    action_model, observation_model = gymnasium_models("Test-v0", action_space, observation_space)
    return action_model.model_json_schema(), observation_model.model_json_schema()


@pytest.mark.parametrize(
    ("space", "expected"),
    [
        (spaces.Discrete(3), {"type": "integer", "minimum": 0, "maximum": 2}),
        (spaces.Discrete(3, start=-1), {"type": "integer", "minimum": -1, "maximum": 1}),
        (
            spaces.Box(-1.0, 1.0, (2,), np.float32),
            {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        ),
        (
            spaces.Box(0, 255, (2, 3), np.uint8),
            {
                "type": "array",
                "minItems": 2,
                "maxItems": 2,
                "items": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "minItems": 3,
                    "maxItems": 3,
                },
            },
        ),
        (spaces.Box(-1.0, 1.0, (), np.float64), {"type": "number"}),
        (
            spaces.MultiDiscrete([3, 4]),
            {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
        ),
        (
            spaces.MultiBinary(3),
            {
                "type": "array",
                "items": {"type": "integer", "minimum": 0, "maximum": 1},
                "minItems": 3,
                "maxItems": 3,
            },
        ),
    ],
)
def test_field_schemas_are_accurate_and_carry_the_space(space: Any, expected: dict) -> None:
    action_schema, observation_schema = schema_pair(space, space)
    for schema, key in ((action_schema, "action"), (observation_schema, "observation")):
        field = schema["properties"][key]
        for name, value in expected.items():
            assert field[name] == value, (name, field)
        assert space_from_json(field[X_SPACE]) == space
    assert action_schema[X_ACTION_KEY] == "action"
    assert observation_schema[X_OBSERVATION_KEY] == "observation"
    assert observation_schema[X_TRUNCATED_KEY] == "truncated"
    assert observation_schema["properties"]["truncated"]["type"] == "boolean"
    assert action_schema["additionalProperties"] is False


def test_schema_endpoint_of_a_served_env(cartpole_url: str) -> None:
    import httpx

    schema = httpx.get(cartpole_url + "/schema", timeout=10).json()
    assert schema["action"]["properties"]["action"][X_SPACE] == {
        "type": "Discrete",
        "n": 2,
        "start": 0,
    }
    observation_space = space_from_json(schema["observation"]["properties"]["observation"][X_SPACE])
    assert observation_space == gym.make("CartPole-v1").observation_space
    assert schema["state"]["properties"]["env_id"]["type"] == "string"
    metadata = httpx.get(cartpole_url + "/metadata", timeout=10).json()
    assert metadata["name"] == "CartPole-v1"


def test_unsupported_space_fails_at_server_start() -> None:
    with pytest.raises(SpaceMappingError, match="Tuple observation space"):
        gymnasium_server("Blackjack-v1")
    with pytest.raises(SpaceMappingError, match="Text action space"):
        gymnasium_models("Test-v0", spaces.Text(5), spaces.Discrete(2))


def test_unknown_env_id_fails_at_server_start() -> None:
    with pytest.raises(gym.error.Error):
        gymnasium_server("NoSuchEnv-v0")


# --------------------------------------------------------------------------- info and other spaces


class InfoEnv(gym.Env[np.ndarray, np.ndarray]):
    """MultiDiscrete actions, MultiBinary observations and a numpy-filled info dict."""

    action_space = spaces.MultiDiscrete([3, 2])
    observation_space = spaces.MultiBinary(4)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        self._t = 0
        return np.zeros(4, np.int8), {"options": options, "where": np.array([1.5, 2.5])}

    def step(self, action: np.ndarray) -> Any:
        self._t += 1
        observation = np.array([action[0] == 1, action[1] == 1, self._t % 2, 0], np.int8)
        info = {"sum": np.int64(action.sum()), "flags": (np.bool_(True), None), 3: "three"}
        return observation, np.float32(0.5), self._t >= 3, False, info


@pytest.fixture(scope="module")
def info_url() -> Iterator[str]:
    gym.register("OpenEnvGymTest/Info-v0", entry_point=InfoEnv)
    try:
        with ServerThread(gymnasium_server("OpenEnvGymTest/Info-v0")) as running:
            yield running.url
    finally:
        gym.registry.pop("OpenEnvGymTest/Info-v0", None)


def test_info_becomes_json_safe_metadata(info_url: str) -> None:
    with connect(http_to_ws_url(info_url), open_timeout=10) as ws:
        reset = ask(ws, {"type": "reset", "data": {"seed": 0, "difficulty": 2}})
        assert reset["data"]["metadata"] == {"options": {"difficulty": 2}, "where": [1.5, 2.5]}
        step = ask(ws, {"type": "step", "data": {"action": [1, 1]}})
        assert step["data"]["observation"]["observation"] == [1, 1, 1, 0]
        assert step["data"]["reward"] == 0.5
        assert step["data"]["metadata"] == {"sum": 2, "flags": [True, None], "3": "three"}
        assert step["data"]["observation"]["metadata"] == step["data"]["metadata"]
        bad = ask(ws, {"type": "step", "data": {"action": [3, 0]}})
        assert bad["data"]["code"] == "VALIDATION_ERROR"
        assert "not an element" in bad["data"]["message"]


def test_json_safe() -> None:
    value = {
        "a": np.arange(3),
        "b": np.float32(0.25),
        "c": (1, np.int16(2)),
        "d": {np.int64(1): {np.bool_(False)}},
        "e": float("nan"),
        "f": object,
    }
    assert json_safe(value) == {
        "a": [0, 1, 2],
        "b": 0.25,
        "c": [1, 2],
        "d": {"1": [False]},
        "e": None,
        "f": str(object),
    }


def test_environment_directly() -> None:
    env = GymnasiumEnvironment("CartPole-v1")
    try:
        first = env.reset(seed=0)
        assert first.done is False
        assert first.reward is None
        after = env.step(env.action_model(action=0))
        assert after.reward == 1.0
        assert env.state.step_count == 1
        assert type(after).__name__ == "CartPoleV1Observation"
    finally:
        env.close()


def test_construct_trusted_equals_model_construct() -> None:
    from openenv_gym.envs.gymnasium.environment import construct_trusted

    env = GymnasiumEnvironment("CartPole-v1")
    try:
        values = {
            "done": True,
            "reward": 1.0,
            "metadata": {"k": [1]},
            "observation": [0.1, 0.2, 0.3, 0.4],
            "truncated": True,
            "terminated": True,
        }
        fast = construct_trusted(env.observation_model, dict(values))
        slow = env.observation_model.model_construct(**values)
        assert fast == slow
        assert fast.model_dump() == slow.model_dump()
        assert fast.model_dump_json() == slow.model_dump_json()
        assert fast.model_fields_set == slow.model_fields_set
        assert env.observation_model.model_validate(fast.model_dump()) == fast
        fast.truncated = False  # validate_assignment still works
        assert fast.truncated is False
    finally:
        env.close()
