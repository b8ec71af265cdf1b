"""The vector env against servers built on the official ``openenv`` package (0.10.0).

Official servers never agree to ``openenv-gym.batch.v1``: the vector env falls back to one
plain session per connection, and must send exactly what the single env sends (the
``Literal`` values, not their Discrete indices) and decode exactly as it does (a value
outside the space raises).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import numpy as np
import pytest
from openenv.core.env_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from openenv_gym import ObservationMismatchError, OpenEnvEnv, OpenEnvVectorEnv
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.server import ServerThread
from tests.official_peer import serve_official_app

#: A reset seed that makes the server reply with a position far outside its bounds.
BROKEN_SEED = 13
#: A reset seed whose episode replies fine to the reset, then out of bounds to every step.
BROKEN_STEPS_SEED = 14


class MoveAction(Action):
    move: Literal[-1, 0, 1]


class LineObservation(Observation):
    position: float = Field(default=0.0, ge=-1.0, le=1.0)
    last_move: int = 0


class LineEnvironment(Environment):
    """A point on [-1, 1]; the reward is the move the server received."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._position = 0.0
        self._broken = False
        self._state = State(step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> LineObservation:
        self._position = 0.0
        self._broken = seed in (BROKEN_SEED, BROKEN_STEPS_SEED)
        self._state = State(episode_id=episode_id, step_count=0)
        return LineObservation.model_construct(position=1e9 if seed == BROKEN_SEED else 0.0)

    def step(self, action: MoveAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        self._state.step_count += 1
        self._position = float(np.clip(self._position + 0.25 * action.move, -1.0, 1.0))
        position = 1e9 if self._broken else self._position
        return LineObservation.model_construct(
            position=position,
            last_move=action.move,
            reward=float(action.move),
            done=self._state.step_count >= 5,
            metadata={},
        )

    @property
    def state(self) -> State:
        return self._state


@pytest.fixture(scope="module")
def line_url() -> Iterator[str]:
    app = create_fastapi_app(LineEnvironment, MoveAction, LineObservation, max_concurrent_envs=8)
    with serve_official_app(app) as url:
        yield url


def test_official_server_gets_one_plain_session_per_sub_env(line_url: str) -> None:
    envs = OpenEnvVectorEnv(None, 3, base_url=line_url)
    try:
        assert not envs.batched
        assert len(envs.connections) == 3
        assert all(c.subprotocol is None for c in envs.connections)
        obs, _ = envs.reset(seed=0)
        assert np.asarray(obs["position"]).shape[0] == 3
    finally:
        envs.close()


def test_vector_env_sends_the_literal_values_not_their_indices(line_url: str) -> None:
    envs = OpenEnvVectorEnv(None, 3, base_url=line_url)
    single = OpenEnvEnv(line_url)
    try:
        assert envs.single_action_space == single.action_space  # Discrete(3): -1, 0, 1
        envs.reset(seed=0)
        single.reset(seed=0)
        actions = np.array([0, 1, 2])  # the indices of -1, 0 and 1
        _, rewards, _, _, _ = envs.step(actions)
        # The reward is the move the server received: the Literal values.
        assert rewards.tolist() == [-1.0, 0.0, 1.0]
        assert [single.step(int(a))[1] for a in actions] == [-1.0, 0.0, 1.0]
    finally:
        single.close()
        envs.close()


def test_out_of_bounds_reply_raises_in_single_and_vector_env(line_url: str) -> None:
    single = OpenEnvEnv(line_url)
    try:
        with pytest.raises(ObservationMismatchError, match="out of bounds") as caught:
            single.reset(seed=BROKEN_SEED)
        assert caught.value.field == "position"
    finally:
        single.close()
    envs = OpenEnvVectorEnv(None, 2, base_url=line_url)
    try:
        envs.reset(seed=[0, 0])
        envs.step(np.array([2, 2]))
        with pytest.raises(ObservationMismatchError, match="out of bounds") as caught:
            envs.reset(seed=[0, BROKEN_SEED])
        assert caught.value.field == "position"
        assert any("sub-env" in note for note in caught.value.__notes__)
    finally:
        envs.close()


def test_a_reply_that_fails_to_decode_leaves_no_other_reply_unread(line_url: str) -> None:
    # Three plain sessions: sub-env 0's step reply fails to decode while the replies of
    # sub-envs 1 and 2 are still unread; they must be read before the error propagates.
    envs = OpenEnvVectorEnv(None, 3, base_url=line_url)
    try:
        envs.reset(seed=[BROKEN_STEPS_SEED, 0, 0])
        with pytest.raises(ObservationMismatchError, match="out of bounds"):
            envs.step(np.array([2, 2, 2]))
        envs.reset(seed=[0, 0, 0])  # gets its own replies, not the step's
        _, rewards, *_ = envs.step(np.array([0, 1, 2]))  # moves -1, 0, 1
        assert rewards.tolist() == [-1.0, 0.0, 1.0]
        assert [state["step_count"] for state in envs.call_state()] == [1, 1, 1]
    finally:
        envs.close()


def test_our_server_batches_and_counts_every_session() -> None:
    server = gymnasium_server("CartPole-v1", max_sessions=5)
    with ServerThread(server) as running:
        envs = OpenEnvVectorEnv(None, 4, base_url=running.url)
        try:
            assert envs.batched
            assert len(envs.connections) == 1  # one worker: one connection for 4 sessions
            assert all(c.subprotocol == "openenv-gym.batch.v1" for c in envs.connections)
            assert server.capacity()["active_sessions"] == 4
            envs.reset(seed=0)
            obs, rewards, terminated, _, _ = envs.step(np.array([0, 1, 0, 1]))
            assert obs.shape == (4, 4)
            assert rewards.tolist() == [1.0] * 4
            assert not terminated.any()
            assert server.capacity()["active_sessions"] == 4
        finally:
            envs.close()
