"""Official ``openenv`` (0.10.0) peers against our server.

* The official ``GenericEnvClient`` plays our gymnasium CartPole server and sees exactly
  what raw Gymnasium produces for the same seed and actions.
* The official FastAPI server and ours serve the same (official) environment class; the
  same frames get byte-identical observation/state replies and the same error codes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import httpx
import numpy as np
import pytest
from openenv.core import GenericEnvClient
from openenv.core.env_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment as OfficialEnvironment
from openenv.core.env_server.types import Action as OfficialAction
from openenv.core.env_server.types import Observation as OfficialObservation
from openenv.core.env_server.types import State as OfficialState
from pydantic import Field
from websockets.sync.client import connect

from openenv_gym.server import OpenEnvServer, ServerThread
from openenv_gym.wire.messages import http_to_ws_url
from tests.official_peer import serve_official_app

# --------------------------------------------------------------------------- official client


def test_generic_env_client_matches_raw_gymnasium(cartpole_url: str) -> None:
    raw = gym.make("CartPole-v1")
    client = GenericEnvClient(base_url=cartpole_url).sync()
    try:
        for seed in (0, 7):
            result = client.reset(seed=seed)
            expected, _ = raw.reset(seed=seed)
            observation = np.asarray(result.observation["observation"], np.float32)
            np.testing.assert_array_equal(observation, expected)
            assert result.done is False
            rng = np.random.default_rng(seed)
            steps = 0
            while True:
                action = int(rng.integers(2))
                result = client.step({"action": action})
                expected, reward, terminated, truncated, _ = raw.step(action)
                steps += 1
                np.testing.assert_array_equal(
                    np.asarray(result.observation["observation"], np.float32), expected
                )
                assert result.reward == reward
                assert result.done == (terminated or truncated)
                assert result.observation["truncated"] == truncated
                if result.done:
                    break
            state = client.state()
            assert state["step_count"] == steps
            assert state["env_id"] == "CartPole-v1"
    finally:
        client.close()
        raw.close()


def test_generic_env_client_sees_error_replies(cartpole_url: str) -> None:
    client = GenericEnvClient(base_url=cartpole_url).sync()
    try:
        client.reset(seed=1)
        with pytest.raises(Exception, match=r"VALIDATION_ERROR|less than or equal"):
            client.step({"action": 7})
        result = client.step({"action": 0})  # the session lives on
        assert result.reward == 1.0
    finally:
        client.close()


# --------------------------------------------------------------------------- same env, two servers


class GuessAction(OfficialAction):
    guess: int = Field(ge=0, le=9)


class GuessObservation(OfficialObservation):
    hint: str = "start"
    attempts: int = 0


class GuessEnvironment(OfficialEnvironment):
    """Guess a seeded digit."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._target = 0
        self._state = OfficialState(step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> GuessObservation:
        if seed == 13:
            raise ValueError("unlucky seed")
        self._target = int(np.random.default_rng(seed).integers(10))
        self._state = OfficialState(episode_id=episode_id, step_count=0)
        return GuessObservation(metadata={"options": sorted(kwargs)} if kwargs else {})

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        self._state.step_count += 1
        if action.guess == self._target:
            hint = "correct"
        else:
            hint = "low" if action.guess < self._target else "high"
        return GuessObservation(
            hint=hint,
            attempts=self._state.step_count,
            reward=1.0 if hint == "correct" else -0.1,
            done=hint == "correct",
            metadata={"known": False, "ratio": 0.1 * self._state.step_count, "label": "naïve"},
        )

    @property
    def state(self) -> OfficialState:
        return self._state


@pytest.fixture(scope="module")
def official_url() -> Iterator[str]:
    app = create_fastapi_app(GuessEnvironment, GuessAction, GuessObservation)
    with serve_official_app(app) as url:
        yield url


@pytest.fixture(scope="module")
def our_url() -> Iterator[str]:
    server = OpenEnvServer(
        GuessEnvironment,  # an official Environment class, served as is
        action_type=GuessAction,
        observation_type=GuessObservation,
        state_type=OfficialState,
    )
    with ServerThread(server) as running:
        yield running.url


SCRIPT: list[str] = [
    json.dumps({"type": "reset", "data": {"seed": 5, "episode_id": "ep"}}),
    json.dumps({"type": "state"}),
    json.dumps({"type": "step", "data": {"guess": 4}}),
    json.dumps({"type": "step", "data": {"guess": 2, "metadata": {"note": "é"}}}),
    json.dumps({"type": "state"}),
    "{broken",
    json.dumps({"type": "fly"}),
    json.dumps({"type": "step", "data": {"guess": 12}}),
    json.dumps({"type": "step", "data": {"guess": 1, "what": 1}}),
    json.dumps({"type": "step"}),
    json.dumps({"type": "reset", "data": {"seed": 13}}),
    json.dumps({"type": "reset", "data": {"seed": 2, "level": 3, "mode": "x"}}),
    json.dumps({"type": "step", "data": {"guess": 8}}),
]


def play_script(base_url: str) -> list[str]:
    replies = []
    with connect(http_to_ws_url(base_url), open_timeout=10) as ws:
        for frame in SCRIPT:
            ws.send(frame)
            reply = ws.recv(timeout=10)
            assert isinstance(reply, str)
            replies.append(reply)
    return replies


def test_same_frames_same_replies_as_the_official_server(official_url: str, our_url: str) -> None:
    theirs, ours = play_script(official_url), play_script(our_url)
    for frame, their_reply, our_reply in zip(SCRIPT, theirs, ours, strict=True):
        their_message, our_message = json.loads(their_reply), json.loads(our_reply)
        assert our_message["type"] == their_message["type"], frame
        if their_message["type"] == "error":
            assert our_message["data"]["code"] == their_message["data"]["code"], frame
        else:
            assert our_reply == their_reply, frame  # byte for byte


def test_same_get_endpoints_as_the_official_server(official_url: str, our_url: str) -> None:
    for path in ("/health", "/schema", "/metadata", "/state"):
        theirs = httpx.get(official_url + path, timeout=10)
        ours = httpx.get(our_url + path, timeout=10)
        assert ours.status_code == theirs.status_code == 200, path
        assert ours.json() == theirs.json(), path
    theirs = httpx.get(official_url + "/nope", timeout=10)
    ours = httpx.get(our_url + "/nope", timeout=10)
    assert ours.status_code == theirs.status_code == 404
    assert ours.json() == theirs.json()
