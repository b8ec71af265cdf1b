"""OpenEnvEnv against real servers: Gymnasium semantics, checkers, and bad input."""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from pydantic import Field

import openenv_gym
from openenv_gym import OpenEnvEnv
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.errors import (
    ActionOutOfSpaceError,
    ObservationMismatchError,
    OpenEnvGymError,
    ServerConnectionError,
    SessionClosedError,
    SpaceMappingError,
    UnsupportedRenderModeError,
)
from openenv_gym.server import Action, Environment, Observation, OpenEnvServer, ServerThread, State
from openenv_gym.spaces import space_to_json
from tests.conftest import free_port


def _checker_warnings(env: gym.Env[Any, Any]) -> set[str]:
    """The warnings gymnasium's and SB3's env checkers raise on ``env``."""
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gymnasium_check_env(env)
        sb3_check_env(env, warn=True)
    return {str(w.message) for w in caught}


@pytest.mark.slow
def test_embedded_cartpole_passes_gymnasium_and_sb3_checkers() -> None:
    env = gym.make("openenv/CartPole-v1")
    try:
        remote = _checker_warnings(env.unwrapped)
    finally:
        env.close()
    # Raw CartPole's own space has infinite bounds, which the checkers warn about; the remote
    # env may warn about exactly what the raw env warns about, and nothing more.
    raw = _checker_warnings(gym.make("CartPole-v1").unwrapped)
    assert remote <= raw, f"warnings the raw env does not raise: {remote - raw}"


def test_step_returns_exact_types(cartpole_url: str) -> None:
    env = gym.make("openenv/CartPole-v1", base_url=cartpole_url)
    obs, info = env.reset(seed=3)
    assert obs.dtype == np.float32
    assert obs.shape == (4,)
    assert isinstance(info, dict)
    obs, reward, terminated, truncated, info = env.step(0)
    assert type(reward) is float
    assert type(terminated) is bool
    assert type(truncated) is bool
    assert env.observation_space.contains(obs)
    env.close()


def test_remote_cartpole_reproduces_raw_gymnasium(cartpole_url: str) -> None:
    remote = gym.make("openenv/Remote-v0", base_url=cartpole_url)
    local = gym.make("CartPole-v1")
    for seed in (0, 42):
        remote_obs, _ = remote.reset(seed=seed)
        local_obs, _ = local.reset(seed=seed)
        np.testing.assert_array_equal(remote_obs, local_obs)
        rng = np.random.default_rng(seed)
        for _ in range(600):
            action = int(rng.integers(2))
            r = remote.step(action)
            ref = local.step(action)
            np.testing.assert_array_equal(r[0], ref[0])
            assert r[1:4] == ref[1:4]
            if ref[2] or ref[3]:
                break
    remote.close()


def test_time_limit_truncation_comes_from_the_server(cartpole_url: str) -> None:
    env = gym.make("openenv/Gymnasium-v0", env_id="CartPole-v1", base_url=cartpole_url)
    env.reset(seed=0)
    # Alternate actions keep the pole up for a while; the server's TimeLimit ends at 500.
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        _, _, terminated, truncated, _ = env.step(steps % 2)
        steps += 1
    assert truncated == (steps == 500)
    assert terminated == (steps < 500)
    env.close()


def test_info_carries_server_metadata_and_state_works(cartpole_url: str) -> None:
    env = OpenEnvEnv(cartpole_url)
    env.reset(seed=0)
    env.step(1)
    assert env.state()["step_count"] == 1
    assert env.server_metadata["name"]
    env.close()


def test_action_outside_the_space_is_refused_and_nothing_is_sent(cartpole_url: str) -> None:
    env = OpenEnvEnv(cartpole_url)
    env.reset(seed=0)
    for bad in (2, -1, 0.5, "left", [0, 1]):
        with pytest.raises(ActionOutOfSpaceError, match="Discrete"):
            env.step(bad)
    assert env.state()["step_count"] == 0
    env.step(1)
    assert env.state()["step_count"] == 1
    env.close()


def test_close_is_idempotent_and_use_after_close_is_a_clear_error(cartpole_url: str) -> None:
    env = OpenEnvEnv(cartpole_url)
    env.reset()
    env.close()
    env.close()
    with pytest.raises(SessionClosedError, match="closed"):
        env.step(0)
    with pytest.raises(SessionClosedError):
        env.reset()


def test_remote_without_base_url_says_what_to_pass() -> None:
    with pytest.raises(OpenEnvGymError, match="base_url"):
        gym.make("openenv/Remote-v0")


def test_wrong_url_is_a_connection_error() -> None:
    with pytest.raises(ServerConnectionError, match="could not reach"):
        gym.make("openenv/Remote-v0", base_url=f"http://127.0.0.1:{free_port()}")


def test_rgb_render_mode_is_refused_without_an_image_or_a_rendering_server() -> None:
    server = gymnasium_server("CartPole-v1", make_kwargs={"render_mode": None})
    with ServerThread(server) as running:
        env = OpenEnvEnv(running.url)
        assert env.metadata["render_modes"] == []
        env.close()
        with pytest.raises(UnsupportedRenderModeError, match="rgb_array"):
            OpenEnvEnv(running.url, render_mode="rgb_array")


def test_cartpole_renders_remotely_like_local_cartpole() -> None:
    # The embedded server is another process: pygame is never used by two threads of one.
    env = gym.make("openenv/CartPole-v1", render_mode="rgb_array")
    local = gym.make("CartPole-v1", render_mode="rgb_array")
    try:
        assert env.metadata["render_modes"] == ["rgb_array"]
        env.reset(seed=3)
        local.reset(seed=3)
        for action in (0, 1, 1):
            env.step(action)
            local.step(action)
        frame = env.render()
        assert frame is not None
        assert frame.dtype == np.uint8
        np.testing.assert_array_equal(frame, local.render())
    finally:
        env.close()
        local.close()


# --------------------------------------------------------------------------- custom servers


class CounterAction(Action):
    delta: int = Field(ge=-1, le=1)


class CounterObservation(Observation):
    # The schema promises Discrete(4); the env below breaks that promise on purpose.
    count: int = Field(json_schema_extra={"x-space": space_to_json(spaces.Discrete(4))})


class CounterEnvironment(Environment):
    """Counts up or down; counts past 3 violate the published observation space."""

    def __init__(self) -> None:
        self.count = 0
        self.steps = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kw: Any) -> Any:
        self.count, self.steps = 0, 0
        return CounterObservation(count=0)

    def step(self, action: Any) -> Any:
        self.count += 5 if action.delta == 1 else action.delta
        self.steps += 1
        return CounterObservation(count=self.count, reward=1.0)

    @property
    def state(self) -> State:
        return State(step_count=self.steps)


def _counter_server() -> OpenEnvServer:
    return OpenEnvServer(
        CounterEnvironment, action_type=CounterAction, observation_type=CounterObservation
    )


def test_observation_that_breaks_the_schema_is_reported_with_its_field() -> None:
    with ServerThread(_counter_server()) as server:
        env = OpenEnvEnv(server.url)
        assert env.action_space == spaces.Discrete(3, start=-1)
        env.reset()
        obs, *_ = env.step(0)
        assert obs["count"] == 0
        with pytest.raises(ObservationMismatchError) as info:
            env.step(1)
        assert info.value.field == "count"
        env.close()


class FreeAction(Action):
    command: dict[str, int]


def test_unmappable_schema_field_names_the_field_and_the_fix() -> None:
    server = OpenEnvServer(
        CounterEnvironment, action_type=FreeAction, observation_type=CounterObservation
    )
    with ServerThread(server) as running:
        with pytest.raises(SpaceMappingError) as info:
            OpenEnvEnv(running.url)
        assert info.value.field == "command"
        assert "field_spaces" in str(info.value)
        # The explicit space the message points to makes it work.
        env = OpenEnvEnv(
            running.url,
            action_field_spaces={"command": spaces.Dict({"delta": spaces.Discrete(3, start=-1)})},
        )
        env.close()


def test_pydantic_models_replace_the_schema_fetch() -> None:
    with ServerThread(_counter_server()) as server:
        env = OpenEnvEnv(
            server.url, action_model=CounterAction, observation_model=CounterObservation
        )
        assert env.observation_space == spaces.Dict({"count": spaces.Discrete(4)})
        obs, _ = env.reset()
        assert env.observation_space.contains(obs)
        env.close()


def test_package_version_is_exposed() -> None:
    assert openenv_gym.__version__
