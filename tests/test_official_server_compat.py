"""Our client against the official ``openenv`` server (0.10.0), under uvicorn on 127.0.0.1.

The other direction (the official client against our server) lives in tests/server/.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from openenv.core.env_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import CapacityReachedError
from tests.official_peer import serve_official_app


class GuessAction(Action):
    guess: int = Field(ge=0, le=9, description="a digit")


class GuessObservation(Observation):
    hint: Literal["start", "low", "high", "correct"] = "start"
    attempts: int = Field(default=0, ge=0, le=20)
    last_guess: float = Field(default=-1.0, ge=-1.0, le=9.0)


class GuessEnvironment(Environment):
    """Guess a seeded digit; hints say whether the guess was low or high."""

    def __init__(self) -> None:
        super().__init__()
        self._target = 0
        self._state = State(step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> GuessObservation:
        self._target = int(np.random.default_rng(seed).integers(10))
        self._state = State(episode_id=episode_id, step_count=0)
        return GuessObservation()

    def step(self, action: GuessAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        self._state.step_count += 1
        attempts = self._state.step_count
        if action.guess == self._target:
            hint = "correct"
        else:
            hint = "low" if action.guess < self._target else "high"
        return GuessObservation(
            hint=hint,
            attempts=attempts,
            last_guess=float(action.guess),
            reward=1.0 if hint == "correct" else -0.1,
            done=hint == "correct" or attempts >= 20,
            metadata={"target_known": False},
        )

    @property
    def state(self) -> State:
        return self._state


@pytest.fixture(scope="module")
def official_url() -> Iterator[str]:
    """The official FastAPI server with its default of ONE concurrent session."""
    app = create_fastapi_app(GuessEnvironment, GuessAction, GuessObservation)
    with serve_official_app(app, ws="websockets") as url:
        yield url


def play(env: gym.Env[Any, Any], seed: int) -> list[tuple[Any, ...]]:
    """Binary search for the digit; returns the transitions."""
    obs, _ = env.reset(seed=seed)
    low, high, trajectory = 0, 9, []
    while True:
        guess = (low + high) // 2
        obs, reward, terminated, truncated, info = env.step(guess)
        trajectory.append((guess, obs, reward, terminated, truncated, info))
        if terminated or truncated:
            return trajectory
        if obs["hint"] == 1:  # "low"
            low = guess + 1
        else:
            high = guess - 1


def test_spaces_derived_from_the_official_schema(official_url: str) -> None:
    env = gym.make("openenv/Remote-v0", base_url=official_url)
    try:
        assert env.action_space == spaces.Discrete(10)
        assert list(env.observation_space.spaces) == ["hint", "attempts", "last_guess"]
        assert env.observation_space["hint"] == spaces.Discrete(4)
        assert env.observation_space["attempts"] == spaces.Discrete(21)
        assert isinstance(env.observation_space["last_guess"], spaces.Box)
    finally:
        env.close()


def test_our_client_plays_against_the_official_server(official_url: str) -> None:
    env = gym.make("openenv/Remote-v0", base_url=official_url)
    try:
        assert env.unwrapped.form == "websocket"  # plain OpenEnv JSON frames at /ws
        first = play(env, seed=5)
        again = play(env, seed=5)
        _guess, obs, reward, terminated, truncated, info = first[-1]
        assert terminated is True
        assert truncated is False
        assert reward == 1.0
        assert info["target_known"] is False
        assert env.observation_space.contains(obs)
        assert [t[0] for t in first] == [t[0] for t in again]  # the seed went over the wire
        # Unknown reset keys (from options) are dropped by the official server.
        env.reset(seed=1, options={"not_a_reset_argument": 1})
    finally:
        env.close()


def test_the_official_one_session_default_is_reported_clearly(official_url: str) -> None:
    first = gym.make("openenv/Remote-v0", base_url=official_url)
    second = gym.make("openenv/Remote-v0", base_url=official_url)
    try:
        first.reset(seed=0)
        with pytest.raises(CapacityReachedError) as info:
            second.reset(seed=0)
        message = str(info.value)
        assert "max_concurrent_envs" in message
        assert info.value.code == "CAPACITY_REACHED"
        assert official_url.replace("http", "ws") in message
    finally:
        second.close()
        first.close()
    # The slot frees once the first session is closed.
    third = gym.make("openenv/Remote-v0", base_url=official_url)
    try:
        third.reset(seed=0)
    finally:
        third.close()
