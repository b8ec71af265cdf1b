"""Gymnasium's own ``AsyncVectorEnv`` (``gym.make_vec(..., vectorization_mode="async")``) on
official ``openenv`` servers (issue 31, item 5).

* A one-session server (the official default) refuses the second sub-env's session: the
  parent gets the server's typed error, and ``close()`` returns (it used to wait forever
  for an error that never unpickled).
* Every text space survives the shared memory (its default): ``FreeText`` observations,
  ``JsonText`` (an MCP tool's result), the ``Text`` of an MCP error, a plain
  ``gymnasium.spaces.Text`` the user pinned, nullable strings.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import CapacityReachedError
from openenv_gym.spaces.charset import DefaultCharsetText
from openenv_gym.spaces.free_text import FreeText
from openenv_gym.spaces.json_text import JsonText
from tests.mcp_servers import EchoEnvironment, serve_mcp_env
from tests.official_shapes import serve_shape


def _async(url: str, **kwargs: Any) -> Any:
    return gym.make_vec(
        "openenv/Remote-v0", num_envs=2, vectorization_mode="async", base_url=url, **kwargs
    )


def test_a_one_session_server_raises_its_typed_error_in_the_parent_and_close_returns() -> None:
    with serve_shape("chat", max_concurrent_envs=1) as url:
        vec = _async(url)
        try:
            with pytest.raises(CapacityReachedError) as info:
                vec.reset(seed=0)
            assert info.value.code == "CAPACITY_REACHED"
            assert info.value.url is not None
            assert info.value.url.startswith("ws://127.0.0.1:")
            assert "max_concurrent_envs" in str(info.value)  # the fix, as on one env
        finally:
            vec.close()
        assert vec.closed
        # The slot is free again: a single env plays on the same server.
        env = gym.make("openenv/Remote-v0", base_url=url)
        try:
            obs, _ = env.reset(seed=0)
            assert obs["prompt"] == "say something"
        finally:
            env.close()


def test_nullable_strings_and_a_pinned_plain_text_survive_shared_memory() -> None:
    with serve_shape("nullable") as url:
        vec = _async(url)
        try:
            single = vec.single_observation_space
            assert isinstance(single["final_answer"], FreeText)  # Optional[str]: any character
            assert isinstance(vec.single_action_space["final_answer"], DefaultCharsetText)
            vec.reset(seed=0)
            actions = {
                "code": ("print(1)", ""),
                "is_final": np.array([0, 0]),
                "final_answer": ("forty-two", ""),
                "final_answer_present": np.array([1, 0]),
                "weight": np.zeros(2, np.float32),
                "weight_present": np.array([0, 0]),
                "count": np.array([3, 0]),
                "count_present": np.array([1, 0]),
            }
            obs, *_ = vec.step(actions)
            assert tuple(obs["final_answer"]) == ("forty-two", "")
            assert list(obs["final_answer_present"]) == [1, 0]
            assert tuple(obs["code"]) == ("print(1)", "")
            assert [text.split(",")[:2] for text in obs["sent"]] == [["code", "count"]] * 2
        finally:
            vec.close()
    with serve_shape("chat") as url:
        pinned = spaces.Text(32, charset="abcdefghijklmnopqrstuvwxyz ")
        vec = _async(url, observation_field_spaces={"prompt": pinned})
        try:
            assert type(vec.single_observation_space["prompt"]) is spaces.Text
            obs, _ = vec.reset(seed=0)
            assert tuple(obs["prompt"]) == ("say something", "say something")
            obs, *_ = vec.step(("hello there", "bye"))
            assert tuple(obs["prompt"]) == ("hello there", "bye")
        finally:
            vec.close()


def test_json_text_and_text_of_an_mcp_env_survive_shared_memory() -> None:
    with serve_mcp_env(EchoEnvironment) as url:
        vec = _async(url)
        try:
            single = vec.single_observation_space
            assert isinstance(single["result"]["echo_with_length"], JsonText)
            assert isinstance(single["error"], DefaultCharsetText)
            obs, _ = vec.reset(seed=0)
            assert tuple(obs["error"]) == ("", "")
            obs, *_ = vec.step(
                ((1, {"message": "héllo ☃"}), ("echo_with_length", {"message": "x"}))
            )
            lengths = [json.loads(text) for text in obs["result"]["echo_with_length"]]
            assert lengths == [{"message": "héllo ☃", "length": 7}, {"message": "x", "length": 1}]
            assert tuple(obs["result"]["echo_message"]) == ("", "")  # the other tool: neutral
        finally:
            vec.close()
