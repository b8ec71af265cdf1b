"""Server-side Atari preprocessing (envpool's options): spaces, defaults, bad options, and
frame-for-frame equality with Gymnasium's ``AtariPreprocessing`` + ``FrameStackObservation``
and with SB3's ``AtariWrapper``, through a real server."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import httpx
import numpy as np
import pytest

pytest.importorskip("ale_py")
pytest.importorskip("cv2")

import ale_py
from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs.atari import AtariEnvironment
from openenv_gym.envs.atari.options import ATARI_OPTIONS
from openenv_gym.envs.atari.preprocessing import Preprocessing
from openenv_gym.errors import EnvConfigError
from openenv_gym.server import ServerThread
from tests.envs.conftest import actions

gym.register_envs(ale_py)

#: The settings of the equality runs: no random no-ops, no sticky actions.
DETERMINISTIC: dict[str, Any] = {"noop_max": 0, "repeat_action_probability": 0.0}


def test_no_option_keeps_raw_ale_v5() -> None:
    env = AtariEnvironment("pong")
    try:
        assert env.preprocessing is None
        assert env.reset(seed=0).screen_shape == [210, 160, 3]
        assert "raw_reward" not in env.observation_model.model_fields
    finally:
        env.close()


def test_one_option_turns_on_envpool_defaults() -> None:
    env = AtariEnvironment("breakout", stack_num=2, gray_scale=False, repeat_action_probability=0)
    try:
        settings = env.preprocessing
        assert settings == Preprocessing(stack_num=2, gray_scale=False)
        first = env.reset(seed=0)
        assert first.screen_shape == [6, 84, 84]  # envpool's colour layout: 3 * stack_num
        assert env.state.frameskip == 4
        step = env.step(env.action_model(action_id=1))
        assert step.episode_frame_number - first.episode_frame_number == 4
        assert step.game_over is False  # type: ignore[attr-defined]
    finally:
        env.close()


@pytest.mark.parametrize(
    ("gray_scale", "size"), [(False, (210, 160)), (False, (50, 60)), (True, (210, 160))]
)
def test_colour_and_full_size_frames_are_the_pooled_screens_stacked(
    gray_scale: bool, size: tuple[int, int]
) -> None:
    """The paths the equality runs do not take (colour, no resize) against the emulator's
    own screens: each step's newest frame is the max of its last two frames, resized, channel
    first, behind the previous steps' frames (the pipeline reuses its buffers every step)."""
    import cv2

    def processed(screen: np.ndarray) -> np.ndarray:
        if size != (210, 160):
            screen = cv2.resize(screen, size[::-1], interpolation=cv2.INTER_AREA)
        return screen.reshape(1, *size) if gray_scale else screen.transpose(2, 0, 1)

    env = AtariEnvironment(
        "breakout",
        gray_scale=gray_scale,
        img_height=size[0],
        img_width=size[1],
        stack_num=3,
        noop_max=0,
        use_fire_reset=False,
        repeat_action_probability=0,
    )
    twin = ale_py.env.AtariEnv("breakout", frameskip=1, repeat_action_probability=0.0)
    grab = twin.ale.getScreenGrayscale if gray_scale else twin.ale.getScreenRGB
    try:
        got = np.asarray(env.reset(seed=3).screen).reshape(env.shape)
        twin.reset(seed=3)
        stack = [processed(grab())] * 3
        np.testing.assert_array_equal(got, np.concatenate(stack))
        for action in actions(4, 25, seed=1):
            screens = []
            for _ in range(4):
                twin.step(action)
                screens.append(grab())
            stack = [*stack[1:], processed(np.maximum(screens[-2], screens[-1]))]
            got = np.asarray(env.step(env.action_model(action_id=action)).screen)
            np.testing.assert_array_equal(got.reshape(env.shape), np.concatenate(stack))
    finally:
        env.close()
        twin.close()


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"stack_num": 0}, "stack_num to be an integer >= 1, got 0"),
        ({"noop_max": -1}, "noop_max to be an integer >= 0"),
        ({"frame_skip": 2.5}, "frame_skip to be an integer"),
        ({"episodic_life": "yes"}, "episodic_life to be True or False, got 'yes'"),
        ({"img_height": True}, "img_height to be an integer"),
        ({"stack_num": 4, "obs_type": "ram"}, "obs_type='ram' has no frames"),
        ({"stack_nums": 4}, "unknown Atari option"),
    ],
)
def test_bad_options_are_clear_errors(options: dict[str, Any], match: str) -> None:
    with pytest.raises(EnvConfigError, match=match):
        AtariEnvironment("pong", **options)


def test_serve_flags_round_trip() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    ATARI_OPTIONS.add_arguments(parser)
    argv = ATARI_OPTIONS.to_argv({"stack_num": 4, "episodic_life": True, "reward_clip": False})
    assert argv == ["--stack-num", "4", "--episodic-life", "True", "--reward-clip", "False"]
    parsed = ATARI_OPTIONS.from_namespace(parser.parse_args(argv))
    assert (parsed["stack_num"], parsed["episodic_life"], parsed["reward_clip"]) == (4, True, False)
    assert parsed["gray_scale"] is None  # unset: envpool's default when preprocessing is on
    with pytest.raises(SystemExit):
        parser.parse_args(["--episodic-life", "maybe"])


def gymnasium_reference(game: str) -> gym.Env[Any, Any]:
    env = gym.make(f"ALE/{game}-v5", frameskip=1, repeat_action_probability=0.0)
    return FrameStackObservation(
        AtariPreprocessing(env, noop_max=0, frame_skip=4, screen_size=84), stack_size=4
    )


@pytest.mark.slow
@pytest.mark.parametrize(("game", "steps"), [("Pong", 400), ("Breakout", 400)])
def test_frames_equal_gymnasium_atari_preprocessing(served: Any, game: str, steps: int) -> None:
    url = served(game.lower(), use_fire_reset=False, **DETERMINISTIC)
    ours = gym.make("openenv/Atari-v0", base_url=url, game=game.lower())
    reference = gymnasium_reference(game)
    try:
        assert ours.observation_space == reference.observation_space
        obs, info = ours.reset(seed=3)
        expected, _ = reference.reset(seed=3)
        np.testing.assert_array_equal(obs, expected)
        lives = [info["lives"]]
        for step, action in enumerate(actions(ours.action_space.n, steps)):  # type: ignore[attr-defined]
            obs, reward, terminated, truncated, info = ours.step(action)
            want, want_reward, want_terminated, want_truncated, want_info = reference.step(action)
            assert (reward, terminated, truncated) == (want_reward, want_terminated, want_truncated)
            assert info["lives"] == want_info["lives"]
            assert info["raw_reward"] == reward  # no reward_clip
            lives.append(info["lives"])
            if terminated or truncated:  # Gymnasium repeats the previous frame there
                break
            np.testing.assert_array_equal(obs, want, err_msg=f"{game} step {step}")
        if game == "Breakout":
            assert min(lives) < max(lives)  # the run saw a life lost
        with pytest.raises(EnvConfigError, match=r"needs the raw 210x160 screen.*\(4, 84, 84\)"):
            ours.unwrapped.ale.getScreenGrayscale()  # type: ignore[attr-defined]
    finally:
        ours.close()
        reference.close()


@pytest.mark.slow
@pytest.mark.parametrize(("game", "steps"), [("Breakout", 1500), ("Pong", 1200)])
def test_life_loss_ends_and_clips_as_sb3_atari_wrapper(served: Any, game: str, steps: int) -> None:
    """SB3's AtariWrapper (no no-ops): episodic life, fire reset, clipped rewards; frames
    differ only by the grayscale conversion (ALE's palette vs cv2 on the max-pooled RGB)."""
    from stable_baselines3.common.atari_wrappers import AtariWrapper

    url = served(game.lower(), episodic_life=True, reward_clip=True, stack_num=1, **DETERMINISTIC)
    ours = gym.make("openenv/Atari-v0", base_url=url, game=game.lower())
    reference = AtariWrapper(
        gym.make(f"ALE/{game}-v5", frameskip=1, repeat_action_probability=0.0), noop_max=0
    )
    try:
        obs, _ = ours.reset(seed=5)
        want, _ = reference.reset(seed=5)
        diffs = [np.abs(obs[0].astype(int) - want[..., 0].astype(int))]
        life_ends = game_overs = clipped = 0
        for action in actions(ours.action_space.n, steps, seed=1):  # type: ignore[attr-defined]
            obs, reward, terminated, truncated, info = ours.step(action)
            want, want_reward, want_terminated, want_truncated, _ = reference.step(action)
            assert (reward, terminated, truncated) == (want_reward, want_terminated, want_truncated)
            assert reward == np.sign(info["raw_reward"])
            clipped += reward != 0
            if not (terminated or truncated):
                diffs.append(np.abs(obs[0].astype(int) - want[..., 0].astype(int)))
                continue
            life_ends += not info["game_over"]
            game_overs += info["game_over"]
            obs, _ = ours.reset()
            want, _ = reference.reset()
            diffs.append(np.abs(obs[0].astype(int) - want[..., 0].astype(int)))
        if game == "Breakout":
            assert life_ends >= 2
            assert game_overs >= 1
        else:  # Pong has no lives: only a lost match ends an episode
            assert life_ends == 0
            assert clipped > 0
        stacked = np.stack(diffs)
        assert np.count_nonzero(stacked) / stacked.size < 0.005
    finally:
        ours.close()
        reference.close()


@pytest.mark.slow
def test_sb3_make_vec_env_carries_the_options_and_life_loss_goes_on(served: Any) -> None:
    """The batched SB3 VecEnv on a preprocessing server: (4, 84, 84) frames, a life loss
    ends the episode (terminal_observation) and the next one goes on with the same game."""
    from openenv_gym.integrations.sb3 import make_vec_env

    url = served("breakout", episodic_life=True, reward_clip=True, **DETERMINISTIC)
    vec = make_vec_env(None, n_envs=2, seed=0, env_kwargs={"base_url": url}, monitor=False)
    try:
        assert vec.observation_space.shape == (4, 84, 84)
        obs = vec.reset()
        assert obs.shape == (2, 4, 84, 84)
        assert obs.dtype == np.uint8
        life_end: dict[str, Any] | None = None
        for action in actions(4, 800, seed=2):
            obs, rewards, dones, infos = vec.step(np.array([action, action]))
            assert set(np.unique(rewards)) <= {-1.0, 0.0, 1.0}
            lost = [i for i in np.flatnonzero(dones) if not infos[i]["game_over"]]
            if lost:
                life_end, index = infos[lost[0]], lost[0]
                break
        assert life_end is not None
        assert life_end["terminal_observation"].shape == (4, 84, 84)
        assert 0 < life_end["lives"] < 5
        # The next episode goes on with the same game: the lives are not back to 5.
        assert vec.reset_infos[index]["lives"] == life_end["lives"]
        assert vec.reset_infos[index]["game_over"] is False
    finally:
        vec.close()


@pytest.mark.slow
def test_the_pool_gets_preprocessed_frames(served: Any) -> None:
    from openenv_gym import make_pool

    url = served("pong", stack_num=4, **DETERMINISTIC)
    pool = make_pool(None, 4, batch_size=2, base_url=url)
    try:
        assert pool.observation_space.shape == (4, 84, 84)  # one sub-env, as envpool
        pool.async_reset()
        for _ in range(10):
            obs, _, _, _, info = pool.recv()
            assert obs.shape == (2, 4, 84, 84)
            assert obs.dtype == np.uint8
            assert info["game_over"].dtype == bool
            pool.send(np.zeros(2, np.int64), info["env_id"])
    finally:
        pool.close()


def older_server(game: str, **options: Any) -> Any:
    """Our Atari server as released before per-session preprocessing: its schema publishes
    its own preprocessing (``x-preprocessing``) but not ``x-session-preprocessing``."""
    from pydantic import ConfigDict

    from openenv_gym.envs.atari.models import X_PREPROCESSING, AtariState
    from openenv_gym.server.app import probed_server
    from openenv_gym.spaces.serialization import X_OBSERVATION_KEY

    probe = AtariEnvironment(game, **options)
    published = probe.observation_model.model_json_schema()[X_PREPROCESSING]
    probe.close()
    extra = {X_OBSERVATION_KEY: "screen", X_PREPROCESSING: published}
    observation = type(
        "AtariObservation",
        (probe.observation_model,),
        {"model_config": ConfigDict(json_schema_extra=extra)},  # type: ignore[typeddict-item]
    )
    return probed_server(
        lambda: AtariEnvironment(game, **options),
        state_type=AtariState,
        observation_type=observation,
    )


@pytest.mark.slow
def test_options_that_do_not_fit_an_older_server_are_a_clear_error() -> None:
    from openenv_gym.envs.atari.models import X_SESSION_PREPROCESSING
    from openenv_gym.errors import ServerMismatchError

    with ServerThread(older_server("pong")) as raw_server:
        raw = raw_server.url
        schema = httpx.get(raw + "/schema").json()["observation"]
        assert X_SESSION_PREPROCESSING not in schema
        with pytest.raises(ServerMismatchError, match=r"sends \(210, 160, 3\) frames, not the"):
            gym.make("openenv/Atari-v0", base_url=raw, stack_num=4)
        with pytest.raises(ServerMismatchError, match="serve atari --stack-num 4"):
            gym.make_vec("openenv/Atari-v0", num_envs=2, base_url=raw, stack_num=4)
        with gym.make("openenv/Atari-v0", base_url=raw) as env:  # no options: what it sends
            assert env.unwrapped.server_preprocessing == {}  # type: ignore[attr-defined]
    with ServerThread(older_server("pong", stack_num=2)) as stacked_server:
        stacked = stacked_server.url
        env = gym.make("openenv/Atari-v0", base_url=stacked, stack_num=2)  # they fit
        assert env.observation_space.shape == (2, 84, 84)
        assert env.unwrapped.server_preprocessing["episodic_life"] is False  # type: ignore[attr-defined]
        env.close()
        # Same frames, other behaviour: life loss as episode end, clipped rewards.
        with pytest.raises(
            ServerMismatchError, match=r"episodic_life=False, reward_clip=False, not"
        ):
            gym.make(
                "openenv/Atari-v0",
                base_url=stacked,
                stack_num=2,
                episodic_life=True,
                reward_clip=True,
            )
        with pytest.raises(ServerMismatchError, match="--episodic-life"):
            gym.make_vec(
                "openenv/Atari-v0", num_envs=2, base_url=stacked, stack_num=2, episodic_life=True
            )


@pytest.mark.slow
def test_our_server_takes_other_options_per_session(served: Any) -> None:
    stacked = served("pong", stack_num=2)
    with gym.make("openenv/Atari-v0", base_url=stacked, stack_num=2) as env:  # its own: as is
        assert env.unwrapped.reset_kwargs == {}  # type: ignore[attr-defined]
        assert env.reset(seed=0)[0].shape == (2, 84, 84)
    with gym.make(
        "openenv/Atari-v0", base_url=stacked, stack_num=2, episodic_life=True, reward_clip=True
    ) as env:
        asked = env.unwrapped.reset_kwargs["preprocessing"]  # type: ignore[attr-defined]
        assert (asked["stack_num"], asked["episodic_life"], asked["reward_clip"]) == (2, True, True)
        obs, info = env.reset(seed=0)
        assert obs.shape == (2, 84, 84)
        assert info["game_over"] is False
