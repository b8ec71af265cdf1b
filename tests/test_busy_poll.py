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
    FIRST_QUIET,
    MAX_QUIET,
    MIN_JUDGED_SPIN,
    NAP_OVERSHOOT,
    NAP_SHARE,
    BusyPoller,
    SpinRule,
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
        misses = 0
        while poller.spinning and misses < 50:
            assert poller.spin() is False  # the budget runs out
            misses += 1
        # Each miss wastes the budget, each saved wake-up is worth 50 us: about ten misses
        # (fewer on a loaded machine, where a spin may be preempted).
        assert 0 < misses < 50
        assert not poller.spinning
        assert poller.spin() is False  # not spinning: the wait is measured when it ends
        right.send(b"y")
        time.sleep(0.01)
        poller.arrived()
        assert poller.rule.gaps == misses + 2  # the frame, the misses, the measured wait
        poller.unregister(left.fileno())
        poller.unregister(left.fileno())  # unknown: ignored
        assert poller.spin() is False
    finally:
        left.close()
        right.close()


def test_the_rule_spins_while_spins_keep_the_cpu() -> None:
    rule = SpinRule(budget=300e-6)
    for step in range(1000):
        now = step * 1e-3
        assert rule.spin_pays(now)
        rule.note_spin(wall=200e-6, cpu=190e-6, now=now)  # the spin had the core
        rule.note_gap(200e-6)  # and caught the frame: a wake-up saved
    assert rule.preemptions == 0
    assert rule.spins == 1000


def test_the_rule_stops_spinning_when_a_spin_is_preempted_and_probes_again() -> None:
    rule = SpinRule(budget=300e-6)
    # Four CPU-bound processes beside it: the yield hands the core away for a time slice.
    rule.note_spin(wall=4e-3, cpu=30e-6, now=10.0)
    assert rule.preemptions == 1
    assert not rule.spin_pays(10.0)
    assert not rule.spin_pays(10.0 + FIRST_QUIET / 2)  # waits sleep in select meanwhile
    assert rule.spin_pays(10.0 + FIRST_QUIET)  # one probe
    # Each preempted probe doubles the quiet, up to MAX_QUIET.
    now, quiets = 10.0 + FIRST_QUIET, []
    for _ in range(8):
        rule.note_spin(wall=4e-3, cpu=30e-6, now=now)
        quiets.append(rule.quiet_until - now)
        now = rule.quiet_until
    assert quiets[:4] == [2 * FIRST_QUIET, 4 * FIRST_QUIET, 8 * FIRST_QUIET, MAX_QUIET]
    assert quiets[-1] == MAX_QUIET
    # The load went away: the probe keeps the CPU, spinning is back for every wait.
    assert rule.spin_pays(now)
    rule.note_spin(wall=250e-6, cpu=240e-6, now=now)
    assert rule.spin_pays(now)
    assert rule.spin_pays(now + 1e-3)
    rule.note_spin(wall=4e-3, cpu=30e-6, now=now + 1.0)  # a later preemption starts over
    assert rule.quiet_until == now + 1.0 + FIRST_QUIET


def test_the_rule_does_not_judge_a_spin_too_short_to_tell() -> None:
    rule = SpinRule(budget=300e-6)
    rule.note_spin(wall=MIN_JUDGED_SPIN / 2, cpu=0.0, now=1.0)  # found the frame at once
    assert rule.spin_pays(1.0)
    assert rule.spins == 0


def test_a_preempted_spin_quiets_a_poller_on_real_sockets() -> None:
    left, right = socket.socketpair()
    try:
        poller = BusyPoller(budget=0.002)
        poller.register(left.fileno())
        poller.rule.note_spin(wall=4e-3, cpu=30e-6, now=time.perf_counter())
        right.send(b"x")
        assert not poller.spinning
        assert poller.spin() is False  # the frame is there, but the wait sleeps in select
        left.recv(1)
        poller.arrived()
        assert poller.rule.gaps == 1  # the wait that did not spin was measured
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
        for _ in range(200):
            poller.rule.note_gap(0.01)  # frames came long after the budget
        assert poller.spin() is False
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
