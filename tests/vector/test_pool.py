"""The envpool-style pool (``make_pool``) against our servers and official-package servers:
send / recv in arrival order, synchronous mode equal to the vector env, envpool's autoreset,
Literal / Enum actions, action masks, typed usage errors and faults."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from typing import Any, Literal

import httpx
import numpy as np
import pytest
from openenv.core.env_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

from openenv_gym import OpenEnvPool, OpenEnvVectorEnv, make_pool
from openenv_gym.errors import (
    ActionOutOfSpaceError,
    PoolUsageError,
    SubEnvError,
    VectorUsageError,
)
from openenv_gym.providers.local import LocalServerProcess
from openenv_gym.vector import RECONNECTED_KEY
from tests.official_peer import serve_official_app
from tests.official_shapes import serve_shape

pytestmark = pytest.mark.timeout(120)

#: The reset seed that makes a sub-env of the sleepy server slow.
SLOW_SEED = 7
#: How long a slow sub-env's step takes on the sleepy server.
SLOW_SECONDS = 0.6


class MoveAction(Action):
    move: Literal[-1, 0, 1]


class SleepyObservation(Observation):
    steps: int = 0
    last_move: int = 0


class SleepyEnvironment(Environment):
    """A counter whose reward is the move received; seeded with ``SLOW_SEED`` its steps sleep
    ``SLOW_SECONDS`` (the official server runs each session's steps in a thread of its own)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._slow = False
        self._state = State(step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> SleepyObservation:
        self._slow = seed == SLOW_SEED
        self._state = State(episode_id=episode_id, step_count=0)
        return SleepyObservation(steps=0)

    def step(self, action: MoveAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        if self._slow:
            time.sleep(SLOW_SECONDS)
        self._state.step_count += 1
        return SleepyObservation(
            steps=self._state.step_count,
            last_move=action.move,
            reward=float(action.move),
            done=False,
        )

    @property
    def state(self) -> State:
        return self._state


@pytest.fixture(scope="module")
def sleepy_url() -> Iterator[str]:
    app = create_fastapi_app(
        SleepyEnvironment, MoveAction, SleepyObservation, max_concurrent_envs=16
    )
    with serve_official_app(app) as url:
        yield url


@pytest.fixture(scope="module")
def grid_url() -> Iterator[str]:
    with serve_shape("grid") as url:
        yield url


@pytest.fixture(scope="module")
def cartpole_server() -> Iterator[str]:
    with LocalServerProcess(["gymnasium", "--env-id", "CartPole-v1"]) as server:
        assert server.base_url is not None
        yield server.base_url


# --------------------------------------------------------------------------- our server


def test_async_pool_serves_every_sub_env_in_batches(cartpole_server: str) -> None:
    with make_pool(None, 6, batch_size=3, base_url=cartpole_server) as pool:
        assert pool.observation_space.shape == (4,)
        assert pool.config["batch_size"] == 3
        assert pool.config["num_envs"] == 6
        pool.async_reset(seed=0)
        served = np.zeros(6, dtype=np.int64)
        for _ in range(60):
            obs, rew, term, trunc, info = pool.recv()
            ids = info["env_id"]
            assert obs.shape == (3, 4)
            assert obs.dtype == np.float32
            assert rew.shape == term.shape == trunc.shape == (3,)
            assert len(set(ids.tolist())) == 3
            served[ids] += 1
            pool.send(np.ones(3, dtype=np.int64), ids)
        assert served.min() >= 25, served  # nobody starved


def test_each_batch_can_be_in_flight_on_a_connection_of_its_own(cartpole_server: str) -> None:
    """A connection carries one frame at a time: the pool opens one per batch_size sub-envs
    (the vector env, at most one per worker), so two batches are on the wire at once."""
    envs = OpenEnvVectorEnv(None, 6, base_url=cartpole_server)
    try:
        assert len(envs.connections) <= 2  # CartPole's step cost is worth one or two workers
    finally:
        envs.close()
    with make_pool(None, 6, batch_size=2, base_url=cartpole_server) as pool:
        assert len(pool.connections) == 3
        pool.async_reset(seed=0)
        seen: set[int] = set()
        for _ in range(6):
            ids = pool.recv()[4]["env_id"]
            seen.update(ids.tolist())
            pool.send(np.zeros(2, dtype=np.int64), ids)
        assert seen == set(range(6))


def test_synchronous_pool_steps_as_the_vector_env_does(cartpole_server: str) -> None:
    envs = OpenEnvVectorEnv(None, 4, base_url=cartpole_server)
    pool = make_pool(None, 4, base_url=cartpole_server)
    try:
        assert pool.batch_size == 4
        expected, _ = envs.reset(seed=3)
        obs, info = pool.reset(seed=3)
        np.testing.assert_array_equal(obs, expected)
        np.testing.assert_array_equal(info["env_id"], np.arange(4))
        rng = np.random.default_rng(0)
        for _ in range(40):
            actions = rng.integers(0, 2, size=4)
            want = envs.step(actions)
            got = pool.step(actions)
            np.testing.assert_array_equal(got[4]["env_id"], np.arange(4))
            for mine, theirs in zip(got[:4], want[:4], strict=True):
                np.testing.assert_array_equal(mine, theirs)
    finally:
        pool.close()
        envs.close()


def test_synchronous_pool_takes_actions_in_env_id_order_and_partial_sends(
    cartpole_server: str,
) -> None:
    """A synchronous send of every sub-env (any order of ``env_id``) is one round trip; a
    send of some of them goes the asynchronous way; a send while one is out is refused."""
    envs = OpenEnvVectorEnv(None, 4, base_url=cartpole_server)
    try:
        envs.reset(seed=0)
        expected = envs.step(np.arange(4) % 2)[0]
    finally:
        envs.close()
    with make_pool(None, 4, base_url=cartpole_server, max_episode_steps=50) as pool:
        pool.reset(seed=0)
        # sub-env i gets action i % 2 whatever the order env_id lists them in
        order = np.array([3, 1, 0, 2])
        obs, _, _, _, info = pool.step(order % 2, order)
        np.testing.assert_array_equal(obs, expected)
        np.testing.assert_array_equal(info["env_id"], np.arange(4))
        np.testing.assert_array_equal(info["elapsed_step"], [1, 1, 1, 1])
        pool.send(np.zeros(4, dtype=np.int64))
        with pytest.raises(PoolUsageError, match="already in flight"):
            pool.send(np.zeros(4, dtype=np.int64))
        with pytest.raises(PoolUsageError, match="already in flight"):
            pool.send(np.zeros(1, dtype=np.int64), np.array([2]))
        _, _, _, _, info = pool.recv()
        np.testing.assert_array_equal(info["elapsed_step"], [2, 2, 2, 2])
        # Two halves, then one recv of all four.
        pool.send(np.zeros(2, dtype=np.int64), np.array([0, 1]))
        pool.send(np.zeros(2, dtype=np.int64), np.array([2, 3]))
        _, _, _, _, info = pool.recv()
        assert sorted(info["env_id"].tolist()) == [0, 1, 2, 3]
        np.testing.assert_array_equal(info["elapsed_step"], [3, 3, 3, 3])
        # A reset while a synchronous round trip is out waits it out and drops it.
        pool.send(np.zeros(4, dtype=np.int64))
        _, info = pool.reset(seed=1)
        _, _, _, _, info = pool.step(np.zeros(4, dtype=np.int64))
        np.testing.assert_array_equal(info["elapsed_step"], [1, 1, 1, 1])


def test_autoreset_is_envpools_next_step(cartpole_server: str) -> None:
    with make_pool(None, 2, base_url=cartpole_server, max_episode_steps=3) as pool:
        pool.reset(seed=0)
        for step in range(1, 4):
            _, rew, term, trunc, info = pool.step(np.zeros(2, dtype=np.int64))
            np.testing.assert_array_equal(info["elapsed_step"], [step, step])
        assert trunc.all()
        assert not term.any()
        assert (rew == 1.0).all()
        # The next send resets them (the action is ignored): reward 0, no flag.
        _, rew, term, trunc, info = pool.step(np.zeros(2, dtype=np.int64))
        assert (rew == 0.0).all()
        assert not term.any()
        assert not trunc.any()
        np.testing.assert_array_equal(info["elapsed_step"], [0, 0])


def test_usage_errors_are_typed_and_lose_nothing(cartpole_server: str) -> None:
    with pytest.raises(PoolUsageError, match="batch_size"):
        make_pool(None, 2, batch_size=3, base_url=cartpole_server)
    with pytest.raises(PoolUsageError, match="batch_size"):
        make_pool(None, 2, batch_size=0, base_url=cartpole_server)
    with pytest.raises(VectorUsageError, match="num_envs"):
        make_pool(None, 0, base_url=cartpole_server)
    pool = make_pool(None, 4, batch_size=2, base_url=cartpole_server)
    try:
        with pytest.raises(PoolUsageError, match="never reset"):
            pool.send(np.zeros(2, dtype=np.int64), np.array([0, 1]))
        with pytest.raises(PoolUsageError, match="were sent and not received"):
            pool.recv()
        pool.async_reset(seed=0)
        with pytest.raises(PoolUsageError, match="already in flight"):
            pool.send(np.zeros(2, dtype=np.int64), np.array([0, 1]))
        _, _, _, _, info = pool.recv()
        ids = info["env_id"]
        with pytest.raises(PoolUsageError, match=r"sub-envs \[4\]"):
            pool.send(np.zeros(2, dtype=np.int64), np.array([ids[0], 4]))
        with pytest.raises(PoolUsageError, match="twice"):
            pool.send(np.zeros(2, dtype=np.int64), np.array([ids[0], ids[0]]))
        with pytest.raises(PoolUsageError, match="1-D array"):
            pool.send(np.zeros(2, dtype=np.int64), np.array([0.5, 1.0]))
        with pytest.raises(ActionOutOfSpaceError):
            pool.send(np.array([0, 5]), ids)
        # Nothing was sent by the refused calls: the same sub-envs still go.
        pool.send(np.zeros(2, dtype=np.int64), ids)
        seen = set(ids.tolist())
        for _ in range(2):
            _, _, _, _, info = pool.recv()
            seen.update(info["env_id"].tolist())
            pool.send(np.zeros(2, dtype=np.int64), info["env_id"])
        assert seen == {0, 1, 2, 3}
    finally:
        pool.close()
    with pytest.raises(PoolUsageError, match="closed"):
        pool.recv()
    pool.close()  # idempotent


# --------------------------------------------------------------------------- official server


def test_official_server_replies_are_taken_in_arrival_order(sleepy_url: str) -> None:
    # Sub-env 0 is slow (each step sleeps); the three fast ones keep stepping meanwhile.
    with make_pool(None, 4, batch_size=1, base_url=sleepy_url) as pool:
        assert all(c.subprotocol is None for c in pool.connections)
        pool.async_reset(seed=[SLOW_SEED, 0, 0, 0])
        # Take the four reset replies; on a loaded machine a fast sub-env's first step reply
        # can come before another's reset reply, so count resets by their elapsed_step of 0.
        reset: set[int] = set()
        while len(reset) < 4:
            _, rew, _, _, info = pool.recv()
            (i,) = info["env_id"].tolist()
            if info["elapsed_step"][0] == 0:
                reset.add(i)
            else:
                assert rew[0] == 1.0, (i, reset, info)
            pool.send(np.array([2]), info["env_id"])  # the Literal value 1
        order: list[int] = []
        start = time.monotonic()
        while 0 not in order:
            _, rew, _, _, info = pool.recv()
            (i,) = info["env_id"].tolist()
            assert rew[0] == 1.0, (i, order, info)  # the Literal value, not the index
            order.append(i)
            pool.send(np.array([2]), info["env_id"])
        assert time.monotonic() - start >= SLOW_SECONDS * 0.8
        assert len(order) > 10, order  # the fast ones stepped while the slow one slept
        # ... and the slow one was served as soon as its reply came.


def test_pool_beats_the_slowest_sub_env(sleepy_url: str) -> None:
    with make_pool(None, 4, batch_size=2, base_url=sleepy_url) as pool:
        obs, info = pool.reset(seed=[SLOW_SEED, 0, 0, 0])
        assert obs["steps"].tolist() == [0, 0, 0, 0]
        pool.send(np.ones(4, dtype=np.int64)[:2], np.array([0, 1]))
        pool.send(np.ones(2, dtype=np.int64), np.array([2, 3]))
        start = time.monotonic()
        _, _, _, _, info = pool.recv()
        assert time.monotonic() - start < SLOW_SECONDS / 2
        assert 0 not in info["env_id"].tolist()


def test_enum_actions_and_action_masks_of_the_sub_envs_received(grid_url: str) -> None:
    with make_pool(None, 3, batch_size=2, base_url=grid_url) as pool:
        pool.reset(seed=0)
        np.testing.assert_array_equal(pool.action_masks(), [[True, False, False, True]] * 3)
        _, _, _, _, info = pool.step(np.array([3, 3]), np.array([0, 1]))  # right
        assert sorted(info["env_id"].tolist()) == [0, 1]
        np.testing.assert_array_equal(pool.action_masks(), [[True, False, True, True]] * 2)
        pool.send(np.array([3, 3]), np.array([2, 0]))  # right again; sub-env 1 stays
        obs, _, _, _, info = pool.recv()
        masks = dict(zip(info["env_id"].tolist(), pool.action_masks().tolist(), strict=True))
        positions = dict(zip(info["env_id"].tolist(), obs["position"].tolist(), strict=True))
        assert positions == {2: [1, 0], 0: [2, 0]}
        assert masks == {2: [True, False, True, True], 0: [True, False, True, False]}
        # reset() of some sub-envs: the masks (and a send's default env_id) are theirs.
        obs, info = pool.reset(np.array([0]))
        assert info["env_id"].tolist() == [0]
        assert obs["position"].tolist() == [[0, 0]]
        np.testing.assert_array_equal(pool.action_masks(), [[True, False, False, True]])
        pool.send(np.array([0]))  # up, for sub-env 0
        pool.send(np.array([0]), np.array([1]))
        obs, _, _, _, info = pool.recv()
        positions = dict(zip(info["env_id"].tolist(), obs["position"].tolist(), strict=True))
        assert positions == {0: [0, 1], 1: [1, 1]}


# --------------------------------------------------------------------------- faults


def test_killed_server_raises_sub_env_error_naming_it() -> None:
    with LocalServerProcess(["gymnasium", "--env-id", "CartPole-v1"]) as server:
        url = server.base_url
        assert url is not None
        assert server.pid is not None
        pool = make_pool(None, 2, batch_size=1, base_url=url, reply_timeout=30)
        try:
            pool.reset(seed=0)
            os.kill(server.pid, signal.SIGKILL)
            pool.send(np.zeros(2, dtype=np.int64), np.array([0, 1]))
            with pytest.raises(SubEnvError) as caught:
                pool.recv()
            assert caught.value.url.startswith(url.replace("http://", "ws://"))
            assert caught.value.index in (0, 1)
            assert f"sub-env {caught.value.index} " in str(caught.value)
            assert "reconnect=True" in str(caught.value)
        finally:
            pool.close()


def test_reconnect_returns_the_sub_envs_in_flight_truncated() -> None:
    pool = make_pool("openenv/CartPole-v1", 2, batch_size=2, reconnect=True, reply_timeout=30)
    try:
        pool.reset(seed=0)
        (server,) = pool.servers
        assert isinstance(server, LocalServerProcess)
        assert server.pid is not None
        old_pid, old_url = server.pid, pool.base_urls[0]
        # The embedded server may have workers (it requires its provider's token).
        for pid in {old_pid, *_worker_pids(old_url, server.token)}:
            os.kill(pid, signal.SIGKILL)
        pool.send(np.zeros(2, dtype=np.int64), np.array([0, 1]))
        _, rew, term, trunc, info = pool.recv()
        assert trunc.all()
        assert not term.any()
        assert info[RECONNECTED_KEY].all()
        _, rew, term, trunc, info = pool.step(np.zeros(2, dtype=np.int64))  # reset by it
        assert (rew == 0.0).all()
        assert not trunc.any()
        assert server.pid != old_pid
        assert pool.base_urls == [server.base_url] * 2
        _, rew, *_ = pool.step(np.ones(2, dtype=np.int64))
        assert rew.tolist() == [1.0, 1.0]
    finally:
        pool.close()


def test_close_with_steps_in_flight_does_not_wait(sleepy_url: str) -> None:
    pool: OpenEnvPool = make_pool(None, 2, batch_size=1, base_url=sleepy_url)
    pool.reset(seed=[SLOW_SEED, SLOW_SEED])
    pool.send(np.ones(2, dtype=np.int64), np.array([0, 1]))
    start = time.monotonic()
    pool.close()
    assert time.monotonic() - start < SLOW_SECONDS / 2


def _worker_pids(url: str, token: str | None = None) -> set[int]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return {
        httpx.get(url + "/capacity", headers=headers, timeout=10).json()["pid"] for _ in range(24)
    }
