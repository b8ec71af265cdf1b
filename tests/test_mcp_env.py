"""MCP tool environments through ``gym.make("openenv/Remote-v0", base_url=...)``: official
``openenv`` MCP envs (``MCPEnvironment`` + FastMCP tools) served by the official app."""

from __future__ import annotations

import json
from collections.abc import Iterator

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import ActionOutOfSpaceError, SpaceMappingError, ToolCallRefusedError
from openenv_gym.spaces.json_text import JsonText
from openenv_gym.spaces.tools import NO_TOOL
from tests.mcp_servers import EchoEnvironment, ToolboxEnvironment, serve_mcp_env


@pytest.fixture(scope="module")
def echo_url() -> Iterator[str]:
    with serve_mcp_env(EchoEnvironment) as url:
        yield url


@pytest.fixture(scope="module")
def toolbox_url() -> Iterator[str]:
    with serve_mcp_env(ToolboxEnvironment) as url:
        yield url


@pytest.fixture
def toolbox(toolbox_url: str) -> Iterator[gym.Env]:
    env = gym.make("openenv/Remote-v0", base_url=toolbox_url)
    yield env
    env.close()


# ---------------------------------------------------------------------- echo


def test_echo_env_works_with_no_keyword_arguments(echo_url: str) -> None:
    env = gym.make("openenv/Remote-v0", base_url=echo_url)
    try:
        tools = env.unwrapped.tools
        assert [tool.name for tool in tools] == ["echo_message", "echo_with_length"]
        assert tools[0].input_schema["required"] == ["message"]
        assert isinstance(env.action_space, spaces.OneOf)
        assert list(env.action_space.spaces[0].spaces) == ["message"]
        assert env.observation_space["tool"] == spaces.Discrete(3, start=-1)

        obs, info = env.reset(seed=0)
        assert obs["tool"] == NO_TOOL
        assert obs["error"] == ""
        assert info["status"] == "ready"
        assert obs in env.observation_space

        obs, reward, terminated, truncated, info = env.step(("echo_message", {"message": "hi"}))
        assert obs["tool"] == 0
        assert obs["result"]["echo_message"] == "hi"
        assert obs["result"]["echo_with_length"] == "null"  # the other tool: neutral
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert info["tool_name"] == "echo_message"

        obs, *_ = env.step((1, {"message": "héllo ☃"}))
        assert json.loads(obs["result"]["echo_with_length"]) == {"message": "héllo ☃", "length": 7}
        assert obs["result"]["echo_with_length"].isascii()  # JSON text: always in the charset
        assert obs in env.observation_space
    finally:
        env.close()


def test_check_env_passes_on_the_echo_env(echo_url: str) -> None:
    env = gym.make("openenv/Remote-v0", base_url=echo_url)
    try:
        check_env(env.unwrapped)
    finally:
        env.close()


# ---------------------------------------------------------------------- richer tools


def test_toolbox_spaces_follow_the_argument_schemas(toolbox: gym.Env) -> None:
    names = [tool.name for tool in toolbox.unwrapped.tools]
    assert names == ["move", "scale", "place", "store", "count", "fail"]
    move, scale, place, store, count, fail = toolbox.action_space.spaces
    # optional arguments (note, speed) are left to the server's defaults
    assert list(move.spaces) == ["steps", "color", "where"]
    assert move["steps"] == spaces.Discrete(11)
    assert move["color"] == spaces.Discrete(3)
    assert move["where"]["x"] == spaces.Box(-1.0, 1.0, (), np.float32)
    assert scale["value"] == spaces.Box(-5.0, 5.0, (), np.float32)
    assert scale["factor"] == spaces.Discrete(3)
    assert place["target"]["layer"] == spaces.Discrete(4)
    assert (place["label"].min_length, place["label"].max_length) == (1, 12)
    assert isinstance(store["payload"], JsonText)
    assert isinstance(store["tags"], JsonText)
    assert count == spaces.Dict()
    assert isinstance(fail["reason"], spaces.Text)
    results = toolbox.observation_space["result"]
    assert isinstance(results["move"], JsonText)  # -> dict: an open output schema
    assert results["scale"] == spaces.Box(-np.inf, np.inf, (), np.float32)
    assert results["place"]["y"] == spaces.Box(0.0, 10.0, (), np.float32)
    assert results["count"].dtype == np.int64


def test_check_env_passes_on_the_toolbox(toolbox: gym.Env) -> None:
    check_env(toolbox.unwrapped)


def test_sampled_calls_are_accepted_by_the_server(toolbox: gym.Env) -> None:
    toolbox.reset(seed=3)
    toolbox.action_space.seed(3)
    called = set()
    for _ in range(60):
        action = toolbox.action_space.sample()
        obs, *_ = toolbox.step(action)  # a refused call would raise ToolCallRefusedError
        name = toolbox.unwrapped.tools[int(obs["tool"])].name
        called.add(name)
        assert obs in toolbox.observation_space
        if name == "fail":
            assert obs["error"].startswith("execution_error: ")
        else:
            assert obs["error"] == ""
    assert called == {"move", "scale", "place", "store", "count", "fail"}


def test_typed_results(toolbox: gym.Env) -> None:
    toolbox.reset()
    obs, *_ = toolbox.step(("scale", {"value": 1.5, "factor": 2}))  # factor index 2 -> 3
    assert obs["result"]["scale"] == pytest.approx(4.5)
    cell = {"x": 0.25, "y": 2.0}
    obs, *_ = toolbox.step(("place", {"target": {"cell": cell, "layer": 1}, "label": "a"}))
    assert float(obs["result"]["place"]["x"]) == 0.25
    obs, *_ = toolbox.step(("count", {}))
    assert int(obs["result"]["count"]) == 3
    call = ("move", {"steps": 4, "color": 2, "where": {"x": 0.5, "y": 1.0}})
    obs, *_ = toolbox.step(call)
    moved = json.loads(obs["result"]["move"])
    assert moved == {"steps": 4, "color": "blue", "x": 0.5, "note": None, "speed": 1.0}


def test_free_form_arguments_travel_as_json_text(toolbox: gym.Env) -> None:
    toolbox.reset()
    call = {"key": "k", "payload": '{"a": [1, 2]}', "tags": '{"t": "v", "u": "w"}'}
    obs, *_ = toolbox.step(("store", call))
    assert obs["result"]["store"] == "k:dict:2"
    obs, *_ = toolbox.step(("store", {"key": "k", "payload": "plain words", "tags": "{}"}))
    assert obs["result"]["store"] == "k:str:0"  # text that is not JSON is sent as a string


def test_optional_arguments_can_be_included(toolbox_url: str) -> None:
    env = gym.make(
        "openenv/Remote-v0", base_url=toolbox_url, action_include=["move.note", "move.speed"]
    )
    try:
        move = env.action_space.spaces[0]
        assert list(move.spaces) == ["steps", "color", "where", "note", "speed"]
        assert move["speed"].low > 0.0
        assert move["speed"].high == 2.0
        env.reset()
        where = {"x": 0.0, "y": 0.0}
        obs, *_ = env.step(
            ("move", {"steps": 1, "color": 0, "where": where, "note": "n", "speed": 2.0})
        )
        assert json.loads(obs["result"]["move"])["note"] == "n"
        check_env(env.unwrapped)
    finally:
        env.close()


def test_an_unknown_tool_or_argument_in_the_options_is_named(toolbox_url: str) -> None:
    with pytest.raises(SpaceMappingError, match=r"'nope\.x'.*'tool\.argument'"):
        gym.make("openenv/Remote-v0", base_url=toolbox_url, action_include=["nope.x"])
    with pytest.raises(SpaceMappingError, match="tool 'move' has no argument 'colour'"):
        gym.make("openenv/Remote-v0", base_url=toolbox_url, action_include=["move.colour"])


# ---------------------------------------------------------------------- errors


def test_a_call_outside_the_space_names_tool_and_argument(toolbox: gym.Env) -> None:
    toolbox.reset()
    where = {"x": 0.0, "y": 0.0}
    with pytest.raises(ActionOutOfSpaceError, match="tool 'move', argument 'steps'") as caught:
        toolbox.step(("move", {"steps": 11, "color": 0, "where": where}))
    assert caught.value.field == "move.steps"
    with pytest.raises(ActionOutOfSpaceError, match=r"argument 'where\.x'"):
        toolbox.step(("move", {"steps": 1, "color": 0, "where": {"x": 3.0, "y": 0.0}}))
    with pytest.raises(ActionOutOfSpaceError, match=r"unknown tool 'jump'.*'move'"):
        toolbox.step(("jump", {}))
    with pytest.raises(ActionOutOfSpaceError, match=r"\(tool_index, arguments\)"):
        toolbox.step({"tool_name": "count"})
    obs, *_ = toolbox.step(("count", {}))
    assert int(obs["result"]["count"]) == 1  # nothing was sent for the refused actions


def test_a_call_the_server_refuses_raises_naming_tool_and_argument(toolbox: gym.Env) -> None:
    toolbox.reset()
    with pytest.raises(ToolCallRefusedError, match=r"tool 'store'.*argument 'tags'") as caught:
        toolbox.step(("store", {"key": "k", "payload": "1", "tags": '["not", "a", "dict"]'}))
    assert (caught.value.tool, caught.value.argument) == ("store", "tags")
    assert "validation error" in caught.value.server_message
    obs, *_ = toolbox.step(("count", {}))  # the session lives on
    assert obs["error"] == ""


def test_a_failing_tool_is_an_observation_not_an_exception(toolbox: gym.Env) -> None:
    toolbox.reset()
    obs, _reward, _terminated, _truncated, info = toolbox.step(("fail", {"reason": "why"}))
    assert obs["tool"] == 5
    assert "failed on purpose: why" in obs["error"]
    assert info["error_type"] == "execution_error"
    assert info["tool_name"] == "fail"


# ---------------------------------------------------------------------- discovery


@pytest.mark.parametrize(
    ("bare_action", "without_mcp_route"), [(True, False), (True, True), (False, True)]
)
def test_tools_are_found_without_call_tool_schema_or_mcp_route(
    bare_action: bool, without_mcp_route: bool
) -> None:
    with serve_mcp_env(
        EchoEnvironment, bare_action=bare_action, without_mcp_route=without_mcp_route
    ) as url:
        env = gym.make("openenv/Remote-v0", base_url=url)
        try:
            assert [tool.name for tool in env.unwrapped.tools] == [
                "echo_message",
                "echo_with_length",
            ]
            env.reset()
            obs, *_ = env.step(("echo_message", {"message": "x"}))
            result = obs["result"]["echo_message"]
            # ListToolsObservation has no output schemas: the result is JSON text
            assert (json.loads(result) if without_mcp_route else result) == "x"
        finally:
            env.close()


# ---------------------------------------------------------------------- vector


def test_make_vec_over_an_mcp_env(toolbox_url: str) -> None:
    envs = gym.make_vec("openenv/Remote-v0", num_envs=3, base_url=toolbox_url)
    try:
        assert (
            envs.single_action_space
            == gym.make("openenv/Remote-v0", base_url=toolbox_url).action_space
        )
        obs, _ = envs.reset(seed=0)
        assert list(obs["tool"]) == [NO_TOOL] * 3
        envs.action_space.seed(0)
        for _ in range(5):
            obs, _rewards, _terminated, _truncated, _ = envs.step(envs.action_space.sample())
            assert obs in envs.observation_space
        calls = (("count", {}), ("scale", {"value": 1.0, "factor": 0}), ("count", {}))
        obs, *_ = envs.step(calls)
        assert list(obs["tool"]) == [4, 1, 4]
        assert obs["result"]["scale"][1] == pytest.approx(1.0)
        assert obs["result"]["count"][0] == 6
        assert obs["result"]["count"][2] == 6
    finally:
        envs.close()


def test_sync_vector_env_over_an_mcp_env(echo_url: str) -> None:
    envs = gym.make_vec(
        "openenv/Remote-v0", num_envs=2, vectorization_mode="sync", base_url=echo_url
    )
    try:
        envs.reset(seed=0)
        obs, *_ = envs.step((("echo_message", {"message": "a"}), (1, {"message": "bc"})))
        assert list(obs["result"]["echo_message"]) == ["a", ""]
        assert json.loads(obs["result"]["echo_with_length"][1])["length"] == 2
    finally:
        envs.close()
