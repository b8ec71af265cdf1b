"""What a step costs a server process (:mod:`openenv_gym.server.step_cost`): calibrated on
real environments, refined by real batch steps, reported by ``GET /capacity``."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from openenv_gym import OpenEnvVectorEnv
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.envs.gymnasium.environment import GymnasiumEnvironment
from openenv_gym.server.app import OpenEnvServer
from openenv_gym.server.environment import Environment
from openenv_gym.server.models import Observation, State
from openenv_gym.server.step_cost import CALIBRATION_STEPS, StepCost
from openenv_gym.server.thread import ServerThread


def _step(env: Environment[Any, Any, Any], data: dict[str, Any]) -> dict[str, Any]:
    reply = env.step_reply(data)
    assert reply is not None  # CartPole's discrete actions take the fast path
    return reply


def test_record_is_a_moving_average_per_op() -> None:
    cost = StepCost()
    assert cost.seconds is None
    assert not cost.measured
    cost.record(0.008, ops=8)
    assert cost.seconds == pytest.approx(0.001)
    assert cost.measured
    cost.record(0.0, ops=0)  # nothing stepped: ignored
    assert cost.seconds == pytest.approx(0.001)
    for _ in range(200):
        cost.record(0.002, ops=1)
    assert cost.seconds == pytest.approx(0.002, rel=0.01)


def test_calibration_times_a_throwaway_env_once() -> None:
    built: list[GymnasiumEnvironment] = []

    def factory() -> GymnasiumEnvironment:
        built.append(GymnasiumEnvironment("CartPole-v1"))
        return built[-1]

    cost = StepCost()
    seconds = cost.calibrate(factory, _step)
    assert seconds is not None
    assert 0 < seconds < 0.01
    assert built[0].state.step_count <= CALIBRATION_STEPS
    assert cost.calibrate(factory, _step) == seconds  # once only
    assert len(built) == 1
    cost.record(0.5, ops=1)  # batch steps take over
    assert cost.seconds == 0.5


class _Silent(Environment[Any, Any, Any]):
    """No sample_action: its step cost cannot be calibrated."""

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kw: Any) -> Any:
        return Observation()

    def step(self, action: Any) -> Any:
        return Observation()

    @property
    def state(self) -> State:
        return State()


class _Broken(_Silent):
    def sample_action(self) -> dict[str, Any]:
        return {"action": 0}

    def step(self, action: Any) -> Any:
        raise RuntimeError("the emulator crashed")


def test_envs_that_cannot_be_timed_leave_the_cost_unknown() -> None:
    assert StepCost().calibrate(_Silent, _step) is None

    def broken_step(env: Environment[Any, Any, Any], data: dict[str, Any]) -> dict[str, Any]:
        return env.step(data)  # type: ignore[no-any-return]

    assert StepCost().calibrate(_Broken, broken_step) is None

    def failing_factory() -> Environment[Any, Any, Any]:
        raise OSError("no ROM")

    assert StepCost().calibrate(failing_factory, _step) is None


def test_capacity_reports_the_calibrated_then_the_measured_cost() -> None:
    server = gymnasium_server("CartPole-v1", max_sessions=4)
    with ServerThread(server) as thread:
        calibrated = httpx.get(thread.url + "/capacity", timeout=10).json()["step_seconds"]
        assert isinstance(calibrated, float)
        assert calibrated > 0
        assert not server.sessions.step_cost.measured
        envs = OpenEnvVectorEnv(None, 4, base_url=thread.url)
        try:
            envs.reset(seed=0)
            for _ in range(10):
                envs.step(envs.action_space.sample())
        finally:
            envs.close()
        assert server.sessions.step_cost.measured
        measured = httpx.get(thread.url + "/capacity", timeout=10).json()["step_seconds"]
        assert measured == server.sessions.step_cost.seconds


class _SlowReset(GymnasiumEnvironment):
    """CartPole whose resets take half a second (as a ROM load would)."""

    def __init__(self) -> None:
        super().__init__("CartPole-v1")

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kw: Any) -> Any:
        time.sleep(0.5)
        return super().reset(seed=seed, episode_id=episode_id, **kw)


def test_batches_that_reset_do_not_count_as_steps() -> None:
    probe = _SlowReset()
    server = OpenEnvServer(
        _SlowReset,
        action_type=probe.action_model,
        observation_type=probe.observation_model,
        max_sessions=2,
    )
    probe.close()
    with ServerThread(server) as thread:
        envs = OpenEnvVectorEnv(None, 2, base_url=thread.url)
        try:
            envs.reset(seed=0)  # one batch of two half-second resets
            assert not server.sessions.step_cost.measured
            for _ in range(5):
                envs.step(envs.action_space.sample())
        finally:
            envs.close()
    cost = server.sessions.step_cost.seconds
    assert cost is not None
    # Steps alone: no trace of the resets' half second (the first sample would have stayed
    # in the moving average for hundreds of steps).
    assert cost < 0.25
