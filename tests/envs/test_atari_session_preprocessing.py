"""Atari preprocessing chosen per session on one shared server (reset key ``preprocessing``,
schema key ``x-session-preprocessing``): raw, preprocessed single and batched vector envs at
once on one raw server; frames equal to a server started with the same flags; official
clients still get raw frames; servers without the capability, changed and bad options are
typed errors."""

from __future__ import annotations

import json
import os
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("ale_py")
pytest.importorskip("cv2")

from websockets.sync.client import connect

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs.atari import AtariEnvironment
from openenv_gym.envs.atari.models import PREPROCESSING_RESET_KEY, X_SESSION_PREPROCESSING
from openenv_gym.envs.atari.preprocessing import PREPROCESSING_NAMES
from openenv_gym.errors import (
    EnvConfigError,
    ObservationMismatchError,
    ServerMismatchError,
    ServerReplyError,
)
from openenv_gym.wire.batch import BATCH_SUBPROTOCOL, parse_batch_result
from openenv_gym.wire.shared_memory import SHM_DIR
from tests.envs.conftest import actions

#: What the preprocessed sessions ask for (SB3's AtariWrapper, no random no-ops).
OPTIONS: dict[str, Any] = {"stack_num": 4, "episodic_life": True, "reward_clip": True}
DETERMINISTIC: dict[str, Any] = {"noop_max": 0, "repeat_action_probability": 0.0}


def ws_url(url: str) -> str:
    return url.replace("http://", "ws://") + "/ws"


def request(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
    """One plain OpenEnv JSON frame and its (JSON) reply, as an official client sends it."""
    ws.send(json.dumps(message))
    reply = json.loads(ws.recv())
    assert isinstance(reply, dict)
    return reply


# --------------------------------------------------------------------------- the environment


def test_the_first_reset_chooses_and_later_ones_may_only_repeat() -> None:
    env = AtariEnvironment("pong", repeat_action_probability=0.0)
    try:
        first = env.reset(seed=0, preprocessing={"stack_num": 2, "noop_max": 0})
        assert first.screen_shape == [2, 84, 84]
        assert np.asarray(first.screen).dtype == np.uint8
        assert env.state.frameskip == 4
        step = env.step(env.action_model(action_id=0))
        assert step.episode_frame_number - first.episode_frame_number == 4  # frame_skip
        assert step.game_over is False  # type: ignore[attr-defined]
        assert env.reset(preprocessing={"stack_num": 2, "noop_max": 0}).screen_shape == [2, 84, 84]
        assert env.reset().screen_shape == [2, 84, 84]  # no key: the session's own
        fixed = "it sends frames preprocessed with stack_num=2, noop_max=0; this reset asks "
        with pytest.raises(
            EnvConfigError, match=fixed + "for frames preprocessed with stack_num=4"
        ):
            env.reset(preprocessing={"stack_num": 4})
        assert env.reset(seed=1).screen_shape == [2, 84, 84]  # nothing lost
    finally:
        env.close()
    raw = AtariEnvironment("pong")
    try:
        assert raw.reset(seed=0).screen_shape == [210, 160, 3]
        with pytest.raises(EnvConfigError, match="it sends raw ALE frames; this reset asks for"):
            raw.reset(preprocessing={"stack_num": 4})
        schema = raw.observation_model.model_json_schema()
        assert schema[X_SESSION_PREPROCESSING] == list(PREPROCESSING_NAMES)
    finally:
        raw.close()


@pytest.mark.parametrize(
    ("preprocessing", "match"),
    [
        ({"stack_num": 0}, "stack_num to be an integer >= 1, got 0"),
        ({"episodic_life": "yes"}, "episodic_life to be True or False, got 'yes'"),
        ({"stack_nums": 4}, r"unknown preprocessing option\(s\) \['stack_nums'\]"),
        ("stack_num=4", "to be an object of envpool options"),
    ],
)
def test_bad_session_options_are_clear_errors_and_nothing_is_lost(
    preprocessing: Any, match: str
) -> None:
    env = AtariEnvironment("pong")
    try:
        with pytest.raises(EnvConfigError, match=match):
            env.reset(seed=0, preprocessing=preprocessing)
        # The session has chosen nothing yet: good options still work.
        assert env.reset(seed=0, preprocessing={"stack_num": 3}).screen_shape == [3, 84, 84]
    finally:
        env.close()


# --------------------------------------------------------------------------- one shared server


@pytest.mark.slow
def test_one_raw_server_serves_raw_and_preprocessed_envs_at_once(served: Any) -> None:
    from gymnasium.utils.env_checker import check_env

    url = served("pong", repeat_action_probability=0.0)

    def server_files() -> set[str]:
        assert SHM_DIR is not None
        return {n for n in os.listdir(SHM_DIR) if n.startswith(f"openenv-gym-{os.getpid()}-")}

    raw = gym.make("openenv/Atari-v0", base_url=url)
    single = gym.make("openenv/Atari-v0", base_url=url, **OPTIONS)
    vector = gym.make_vec("openenv/Atari-v0", num_envs=4, base_url=url, stack_num=4)
    try:
        assert raw.observation_space == gym.spaces.Box(0, 255, (210, 160, 3), np.uint8)
        assert single.observation_space == gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
        assert vector.single_observation_space == single.observation_space
        assert single.unwrapped.session_preprocessing["episodic_life"] is True  # type: ignore[attr-defined]
        assert raw.unwrapped.session_preprocessing is None  # type: ignore[attr-defined]
        raw_obs, _ = raw.reset(seed=0)
        obs, info = single.reset(seed=0)
        batch, _ = vector.reset(seed=0)
        assert raw_obs.shape == (210, 160, 3)
        assert obs.shape == (4, 84, 84)
        assert obs.dtype == np.uint8
        assert info["game_over"] is False
        assert batch.shape == (4, 4, 84, 84)
        assert batch.dtype == np.uint8
        for action in actions(6, 30):
            raw_obs, *_ = raw.step(action)
            obs, reward, *_, info = single.step(action)
            batch, *_ = vector.step(np.full(4, action))
            assert raw_obs.shape == (210, 160, 3)
            assert obs.shape == (4, 84, 84)
            assert batch.shape == (4, 4, 84, 84)
            assert reward in (-1.0, 0.0, 1.0)
        # Each sub-env of the vector env is its own session, seeded 0..3.
        assert not np.array_equal(batch[0], np.zeros_like(batch[0]))
        if SHM_DIR is not None:
            assert server_files(), "a batch of four stacked frames should use shared memory"
        check_env(single.unwrapped, skip_render_check=True)
    finally:
        raw.close()
        single.close()
        vector.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("game", "options", "steps"),
    [
        ("pong", {"stack_num": 4}, 300),
        ("breakout", {"episodic_life": True, "reward_clip": True, "stack_num": 2}, 600),
    ],
)
@pytest.mark.parametrize(
    "base",
    [{}, {"stack_num": 3, "noop_max": 0}],
    ids=["raw-server", "server-preprocessing-otherwise"],  # the second reuses its emulator
)
def test_session_frames_equal_a_server_started_with_the_flags(
    served: Any, game: str, options: dict[str, Any], steps: int, base: dict[str, Any]
) -> None:
    shared_url = served(game, repeat_action_probability=0.0, **base)
    flagged_url = served(game, **options, **DETERMINISTIC)
    ours = gym.make("openenv/Atari-v0", base_url=shared_url, game=game, **options, **DETERMINISTIC)
    theirs = gym.make(
        "openenv/Atari-v0", base_url=flagged_url, game=game, **options, **DETERMINISTIC
    )
    try:
        assert ours.unwrapped.session_preprocessing is not None  # type: ignore[attr-defined]
        # The flagged server already preprocesses so: nothing extra is sent.
        assert theirs.unwrapped.session_preprocessing is None  # type: ignore[attr-defined]
        assert theirs.unwrapped.reset_kwargs == {}  # type: ignore[attr-defined]
        assert ours.observation_space == theirs.observation_space
        obs, _ = ours.reset(seed=7)
        want, _ = theirs.reset(seed=7)
        np.testing.assert_array_equal(obs, want)
        life_ends = 0
        for step, action in enumerate(actions(ours.action_space.n, steps, seed=3)):  # type: ignore[attr-defined]
            got = ours.step(action)
            expected = theirs.step(action)
            np.testing.assert_array_equal(got[0], expected[0], err_msg=f"{game} step {step}")
            assert got[1:4] == expected[1:4]
            for key in ("lives", "raw_reward", "game_over", "episode_frame_number"):
                assert got[4][key] == expected[4][key], key
            if got[2] or got[3]:
                life_ends += not got[4]["game_over"]
                np.testing.assert_array_equal(ours.reset()[0], theirs.reset()[0])
        if game == "breakout":
            assert life_ends >= 1  # the run saw a life loss end an episode
    finally:
        ours.close()
        theirs.close()


@pytest.mark.slow
def test_sb3_and_the_pool_carry_the_options_to_a_raw_server(served: Any) -> None:
    from openenv_gym import make_pool
    from openenv_gym.integrations.sb3 import make_vec_env

    url = served("breakout", repeat_action_probability=0.0)
    env_kwargs = {"base_url": url, "game": "breakout", **OPTIONS, "noop_max": 0}
    vec = make_vec_env("openenv/Atari-v0", n_envs=2, seed=0, env_kwargs=env_kwargs, monitor=False)
    try:
        assert vec.observation_space.shape == (4, 84, 84)
        assert vec.reset().shape == (2, 4, 84, 84)
        life_end = None
        for action in actions(4, 800, seed=2):
            obs, rewards, dones, infos = vec.step(np.array([action, action]))
            assert set(np.unique(rewards)) <= {-1.0, 0.0, 1.0}
            lost = [i for i in np.flatnonzero(dones) if not infos[i]["game_over"]]
            if lost:  # a life loss ended it; the same-step reset kept the options
                life_end = infos[lost[0]]
                assert obs.shape == (2, 4, 84, 84)
                break
        assert life_end is not None
        assert life_end["terminal_observation"].shape == (4, 84, 84)
    finally:
        vec.close()
    pool = make_pool("openenv/Atari-v0", 4, batch_size=2, base_url=url, stack_num=4)
    try:
        assert pool.observation_space.shape == (4, 84, 84)
        pool.async_reset()
        for _ in range(5):
            obs, _, _, _, info = pool.recv()
            assert obs.shape == (2, 4, 84, 84)
            pool.send(np.zeros(2, np.int64), info["env_id"])
    finally:
        pool.close()


# --------------------------------------------------------------------------- other clients


@pytest.mark.slow
def test_an_official_client_beside_a_preprocessed_session_still_gets_raw_frames(
    served: Any,
) -> None:
    url = served("pong")
    preprocessed = gym.make("openenv/Atari-v0", base_url=url, stack_num=4)
    try:
        obs, _ = preprocessed.reset(seed=0)
        assert obs.shape == (4, 84, 84)
        with connect(ws_url(url)) as ws:  # plain OpenEnv JSON, no subprotocol
            first = request(ws, {"type": "reset", "data": {"seed": 0}})
            assert first["type"] == "observation"
            assert first["data"]["observation"]["screen_shape"] == [210, 160, 3]
            assert len(first["data"]["observation"]["screen"]) == 210 * 160 * 3
            step = request(ws, {"type": "step", "data": {"action_id": 0}})
            assert len(step["data"]["observation"]["screen"]) == 210 * 160 * 3
            assert "game_over" not in step["data"]["observation"]
            # Bad values from a plain client: an error reply, the session lives on.
            for bad, match in [
                ({"stack_num": 0}, "stack_num to be an integer >= 1"),
                ({"img_size": 84}, "unknown preprocessing option"),
            ]:
                error = request(ws, {"type": "reset", "data": {PREPROCESSING_RESET_KEY: bad}})
                assert error["type"] == "error"
                assert match in error["data"]["message"]
            again = request(ws, {"type": "reset", "data": {"seed": 1}})
            assert again["data"]["observation"]["screen_shape"] == [210, 160, 3]
        obs, *_ = preprocessed.step(0)
        assert obs.shape == (4, 84, 84)
    finally:
        preprocessed.close()


@pytest.mark.slow
def test_a_server_without_the_capability_is_a_mismatch_at_make() -> None:
    pytest.importorskip("openenv")
    from tests.envs.official_atari import official_atari_server

    with official_atari_server() as url:
        with pytest.raises(
            ServerMismatchError, match=r"no 'x-session-preprocessing'.*--stack-num 4"
        ):
            gym.make("openenv/Atari-v0", base_url=url, stack_num=4)
        with pytest.raises(ServerMismatchError, match=r"sends \(210, 160, 3\) frames"):
            gym.make_vec("openenv/Atari-v0", num_envs=2, base_url=url, stack_num=4)
        with gym.make("openenv/Atari-v0", base_url=url) as env:  # no options: raw frames
            assert env.observation_space.shape == (210, 160, 3)


@pytest.mark.slow
def test_other_options_at_a_later_reset_are_a_typed_error(served: Any) -> None:
    url = served("pong")
    with gym.make("openenv/Atari-v0", base_url=url, stack_num=4) as env:
        env.reset(seed=0)
        with pytest.raises(ServerReplyError, match="fixed at its first reset") as caught:
            env.reset(options={PREPROCESSING_RESET_KEY: {"stack_num": 2}})
        assert caught.value.code == "EXECUTION_ERROR"
        obs, _ = env.reset(seed=1)  # the session goes on with its own
        assert obs.shape == (4, 84, 84)
    with pytest.raises(EnvConfigError, match="stack_num to be an integer >= 1"):
        gym.make("openenv/Atari-v0", base_url=url, stack_num=0)  # refused before any session


@pytest.mark.slow
def test_a_batch_whose_sessions_differ_in_shape_is_a_typed_error(served: Any) -> None:
    """A batch connection whose sessions were reset with other options: the server answers
    every field of every session (nothing lost), the client refuses the odd shape."""
    url = served("pong")
    with connect(ws_url(url), subprotocols=[BATCH_SUBPROTOCOL]) as ws:
        ws.send(json.dumps({"type": "batch_open", "data": {"sessions": 2, "truncated_key": None}}))
        assert json.loads(ws.recv())["type"] == "batch_opened"
        ops = [
            {"reset": {"seed": 0}},
            {"reset": {"seed": 0, PREPROCESSING_RESET_KEY: {"stack_num": 4}}},
        ]
        ws.send(json.dumps({"type": "batch_step", "data": {"ops": ops}}))
        result = parse_batch_result(ws.recv())
    assert [len(screen) for screen in result.fields["screen"]] == [210 * 160 * 3, 4 * 84 * 84]
    assert result.fields["game_over"] == [None, False]
    with (
        gym.make("openenv/Atari-v0", base_url=url) as env,
        pytest.raises(ObservationMismatchError, match="screen"),
    ):
        env.unwrapped.observation_codec.decode_batch(result.fields, 2)  # type: ignore[attr-defined]


@pytest.mark.slow
def test_reopened_sessions_ask_for_the_options_again(served: Any) -> None:
    """The server drops idle sessions; ``reconnect=True`` reopens them, and their first reset
    carries the options (raw frames would not decode into the (4, 84, 84) space)."""
    import time

    from openenv_gym.vector import RECONNECTED_KEY

    url = served("pong", idle_timeout=0.5)
    envs = gym.make_vec("openenv/Atari-v0", num_envs=2, base_url=url, stack_num=4, reconnect=True)
    try:
        envs.reset(seed=0)
        envs.step(np.zeros(2, np.int64))
        time.sleep(1.5)  # past the idle timeout: the server closes both sessions
        obs, _, _, truncated, info = envs.step(np.zeros(2, np.int64))
        assert info[RECONNECTED_KEY].tolist() == [True, True]
        assert truncated.tolist() == [True, True]
        obs, _, _, truncated, info = envs.step(np.zeros(2, np.int64))  # the reopened sessions
        assert obs.shape == (2, 4, 84, 84)
        assert RECONNECTED_KEY not in info
        assert info["game_over"].tolist() == [False, False]  # preprocessed replies' field
    finally:
        envs.close()
