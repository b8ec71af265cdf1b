"""Gymnasium's own tools on our ids: check_env with its defaults, RecordVideo,
AtariPreprocessing, exact termination flags, specs; and the Atari server-mismatch check."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import AtariPreprocessing, RecordVideo

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs.registry import SERVED_GYMNASIUM_IDS
from openenv_gym.errors import ServerMismatchError

pytest.importorskip("pygame")


@pytest.mark.slow
@pytest.mark.parametrize("gym_id", SERVED_GYMNASIUM_IDS)
def test_check_env_passes_with_its_defaults_and_specs_match(gym_id: str) -> None:
    env = gym.make(f"openenv/{gym_id}")
    try:
        assert env.spec is not None
        local = gym.spec(gym_id)
        assert env.spec.max_episode_steps == local.max_episode_steps
        assert env.spec.reward_threshold == local.reward_threshold
        assert env.metadata["render_modes"] == ["rgb_array"]  # rendered by the server
        check_env(env.unwrapped)  # render check included: it makes a second env to render
    finally:
        env.close()


def test_terminated_and_truncated_match_raw_gymnasium_on_every_step() -> None:
    # Pendulum never terminates; MountainCar truncates at 200 unless it reaches the flag;
    # CartPole (limit 20 here) ends either way. Compare every step with the local env.
    for gym_id, limit in (("CartPole-v1", 20), ("MountainCar-v0", None)):
        kwargs = {} if limit is None else {"max_episode_steps": limit}
        remote = gym.make(f"openenv/{gym_id}", env_kwargs=kwargs, **kwargs)
        local = gym.make(gym_id, **kwargs)
        try:
            rng = np.random.default_rng(0)
            ends = 0
            for episode in range(3):
                remote.reset(seed=episode)
                local.reset(seed=episode)
                done = False
                while not done:
                    action = int(rng.integers(int(local.action_space.n)))
                    _, r_reward, r_term, r_trunc, _ = remote.step(action)
                    _, l_reward, l_term, l_trunc, _ = local.step(action)
                    assert (r_reward, r_term, r_trunc) == (float(l_reward), l_term, l_trunc)
                    assert type(r_term) is bool
                    assert type(r_trunc) is bool
                    done = l_term or l_trunc
                ends += 1
            assert ends == 3
        finally:
            remote.close()
            local.close()


def test_terminating_on_the_last_allowed_step_reports_both_flags() -> None:
    # Seed 0, always push left: CartPole-v1 falls after 11 steps. With a limit of 11 the last
    # step both terminates and truncates, as raw Gymnasium says.
    local = gym.make("CartPole-v1", max_episode_steps=11)
    local.reset(seed=0)
    steps = [local.step(0) for _ in range(11)]
    assert steps[-1][2:4] == (True, True)
    remote = gym.make("openenv/CartPole-v1", env_kwargs={"max_episode_steps": 11})
    try:
        remote.reset(seed=0)
        flags = [remote.step(0)[2:4] for _ in range(11)]
        assert flags == [s[2:4] for s in steps]
    finally:
        remote.close()
        local.close()


def test_record_video_on_remote_cartpole(tmp_path: Path) -> None:
    env = RecordVideo(
        gym.make("openenv/CartPole-v1", render_mode="rgb_array"),
        str(tmp_path),
        episode_trigger=lambda episode: True,
        disable_logger=True,
    )
    try:
        env.reset(seed=0)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done = terminated or truncated
    finally:
        env.close()
    videos = list(tmp_path.glob("*.mp4"))
    assert len(videos) == 1
    assert videos[0].stat().st_size > 1000


ale_py = pytest.importorskip("ale_py")
gym.register_envs(ale_py)


@pytest.mark.slow
def test_record_video_and_check_env_on_remote_atari(tmp_path: Path) -> None:
    env = gym.make("openenv/Atari-v0", game="pong", render_mode="rgb_array")
    try:
        assert env.metadata["render_modes"] == ["rgb_array"]  # from the observation's frame
        recorder = RecordVideo(
            env, str(tmp_path), episode_trigger=lambda episode: True, disable_logger=True
        )
        recorder.reset(seed=0)
        for _ in range(30):
            recorder.step(recorder.action_space.sample())
        recorder.close()
        assert len(list(tmp_path.glob("*.mp4"))) == 1
    finally:
        env.close()
    grayscale = gym.make("openenv/Atari-v0", game="pong", obs_type="grayscale")
    try:
        assert grayscale.metadata["render_modes"] == []  # no RGB frame to show
        check_env(grayscale.unwrapped)
    finally:
        grayscale.close()


def test_atari_preprocessing_matches_local_ale() -> None:
    settings = {"frameskip": 1, "repeat_action_probability": 0.0}
    remote = AtariPreprocessing(gym.make("openenv/Atari-v0", game="pong", **settings))
    local = AtariPreprocessing(gym.make("ALE/Pong-v5", **settings))
    try:
        assert remote.unwrapped.frameskip == 1
        remote_obs, _ = remote.reset(seed=3)
        local_obs, _ = local.reset(seed=3)
        np.testing.assert_array_equal(remote_obs, local_obs)
        assert remote_obs.shape == (84, 84)
        rng = np.random.default_rng(0)
        for _ in range(20):
            action = int(rng.integers(6))
            r_obs, r_reward, r_term, r_trunc, _ = remote.step(action)
            l_obs, l_reward, l_term, l_trunc, _ = local.step(action)
            np.testing.assert_array_equal(r_obs, l_obs)
            assert (r_reward, r_term, r_trunc) == (l_reward, l_term, l_trunc)
    finally:
        remote.close()
        local.close()


def test_atari_preprocessing_refuses_a_server_that_skips_frames() -> None:
    env = gym.make("openenv/Atari-v0", game="pong")  # frameskip=4 on the server
    try:
        assert env.unwrapped.frameskip == 4
        with pytest.raises(ValueError, match="frame-skipping"):
            AtariPreprocessing(env)
    finally:
        env.close()


def test_a_game_mismatch_with_an_official_server_raises_at_reset() -> None:
    from tests.envs.official_atari import official_atari_server

    with official_atari_server() as url:
        env = gym.make("openenv/Atari-v0", base_url=url, game="breakout")
        try:
            assert env.action_space.n == 4  # breakout's action set, derived locally
            with pytest.raises(ServerMismatchError) as info:
                env.reset(seed=0)
            message = str(info.value)
            assert "metadata.game_name='pong'" in message
            assert "legal_actions=[0, 1, 2, 3, 4, 5]" in message
            assert "game='pong'" in message  # the call that fits the server
        finally:
            env.close()
        env = gym.make("openenv/Atari-v0", base_url=url, game="pong")
        try:
            env.reset(seed=0)  # the matching game passes
            assert env.action_space.n == 6
        finally:
            env.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("gym_id", "kwargs"),
    [
        ("openenv/Atari-v0", {"game": "pong"}),
        ("openenv/Chess-v0", {"opponent": "random"}),
        ("openenv/Gymnasium-v0", {"env_id": "Acrobot-v1"}),
    ],
)
def test_check_env_passes_with_its_defaults_on_the_other_ids(
    gym_id: str, kwargs: dict[str, str]
) -> None:
    pytest.importorskip("chess")
    env = gym.make(gym_id, **kwargs)
    try:
        assert env.metadata["render_modes"]  # rgb_array (Atari, Acrobot) or ansi (chess)
        check_env(env.unwrapped)
    finally:
        env.close()
