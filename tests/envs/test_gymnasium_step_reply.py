"""The gymnasium server's fast step path answers byte for byte what the validated path does."""

from __future__ import annotations

import numpy as np
import pytest

from openenv_gym.envs.gymnasium import GymnasiumEnvironment
from openenv_gym.errors import ActionOutOfSpaceError
from openenv_gym.server.session import serialize_observation
from openenv_gym.wire.messages import encode_json


def test_fast_path_equals_validated_path() -> None:
    fast, slow = GymnasiumEnvironment("CartPole-v1"), GymnasiumEnvironment("CartPole-v1")
    try:
        fast.reset(seed=4)
        slow.reset(seed=4)
        rng = np.random.default_rng(0)
        for _ in range(60):
            action = int(rng.integers(2))
            reply = fast.step_reply({"action": action})
            assert reply is not None
            expected = serialize_observation(slow.step(slow.action_model(action=action)))
            assert encode_json(reply) == encode_json(expected)
            if reply["data"]["done"]:
                fast.reset(seed=5)
                slow.reset(seed=5)
    finally:
        fast.close()
        slow.close()


@pytest.mark.parametrize("data", [{"action": "1"}, {"action": 1.0}, {"action": 1, "x": 2}, {}])
def test_anything_unusual_takes_the_validated_path(data: dict[str, object]) -> None:
    env = GymnasiumEnvironment("CartPole-v1")
    try:
        env.reset(seed=0)
        assert env.step_reply(data) is None
    finally:
        env.close()


def test_out_of_space_action_is_refused() -> None:
    env = GymnasiumEnvironment("CartPole-v1")
    try:
        env.reset(seed=0)
        with pytest.raises(ActionOutOfSpaceError, match="not an element"):
            env.step_reply({"action": 2})
    finally:
        env.close()


def test_continuous_env_has_no_fast_path() -> None:
    env = GymnasiumEnvironment("Pendulum-v1")
    try:
        env.reset(seed=0)
        assert env.step_reply({"action": [0.5]}) is None
    finally:
        env.close()
