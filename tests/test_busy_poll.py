"""Busy-polling (:mod:`openenv_gym.busy_poll`): the spin itself on real sockets, and the
``busy_poll=`` option of the envs against a real server on 127.0.0.1."""

from __future__ import annotations

import math
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv_gym import OpenEnvEnv, OpenEnvVectorEnv
from openenv_gym.busy_poll import (
    FIRST_QUIET,
    LOAD_SAMPLE_EVERY,
    MAX_QUIET,
    MIN_JUDGED_SPIN,
    NAP_OVERSHOOT,
    NAP_SHARE,
    PREEMPTED_IN_A_ROW,
    WAIT_SMOOTHING,
    BusyPoller,
    SpinRule,
    check_busy_poll,
    runnable_tasks,
)
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.errors import EnvConfigError
from openenv_gym.server.thread import ServerThread


def _idle() -> int:
    """The runnable tasks of an idle machine: the reader alone (tests that need a spin)."""
    return 1


@pytest.fixture(scope="module")
def cartpole_url() -> Iterator[str]:
    with ServerThread(gymnasium_server("CartPole-v1", max_sessions=8)) as server:
        yield server.url


def test_busy_poller_returns_on_data_and_stops_spinning_for_slow_peers() -> None:
    left, right = socket.socketpair()
    try:
        poller = BusyPoller(budget=0.002, runnable=_idle)
        assert poller.spin() is False  # nothing registered: no spin at all
        poller.register(left.fileno())
        assert poller.spinning
        right.send(b"x")
        assert poller.spin() is True
        left.recv(1)
        poller.rule.quiet_until = 0.0  # a loaded machine may preempt that spin
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
    assert rule.spin_pays(10.0)  # one preempted spin alone is not enough to tell
    rule.note_spin(wall=4e-3, cpu=30e-6, now=10.0)
    assert rule.preemptions == 2
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
    rule.note_spin(wall=4e-3, cpu=30e-6, now=now + 1.0)  # later preemptions start over
    rule.note_spin(wall=4e-3, cpu=30e-6, now=now + 1.0)
    assert rule.quiet_until == now + 1.0 + FIRST_QUIET


def test_a_lone_preempted_spin_among_kept_ones_does_not_quiet_the_rule() -> None:
    # An idle machine: about one spin in 2,500 loses the core for a moment.
    rule = SpinRule(budget=300e-6)
    for now in range(10):
        rule.note_spin(wall=200e-6, cpu=190e-6, now=float(now))
        rule.note_spin(wall=4e-3, cpu=30e-6, now=float(now))
        assert rule.spin_pays(float(now))
    assert rule.preemptions == 10
    assert rule.quiet_until == 0.0


def test_the_rule_does_not_judge_a_spin_too_short_to_tell() -> None:
    rule = SpinRule(budget=300e-6)
    rule.note_spin(wall=MIN_JUDGED_SPIN / 2, cpu=0.0, now=1.0)  # found the frame at once
    assert rule.spin_pays(1.0)
    assert rule.spins == 0


def test_a_preempted_spin_quiets_a_poller_on_real_sockets() -> None:
    left, right = socket.socketpair()
    try:
        poller = BusyPoller(budget=0.002, runnable=_idle)
        poller.register(left.fileno())
        for _ in range(PREEMPTED_IN_A_ROW):
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
        poller = BusyPoller(budget=0.05, hybrid=True, runnable=_idle)
        poller.register(left.fileno())
        assert poller.usual_wait is None
        right.send(b"x")
        assert poller.spin() is True  # no usual wait yet: no nap
        # It learnt the wait, unless a loaded machine preempted it past the budget.
        assert poller.usual_wait is None or poller.usual_wait <= 0.05
        left.recv(1)
        poller.usual_wait = 0.02  # as if replies took 20 ms
        poller.rule.quiet_until = 0.0  # a loaded machine may preempt the first spin
        right.send(b"y")
        started = time.perf_counter()
        assert poller.spin() is True
        assert time.perf_counter() - started >= 0.02 * NAP_SHARE - NAP_OVERSHOOT
        # The wait it measured (about the nap's length; never more than the budget, however
        # late a loaded machine woke it) moves the average by a tenth of the difference.
        assert poller.usual_wait <= 0.02 + WAIT_SMOOTHING * (0.05 - 0.02)
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


def test_the_rule_never_spins_while_the_cores_are_oversubscribed() -> None:
    # Two cores; four CPU-bound processes, the client and the server are runnable: six.
    rule = SpinRule(budget=300e-6, cores=2)
    assert rule.spin_pays(0.0)  # nothing read yet: the other signals decide
    assert rule.load_due(0.0)
    rule.note_runnable(6, now=0.0)
    assert rule.oversubscribed
    assert not rule.spin_pays(0.0)  # no spin has to be preempted to find it out
    assert not rule.load_due(LOAD_SAMPLE_EVERY / 2)  # read at most every 50 ms
    assert rule.load_due(LOAD_SAMPLE_EVERY)
    now, reads = 0.0, 0
    while not rule.spin_pays(now):  # the processes stop: the client and the server remain
        now += LOAD_SAMPLE_EVERY
        rule.note_runnable(2, now)
        reads += 1
    assert 3 <= reads <= 8  # spinning is back within 0.4 s
    assert rule.preemptions == 0


@pytest.mark.parametrize("runnable", [[2, 2, 3, 2], [3, 3, 4, 3, 3, 4, 3]])
def test_the_rule_spins_beside_its_own_peers(runnable: list[int]) -> None:
    # Idle, a single env's client and server (2), or a vector env's client and two busy
    # server processes (3) with a passing kernel thread, on two cores.
    rule = SpinRule(budget=300e-6, cores=2)
    for step, count in enumerate(runnable * 20):
        now = step * LOAD_SAMPLE_EVERY
        rule.note_runnable(count, now)
        assert rule.spin_pays(now), (step, rule.others)


def test_a_machine_without_the_count_keeps_the_other_signals() -> None:
    rule = SpinRule(budget=300e-6, cores=2)
    rule.note_runnable(None, now=1.0)
    assert not rule.load_due(1e9)  # not read again
    assert rule.spin_pays(1.0)
    for _ in range(PREEMPTED_IN_A_ROW):
        rule.note_spin(wall=4e-3, cpu=30e-6, now=1.0)  # preemptions still stop it
    assert not rule.spin_pays(1.0)


def test_runnable_tasks_reads_the_fourth_field_of_loadavg(tmp_path: Path) -> None:
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("3.29 4.65 5.78 7/164 25512\n")
    assert runnable_tasks(str(loadavg)) == 7
    loadavg.write_text("not a load average\n")
    assert runnable_tasks(str(loadavg)) is None
    assert runnable_tasks(str(tmp_path / "missing")) is None


def test_an_oversubscribed_poller_sleeps_and_measures_the_gap() -> None:
    left, right = socket.socketpair()
    calls: list[int] = []

    def crowded() -> int:
        calls.append(1)
        return 10_000  # more runnable tasks than any machine's cores

    try:
        poller = BusyPoller(budget=0.002, runnable=crowded)
        poller.register(left.fileno())
        right.send(b"x")
        assert poller.spin() is False  # the frame is there, but the wait sleeps
        assert calls == [1]
        assert poller.rule.oversubscribed
        left.recv(1)
        poller.arrived()
        assert poller.rule.gaps == 1
        assert poller.rule.spins == 0
    finally:
        left.close()
        right.close()


def test_a_hybrid_spin_does_not_learn_a_wait_longer_than_its_budget() -> None:
    poller = BusyPoller(budget=300e-6, hybrid=True, runnable=_idle)
    poller.note_wait(30e-3)  # a spin preempted for 30 ms found its frame at last
    assert poller.usual_wait is None  # the next spin does not nap for 22 ms
    poller.note_wait(200e-6)
    assert poller.usual_wait == 200e-6
    poller.note_wait(50e-3)
    assert poller.usual_wait == 200e-6


def test_slept_gaps_that_a_spin_would_have_caught_bring_spinning_back() -> None:
    # A single Pong env: replies come 250-300 µs after the request, close to the client's
    # 300 µs budget. Asleep, each gap also holds the wake-up (about 50 µs on a VM).
    rule = SpinRule(budget=300e-6)
    for _ in range(200):
        rule.note_gap(5e-3)  # a slow moment (an episode's reset, a burst of load)
    assert not rule.gaps_pay
    for _ in range(200):
        rule.note_gap(330e-6, asleep=True)  # 280 µs of reply, 50 µs of wake-up
    assert rule.gaps_pay  # the spin would have caught them: it comes back
    scored_as_measured = SpinRule(budget=300e-6)
    for _ in range(200):
        scored_as_measured.note_gap(5e-3)
    for _ in range(200):
        scored_as_measured.note_gap(330e-6)
    assert not scored_as_measured.gaps_pay  # what the rule did before: stopped for good


@pytest.mark.parametrize("gap", [10e-6, 60e-6])
def test_a_slept_gap_without_room_for_a_wake_up_is_scored_as_measured(gap: float) -> None:
    asleep, awake = SpinRule(budget=300e-6), SpinRule(budget=300e-6)
    asleep.note_gap(gap, asleep=True)
    awake.note_gap(gap)
    assert asleep.score == awake.score


def test_a_slept_gap_long_past_the_budget_is_still_a_wasted_spin() -> None:
    rule = SpinRule(budget=300e-6)
    for _ in range(200):
        rule.note_gap(2e-3, asleep=True)  # a slow env: 2 ms, wake-up or not
    assert not rule.gaps_pay
