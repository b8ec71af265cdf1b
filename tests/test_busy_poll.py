"""Busy-polling (:mod:`openenv_gym.busy_poll`): the spin itself on real sockets, and the
``busy_poll=`` option of the envs against a real server on 127.0.0.1."""

from __future__ import annotations

import math
import socket
import time
from collections.abc import Iterator

import pytest

from openenv_gym import OpenEnvEnv, OpenEnvVectorEnv
from openenv_gym.busy_poll import (
    MAX_MISSES,
    NAP_OVERSHOOT,
    NAP_SHARE,
    BusyPoller,
    check_busy_poll,
)
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.errors import EnvConfigError
from openenv_gym.server.thread import ServerThread


@pytest.fixture(scope="module")
def cartpole_url() -> Iterator[str]:
    with ServerThread(gymnasium_server("CartPole-v1", max_sessions=8)) as server:
        yield server.url


def test_busy_poller_returns_on_data_and_stops_spinning_for_slow_peers() -> None:
    left, right = socket.socketpair()
    try:
        poller = BusyPoller(budget=0.002)
        assert poller.spin() is False  # nothing registered: no spin at all
        poller.register(left.fileno())
        assert poller.spinning
        right.send(b"x")
        assert poller.spin() is True
        left.recv(1)
        for _ in range(MAX_MISSES):
            assert poller.spin() is False  # the budget runs out
        assert not poller.spinning
        started = time.perf_counter()
        assert poller.spin() is False  # paused: returns without spinning
        assert time.perf_counter() - started < 0.002
        poller.spin()
        poller.arrived()  # a frame right after the wait started re-arms the spin
        assert poller.spinning
        right.send(b"y")
        assert poller.spin() is True
        poller.unregister(left.fileno())
        poller.unregister(left.fileno())  # unknown: ignored
        assert poller.spin() is False
    finally:
        left.close()
        right.close()


def test_a_hybrid_spin_naps_through_part_of_the_usual_wait() -> None:
    left, right = socket.socketpair()
    try:
        poller = BusyPoller(budget=0.05, hybrid=True)
        poller.register(left.fileno())
        assert poller.usual_wait is None
        right.send(b"x")
        assert poller.spin() is True  # no usual wait yet: no nap
        first = poller.usual_wait
        assert first is not None
        assert first < 0.05
        left.recv(1)
        poller.usual_wait = 0.02  # as if replies took 20 ms
        right.send(b"y")
        started = time.perf_counter()
        assert poller.spin() is True
        assert time.perf_counter() - started >= 0.02 * NAP_SHARE - NAP_OVERSHOOT
        # The wait it measured (the nap's length) pulls the average down, not up.
        assert poller.usual_wait < 0.02
    finally:
        left.close()
        right.close()


def test_a_late_frame_does_not_rearm_a_paused_spin() -> None:
    left, right = socket.socketpair()
    try:
        poller = BusyPoller(budget=0.001)
        poller.register(left.fileno())
        for _ in range(MAX_MISSES):
            poller.spin()
        poller.spin()
        time.sleep(0.01)  # the frame comes long after the budget
        poller.arrived()
        assert not poller.spinning
    finally:
        left.close()
        right.close()


def test_a_zero_budget_never_spins() -> None:
    left, right = socket.socketpair()
    try:
        poller = BusyPoller(budget=0)
        poller.register(left.fileno())
        right.send(b"x")
        assert not poller.spinning
        assert poller.spin() is False
    finally:
        left.close()
        right.close()


def test_a_negative_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="expected a busy-poll budget >= 0 seconds, got -1"):
        BusyPoller(-1)


@pytest.mark.parametrize("value", [-1e-6, 0.5, math.nan, math.inf, True, "300e-6", None])
def test_a_bad_busy_poll_option_names_the_fix(value: object) -> None:
    with pytest.raises(EnvConfigError, match=r"expected busy_poll in seconds, 0\.\.0\.1 .*got"):
        check_busy_poll(value)


def test_the_env_refuses_a_bad_busy_poll(cartpole_url: str) -> None:
    with pytest.raises(EnvConfigError, match="busy_poll=300e-6"):
        OpenEnvEnv(cartpole_url, busy_poll=-1)


@pytest.mark.parametrize("busy_poll", [0, 300e-6])
def test_envs_step_with_and_without_spinning(cartpole_url: str, busy_poll: float) -> None:
    env = OpenEnvEnv(cartpole_url, busy_poll=busy_poll)
    try:
        assert env.connect_options.busy_poll == busy_poll
        observation, _ = env.reset(seed=3)
        assert observation in env.observation_space
        for _ in range(20):
            observation, _, terminated, truncated, _ = env.step(env.action_space.sample())
            assert observation in env.observation_space
            if terminated or truncated:
                env.reset()
    finally:
        env.close()
    envs = OpenEnvVectorEnv(None, 3, base_url=cartpole_url, busy_poll=busy_poll)
    try:
        observations, _ = envs.reset(seed=3)
        assert observations.shape == (3, 4)
        for _ in range(20):
            observations, rewards, *_ = envs.step(envs.action_space.sample())
            assert observations.shape == (3, 4)
            assert rewards.shape == (3,)
    finally:
        envs.close()
