"""The Atari server and ``openenv/Atari-v0``: official schema, exact spaces, determinism,
parity with raw ``ALE/Pong-v5``, and both directions against the official package."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import httpx
import numpy as np
import pytest

pytest.importorskip("ale_py")

from gymnasium import spaces
from openenv.core import GenericEnvClient
from websockets.sync.client import connect

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs.atari.client import AtariOpenEnvEnv
from openenv_gym.envs.atari.server import atari_server
from openenv_gym.errors import (
    ActionOutOfSpaceError,
    BinaryEncodingRefusedError,
    EnvConfigError,
    ServerReplyError,
    UnknownEncodingError,
)
from openenv_gym.server import ServerThread
from openenv_gym.wire.messages import http_to_ws_url
from tests.envs.official_atari import official_atari_server

OFFICIAL_ACTION_FIELDS = {"action_id", "game_name", "obs_type", "full_action_space", "metadata"}
OFFICIAL_OBSERVATION_FIELDS = {
    "screen",
    "screen_shape",
    "legal_actions",
    "lives",
    "episode_frame_number",
    "frame_number",
    "done",
    "reward",
    "metadata",
}


@pytest.fixture(scope="module")
def pong_url() -> Iterator[str]:
    """Our Pong server with the ALE/Pong-v5 settings (frameskip 4, sticky actions 0.25)."""
    with ServerThread(atari_server("pong", max_sessions=16)) as server:
        yield server.url


@pytest.fixture(scope="module")
def official_pong_url() -> Iterator[str]:
    with official_atari_server() as url:
        yield url


def actions(n: int, count: int, seed: int = 0) -> list[int]:
    return [int(a) for a in np.random.default_rng(seed).integers(n, size=count)]


def test_schema_is_the_official_one_plus_x_keys(pong_url: str) -> None:
    schema = httpx.get(pong_url + "/schema").json()
    assert set(schema["action"]["properties"]) == OFFICIAL_ACTION_FIELDS
    assert schema["action"]["required"] == ["action_id"]
    assert set(schema["observation"]["properties"]) == OFFICIAL_OBSERVATION_FIELDS
    screen = schema["observation"]["properties"]["screen"]
    assert screen["type"] == "array"
    assert screen["items"] == {"type": "integer"}
    assert screen["x-space"]["shape"] == [210, 160, 3]
    assert schema["action"]["properties"]["action_id"]["x-action-meanings"][:2] == [
        "NOOP",
        "FIRE",
    ]
    assert schema["state"]["properties"]["frameskip"]["default"] == 4


@pytest.mark.parametrize(
    ("obs_type", "shape"),
    [("rgb", (210, 160, 3)), ("grayscale", (210, 160)), ("ram", (128,))],
)
def test_spaces_are_exact_for_every_obs_type(obs_type: str, shape: tuple[int, ...]) -> None:
    raw = gym.make("ALE/Breakout-v5", obs_type=obs_type, full_action_space=True)
    with ServerThread(atari_server("Breakout", obs_type=obs_type, full_action_space=True)) as srv:
        env = gym.make("openenv/Atari-v0", base_url=srv.url, obs_type=obs_type)
        try:
            assert env.observation_space == spaces.Box(0, 255, shape, np.uint8)
            assert env.observation_space == raw.observation_space
            assert env.action_space == spaces.Discrete(18) == raw.action_space
            meanings = env.unwrapped.get_action_meanings()  # type: ignore[attr-defined]
            assert meanings == raw.unwrapped.get_action_meanings()  # type: ignore[attr-defined]
            obs, info = env.reset(seed=3)
            assert obs.shape == shape
            assert obs.dtype == np.uint8
            assert env.observation_space.contains(obs)
            assert info["lives"] == 5
            assert env.unwrapped.ale.lives() == 5  # type: ignore[attr-defined]
        finally:
            env.close()
            raw.close()


def test_same_seed_same_actions_same_frames(pong_url: str) -> None:
    env = gym.make("openenv/Atari-v0", base_url=pong_url)
    try:
        runs = []
        for _ in range(2):
            obs, _ = env.reset(seed=11)
            frames = [obs]
            for action in actions(6, 60, seed=4):
                frames.append(env.step(action)[0])
            runs.append(np.stack(frames))
        other, _ = env.reset(seed=12)
        np.testing.assert_array_equal(runs[0], runs[1])
        assert len({f.tobytes() for f in runs[0]}) > 10  # the screen changes
        assert runs[0][0].shape == other.shape
    finally:
        env.close()


def test_remote_pong_matches_raw_ale_pong_v5(pong_url: str) -> None:
    """Same spaces, action count, frames and episode return as gym.make("ALE/Pong-v5")."""
    raw = gym.make("ALE/Pong-v5")
    env = gym.make("openenv/Atari-v0", base_url=pong_url, encoding="binary")
    try:
        assert env.observation_space == raw.observation_space
        assert env.action_space == raw.action_space
        assert env.unwrapped.get_action_meanings() == raw.unwrapped.get_action_meanings()  # type: ignore[attr-defined]
        ours, _ = env.reset(seed=7)
        theirs, _ = raw.reset(seed=7)
        np.testing.assert_array_equal(ours, theirs)
        our_return = their_return = 0.0
        for step, action in enumerate(actions(6, 400, seed=7)):
            ours, r1, term1, trunc1, _ = env.step(action)
            theirs, r2, term2, trunc2, _ = raw.step(action)
            our_return += r1
            their_return += r2
            assert (r1, term1, trunc1) == (r2, term2, trunc2), f"step {step}"
            if step % 50 == 0:
                np.testing.assert_array_equal(ours, theirs)
            if term1 or trunc1:
                break
        np.testing.assert_array_equal(ours, theirs)
        assert our_return == their_return
        assert their_return != 0.0  # points were scored, so the comparison means something
    finally:
        env.close()
        raw.close()


def test_binary_and_json_give_identical_observations(pong_url: str) -> None:
    binary = AtariOpenEnvEnv(pong_url, encoding="binary")
    plain = AtariOpenEnvEnv(pong_url, encoding="json")
    try:
        assert binary.binary is True
        assert plain.binary is False
        a, info_a = binary.reset(seed=5)
        b, info_b = plain.reset(seed=5)
        np.testing.assert_array_equal(a, b)
        assert info_a == info_b
        for action in actions(6, 40, seed=5):
            a, ra, ta, _, info_a = binary.step(action)
            b, rb, tb, _, info_b = plain.step(action)
            np.testing.assert_array_equal(a, b)
            assert (ra, ta, info_a) == (rb, tb, info_b)
            assert a.dtype == b.dtype == np.uint8
            assert a.flags.writeable
    finally:
        binary.close()
        plain.close()


def test_render_returns_the_rgb_frame(pong_url: str) -> None:
    env = gym.make("openenv/Atari-v0", base_url=pong_url, render_mode="rgb_array")
    try:
        obs, _ = env.reset(seed=0)
        frame = env.render()
        assert isinstance(frame, np.ndarray)
        assert frame.shape == (210, 160, 3)
        np.testing.assert_array_equal(frame, obs)
    finally:
        env.close()


def test_bad_actions_are_refused_and_the_session_lives(pong_url: str) -> None:
    env = gym.make("openenv/Atari-v0", base_url=pong_url)
    try:
        env.reset(seed=0)
        with pytest.raises(ActionOutOfSpaceError, match="not in the action space"):
            env.step(6)
        env.step(1)
    finally:
        env.close()
    # Straight to the server, bypassing the client's check: VALIDATION_ERROR, then go on.
    with connect(http_to_ws_url(pong_url)) as ws:
        ws.send('{"type":"reset","data":{"seed":0}}')
        ws.recv()
        ws.send('{"type":"step","data":{"action_id":99}}')
        reply = ws.recv()
        assert '"VALIDATION_ERROR"' in reply
        assert "0..5" in reply
        ws.send('{"type":"step","data":{"action_id":0}}')
        assert '"observation"' in ws.recv()


def test_bad_options_are_clear_errors() -> None:
    with pytest.raises(EnvConfigError, match="unknown Atari game 'pongg'"):
        atari_server("pongg")
    with pytest.raises(EnvConfigError, match="unknown Atari game 'pongg'"):
        gym.make("openenv/Atari-v0", game="pongg")  # before any server process is started
    with pytest.raises(EnvConfigError, match="obs_type"):
        gym.make("openenv/Atari-v0", obs_type="hsv")
    with pytest.raises(EnvConfigError, match="frameskip"):
        gym.make("openenv/Atari-v0", frameskip=0)
    with pytest.raises(EnvConfigError, match="repeat_action_probability"):
        gym.make("openenv/Atari-v0", repeat_action_probability=1.5)


def test_embedded_server_with_custom_settings() -> None:
    env = gym.make(
        "openenv/Atari-v0", game="breakout", obs_type="grayscale", frameskip=2, encoding="binary"
    )
    try:
        assert env.observation_space.shape == (210, 160)
        assert env.unwrapped.get_action_meanings() == ["NOOP", "FIRE", "RIGHT", "LEFT"]  # type: ignore[attr-defined]
        env.reset(seed=0)
        _, _, _, _, info = env.step(1)
        assert info["episode_frame_number"] == 2
        assert env.unwrapped.state()["frameskip"] == 2  # type: ignore[attr-defined]
    finally:
        env.close()


def test_official_client_against_our_server_gets_json(pong_url: str) -> None:
    raw = gym.make("ALE/Pong-v5")
    client: Any = GenericEnvClient(base_url=pong_url).sync()
    try:
        result = client.reset(seed=2)
        expected, _ = raw.reset(seed=2)
        np.testing.assert_array_equal(
            np.asarray(result.observation["screen"], np.uint8).reshape(210, 160, 3), expected
        )
        assert result.observation["screen_shape"] == [210, 160, 3]
        for action in actions(6, 10, seed=2):
            result = client.step({"action_id": action})
            expected, reward, *_ = raw.step(action)
            screen = np.asarray(result.observation["screen"], np.uint8).reshape(210, 160, 3)
            np.testing.assert_array_equal(screen, expected)
            assert result.reward == reward
        assert result.observation["metadata"]["action_meanings"][1] == "FIRE"
    finally:
        client.close()
        raw.close()


def test_our_client_against_an_official_server_falls_back_to_json(
    official_pong_url: str,
) -> None:
    raw = gym.make("ALE/Pong-v5")
    env = gym.make("openenv/Atari-v0", base_url=official_pong_url)  # encoding="auto"
    try:
        assert env.unwrapped.binary is False  # type: ignore[attr-defined]
        assert env.observation_space == raw.observation_space
        assert env.action_space == raw.action_space
        assert env.unwrapped.get_action_meanings()[:2] == ["NOOP", "FIRE"]  # type: ignore[attr-defined]
        ours, info = env.reset(seed=9)
        theirs, _ = raw.reset(seed=9)
        np.testing.assert_array_equal(ours, theirs)
        assert info["action_meanings"][0] == "Action.NOOP"
        for action in actions(6, 30, seed=9):
            ours, reward, *_ = env.step(action)
            theirs, expected, *_ = raw.step(action)
            np.testing.assert_array_equal(ours, theirs)
            assert reward == expected
    finally:
        env.close()
        raw.close()


def test_binary_against_an_official_server_is_a_clear_error(official_pong_url: str) -> None:
    with pytest.raises(BinaryEncodingRefusedError, match="encoding='auto'"):
        gym.make("openenv/Atari-v0", base_url=official_pong_url, encoding="binary")
    # The refused session was closed: the official one-session server takes the next one.
    env = gym.make("openenv/Atari-v0", base_url=official_pong_url, encoding="json")
    try:
        env.reset(seed=0)
    finally:
        env.close()


def test_unknown_encoding_is_a_clear_error(pong_url: str) -> None:
    with pytest.raises(UnknownEncodingError, match="'auto', 'json' or 'binary'"):
        gym.make("openenv/Atari-v0", base_url=pong_url, encoding="msgpack")


def test_server_errors_still_arrive_on_a_binary_session(pong_url: str) -> None:
    env = AtariOpenEnvEnv(pong_url, encoding="binary")
    try:
        session = env._session
        assert session is not None
        with pytest.raises(ServerReplyError) as info:
            session.request({"type": "step", "data": {"action_id": "left"}})
        assert info.value.code == "VALIDATION_ERROR"
        state = env.state()
        assert state["game_name"] == "pong"
    finally:
        env.close()


def reset_reply(url: str) -> dict[str, Any]:
    """The ``data`` of a raw WebSocket reset reply (JSON), straight from the server."""
    with connect(http_to_ws_url(url)) as ws:
        ws.send('{"type":"reset","data":{"seed":0}}')
        return dict(json.loads(ws.recv())["data"])


def test_reset_reward_and_done_match_the_official_server(
    pong_url: str, official_pong_url: str
) -> None:
    ours, theirs = reset_reply(pong_url), reset_reply(official_pong_url)
    assert theirs["reward"] == 0.0
    assert (ours["reward"], ours["done"]) == (theirs["reward"], theirs["done"])
    assert type(ours["reward"]) is float
    env = AtariOpenEnvEnv(pong_url, encoding="binary")
    try:
        session = env._session
        assert session is not None
        reply = session.request_observation({"type": "reset", "data": {"seed": 0}})
        assert (reply.reward, reply.done) == (0.0, False)
    finally:
        env.close()
