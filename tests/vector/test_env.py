"""OpenEnvVectorEnv against real servers: trajectories equal gymnasium's SyncVectorEnv over raw
CartPole in every autoreset mode (the way gymnasium's own vector tests compare envs), native
``gym.make_vec``, round-robin over servers, and every bad input."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from pydantic import Field

import openenv_gym
from openenv_gym import OpenEnvVectorEnv
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.errors import ActionOutOfSpaceError, OpenEnvGymError, VectorUsageError
from openenv_gym.server import (
    Action,
    Environment,
    Observation,
    OpenEnvServer,
    ServerThread,
    State,
)

SHORT_EPISODES = 12  # max_episode_steps on both sides: episodes end by truncation too


@pytest.fixture(scope="module")
def short_cartpole_url() -> Iterator[str]:
    """CartPole-v1 truncated after SHORT_EPISODES steps, so both end conditions occur."""
    server = gymnasium_server(
        "CartPole-v1", make_kwargs={"max_episode_steps": SHORT_EPISODES}, max_sessions=64
    )
    with ServerThread(server) as running:
        yield running.url


def _reference(num_envs: int, mode: AutoresetMode) -> SyncVectorEnv:
    return SyncVectorEnv(
        [lambda: gym.make("CartPole-v1", max_episode_steps=SHORT_EPISODES)] * num_envs,
        autoreset_mode=mode,
    )


def _assert_same_step(ours: Any, theirs: Any, step: int) -> None:
    names = ("obs", "rewards", "terminations", "truncations", "infos")
    # Our servers send exact terminated and truncated flags (both may be true).
    for name, a, b in zip(names[: len(ours)], ours, theirs, strict=True):
        assert data_equivalence(a, b), f"step {step}: {name} differ:\n{a}\n{b}"


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_trajectories_match_sync_vector_env(short_cartpole_url: str, mode: AutoresetMode) -> None:
    num_envs = 4
    ours = OpenEnvVectorEnv(
        "openenv/CartPole-v1", num_envs, base_url=short_cartpole_url, autoreset_mode=mode
    )
    theirs = _reference(num_envs, mode)
    try:
        assert ours.metadata["autoreset_mode"] == mode
        assert ours.single_observation_space == theirs.single_observation_space
        assert ours.single_action_space == theirs.single_action_space
        assert ours.observation_space == theirs.observation_space
        assert ours.action_space == theirs.action_space
        _assert_same_step(ours.reset(seed=7), theirs.reset(seed=7), -1)
        rng = np.random.default_rng(1)
        ended = 0
        for step in range(120):
            actions = rng.integers(0, 2, num_envs)
            result = ours.step(actions)
            _assert_same_step(result, theirs.step(actions), step)
            ended += int(np.sum(result[2] | result[3]))
        assert ended > num_envs  # episodes ended and were reset, several times
        # A second reset with a list of seeds goes on matching.
        seeds = [3, None, 5, 11]
        obs, _ = ours.reset(seed=seeds)
        ref_obs, _ = theirs.reset(seed=seeds)
        assert data_equivalence(obs[[0, 2, 3]], ref_obs[[0, 2, 3]])
    finally:
        ours.close()
        theirs.close()


def test_disabled_autoreset_with_reset_mask(short_cartpole_url: str) -> None:
    num_envs = 3
    mode = AutoresetMode.DISABLED
    ours = OpenEnvVectorEnv(
        "openenv/CartPole-v1", num_envs, base_url=short_cartpole_url, autoreset_mode=mode
    )
    theirs = _reference(num_envs, mode)
    try:
        _assert_same_step(ours.reset(seed=0), theirs.reset(seed=0), -1)
        rng = np.random.default_rng(2)
        masked_resets = 0
        for step in range(80):
            actions = rng.integers(0, 2, num_envs)
            result = ours.step(actions)
            _assert_same_step(result, theirs.step(actions), step)
            mask = result[2] | result[3]
            if mask.any():
                with pytest.raises(VectorUsageError, match="DISABLED"):
                    ours.step(actions)  # stepping an ended sub-env is refused, nothing sent
                seed = 100 + step
                ours_reset = ours.reset(seed=seed, options={"reset_mask": mask.copy()})
                theirs_reset = theirs.reset(seed=seed, options={"reset_mask": mask.copy()})
                _assert_same_step(ours_reset, theirs_reset, step)
                masked_resets += 1
        assert masked_resets >= 2
    finally:
        ours.close()
        theirs.close()


def test_make_vec_is_native(cartpole_url: str) -> None:
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=3, base_url=cartpole_url)
    try:
        assert isinstance(envs, OpenEnvVectorEnv)
        assert envs.num_envs == 3
        assert envs.spec is not None
        assert envs.spec.id == "openenv/CartPole-v1"
        obs, _ = envs.reset(seed=1)
        assert obs.shape == (3, 4)
        assert obs.dtype == np.float32
        obs, rewards, terminations, truncations, _ = envs.step(np.array([0, 1, 0]))
        assert rewards.dtype == np.float64
        assert rewards.tolist() == [1.0, 1.0, 1.0]
        assert terminations.dtype == np.bool_
        assert truncations.dtype == np.bool_
    finally:
        envs.close()


@pytest.mark.slow
def test_make_vec_embedded_server_is_stopped_on_close() -> None:
    envs = gym.make_vec("openenv/CartPole-v1", num_envs=3)
    assert isinstance(envs, OpenEnvVectorEnv)
    url = envs.base_urls[0]
    (server,) = envs.servers
    sockets = server.unix_sockets  # type: ignore[attr-defined]
    assert sockets
    assert all(os.path.exists(path) for path in sockets)
    # One batch connection per worker, over the server's Unix sockets (no TCP stack).
    assert envs.batched
    assert sorted(c.unix_path for c in envs.connections) == sorted(sockets)[: len(envs.connections)]
    envs.reset(seed=0)
    envs.step(np.array([1, 0, 1]))
    envs.close()
    assert not openenv_gym.client.is_healthy(url, timeout=1.0)
    assert not any(os.path.exists(path) for path in sockets)


def test_sessions_spread_round_robin_over_servers() -> None:
    with (
        ServerThread(gymnasium_server("CartPole-v1", max_sessions=8)) as a,
        ServerThread(gymnasium_server("CartPole-v1", max_sessions=8)) as b,
    ):
        envs = OpenEnvVectorEnv(None, 5, base_url=[a.url, b.url])
        try:
            assert envs.base_urls == [a.url, b.url, a.url, b.url, a.url]
            assert a.server.active_sessions == 3
            assert b.server.active_sessions == 2
            envs.reset(seed=0)
            envs.step(envs.action_space.sample())
        finally:
            envs.close()


def test_copy_false_returns_the_buffer(cartpole_url: str) -> None:
    envs = OpenEnvVectorEnv(None, 2, base_url=cartpole_url, copy=False)
    try:
        first, _ = envs.reset(seed=0)
        second, *_ = envs.step(np.array([0, 0]))
        assert first is second
    finally:
        envs.close()


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_envs": 0}, "num_envs"),
        ({"num_envs": 2.5}, "num_envs"),
        ({"autoreset_mode": "sometimes"}, "autoreset_mode"),
        ({"encoding": "yaml"}, "encoding"),
        ({"max_episode_steps": 0}, "max_episode_steps"),
        ({"base_url": []}, "base_url"),
    ],
)
def test_bad_constructor_arguments(cartpole_url: str, kwargs: dict[str, Any], match: str) -> None:
    arguments: dict[str, Any] = {"num_envs": 2, "base_url": cartpole_url, **kwargs}
    with pytest.raises(VectorUsageError, match=match):
        OpenEnvVectorEnv(None, **arguments)


def test_no_server_and_no_id() -> None:
    with pytest.raises(VectorUsageError, match="base_url"):
        OpenEnvVectorEnv(None, 2)


def test_id_that_is_not_an_openenv_env(cartpole_url: str) -> None:
    with pytest.raises(VectorUsageError, match="OpenEnvEnv"):
        OpenEnvVectorEnv("CartPole-v1", 2)


def test_bad_reset_arguments_and_actions(cartpole_url: str) -> None:
    envs = OpenEnvVectorEnv(None, 3, base_url=cartpole_url)
    reference = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 3)
    try:
        with pytest.raises(VectorUsageError, match="one seed per sub-env"):
            envs.reset(seed=[1, 2])
        with pytest.raises(VectorUsageError, match="seed"):
            envs.reset(seed="7")  # type: ignore[arg-type]
        for mask in (np.array([1, 0, 1]), np.array([True, False]), np.zeros(3, dtype=bool)):
            with pytest.raises(VectorUsageError, match="reset_mask"):
                envs.reset(options={"reset_mask": mask})
        _obs, _ = envs.reset(seed=5)
        _ref_obs, _ = reference.reset(seed=5)
        for bad in (np.array([0, 2, 1]), np.array([0, 1]), np.array([-1, 0, 0]), "left"):
            with pytest.raises(ActionOutOfSpaceError):
                envs.step(bad)
        # Nothing was sent: the trajectory goes on exactly like the reference.
        result = envs.step(np.array([1, 0, 1]))
        assert data_equivalence(result[0], reference.step(np.array([1, 0, 1]))[0])
    finally:
        envs.close()
        reference.close()


def test_closed_env_refuses_calls(cartpole_url: str) -> None:
    envs = OpenEnvVectorEnv(None, 2, base_url=cartpole_url)
    envs.close()
    envs.close()  # idempotent
    with pytest.raises(VectorUsageError, match="closed"):
        envs.reset()
    with pytest.raises(OpenEnvGymError, match="closed"):
        envs.step(np.array([0, 0]))


def test_step_async_then_wait_equals_step(cartpole_url: str) -> None:
    envs = OpenEnvVectorEnv(None, 2, base_url=cartpole_url)
    reference = SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
    try:
        envs.reset(seed=3)
        reference.reset(seed=3)
        with pytest.raises(VectorUsageError, match="step_async"):
            envs.step_wait()
        for action in ([0, 1], [1, 1], [0, 0]):
            envs.step_async(np.array(action))
            with pytest.raises(VectorUsageError, match="twice"):
                envs.step_async(np.array(action))
            _assert_same_step(envs.step_wait(), reference.step(np.array(action)), 0)
        envs.step_async(np.array([1, 0]))  # never collected: reset waits it out
        obs, _ = envs.reset(seed=4)
        assert data_equivalence(obs, reference.reset(seed=4)[0])
    finally:
        envs.close()
        reference.close()


# --------------------------------------------------------------------------- Dict spaces


class MoveAction(Action):
    dx: int = Field(ge=-1, le=1, description="step left, stay or right")
    jump: bool = Field(description="jump this step")


class MoveObservation(Observation):
    position: int = Field(default=0, ge=-5, le=5)
    velocity: list[float] = Field(default_factory=lambda: [0.0, 0.0], min_length=2, max_length=2)


class MoveEnvironment(Environment[MoveAction, MoveObservation, State]):
    """Walk on -5..5; the episode ends at either edge; info counts the jumps.

    Deterministic (an unseeded reset starts at 0) so two clients can be compared."""

    def __init__(self) -> None:
        self._position, self._jumps = 0, 0
        self._state = State(step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> MoveObservation:
        self._position = 0 if seed is None else int(np.random.default_rng(seed).integers(-2, 3))
        self._jumps = 0
        self._state = State(episode_id=episode_id, step_count=0)
        return MoveObservation(position=self._position)

    def step(self, action: MoveAction) -> MoveObservation:
        self._state.step_count += 1
        self._position = max(-5, min(5, self._position + 2 * action.dx))
        self._jumps += int(action.jump)
        return MoveObservation(
            position=self._position,
            velocity=[float(action.dx), float(action.jump)],
            reward=float(self._position),
            done=abs(self._position) == 5,
            metadata={"jumps": self._jumps},
        )

    @property
    def state(self) -> State:
        return self._state


def test_dict_spaces_match_single_envs_stepped_in_turn() -> None:
    server = OpenEnvServer(
        MoveEnvironment, action_type=MoveAction, observation_type=MoveObservation
    )
    with ServerThread(server) as running:
        n = 3
        ours = OpenEnvVectorEnv(None, n, base_url=running.url, autoreset_mode="SameStep")
        theirs = SyncVectorEnv(
            [lambda: gym.make("openenv/Remote-v0", base_url=running.url)] * n,
            autoreset_mode=AutoresetMode.SAME_STEP,
        )
        try:
            assert isinstance(ours.single_observation_space, gym.spaces.Dict)
            assert isinstance(ours.single_action_space, gym.spaces.Dict)
            assert ours.observation_space == theirs.observation_space
            _assert_same_step(ours.reset(seed=1), theirs.reset(seed=1), -1)
            ours.action_space.seed(0)
            ended = 0
            for step in range(60):
                actions = ours.action_space.sample()
                result = ours.step(actions)
                _assert_same_step(result, theirs.step(actions), step)
                ended += int(result[2].sum())
            assert ended > 0
        finally:
            ours.close()
            theirs.close()


def test_max_episode_steps_truncates_on_the_client(cartpole_url: str) -> None:
    envs = OpenEnvVectorEnv(None, 2, base_url=cartpole_url, max_episode_steps=3)
    try:
        envs.reset(seed=0)
        for _ in range(2):
            _, _, terminations, truncations, _ = envs.step(np.array([0, 1]))
            assert not truncations.any()
        _, _, terminations, truncations, _ = envs.step(np.array([0, 1]))
        assert truncations.tolist() == [True, True]
        assert terminations.tolist() == [False, False]
        _, rewards, _, truncations, _ = envs.step(np.array([0, 1]))  # NEXT_STEP: the reset
        assert rewards.tolist() == [0.0, 0.0]
        assert not truncations.any()
    finally:
        envs.close()
