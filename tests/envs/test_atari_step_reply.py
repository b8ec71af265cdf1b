"""The Atari server's fast step path answers byte for byte what the validated path does,
on a real ALE emulator."""

from __future__ import annotations

import numpy as np
import pytest

from openenv_gym.errors import ActionOutOfSpaceError
from openenv_gym.server.session import serialize_observation
from openenv_gym.wire.messages import encode_json

pytest.importorskip("ale_py")

from openenv_gym.envs.atari import AtariEnvironment


def test_fast_path_equals_validated_path() -> None:
    options = {"repeat_action_probability": 0.0, "obs_type": "ram"}
    fast, slow = AtariEnvironment("pong", **options), AtariEnvironment("pong", **options)
    try:
        fast.reset(seed=4)
        slow.reset(seed=4)
        rng = np.random.default_rng(0)
        for _ in range(40):
            action = int(rng.integers(6))
            reply = fast.step_reply({"action_id": action})
            assert reply is not None
            expected = serialize_observation(slow.step(slow.action_model(action_id=action)))
            assert encode_json(reply) == encode_json(expected)
        assert fast.state.step_count == slow.state.step_count == 40
        fast.reset()
        assert fast.state.step_count == 0
    finally:
        fast.close()
        slow.close()


@pytest.mark.parametrize(
    "data",
    [{"action_id": "1"}, {"action_id": 1.0}, {"action_id": 1, "game_name": "pong"}, {}],
)
def test_anything_unusual_takes_the_validated_path(data: dict[str, object]) -> None:
    env = AtariEnvironment("pong", obs_type="ram")
    try:
        env.reset(seed=0)
        assert env.step_reply(data) is None
        assert env.state.step_count == 0
    finally:
        env.close()


def test_an_illegal_action_raises_the_same_error() -> None:
    env = AtariEnvironment("pong", obs_type="ram")
    try:
        env.reset(seed=0)
        with pytest.raises(ActionOutOfSpaceError, match="action_id 6 is not a legal action"):
            env.step_reply({"action_id": 6})
        assert env.state.step_count == 0
    finally:
        env.close()


def test_a_preprocessing_server_resizes_in_its_own_thread() -> None:
    cv2 = pytest.importorskip("cv2")
    from openenv_gym.envs.atari.server import atari_server

    before = cv2.getNumThreads()
    try:
        atari_server("pong", stack_num=4)  # builds its probe environment
        assert cv2.getNumThreads() == 1
    finally:
        cv2.setNumThreads(before)
