"""The compression policy's decisions, fed measurements (no clock, no timed assertion).

A link that is the bottleneck (raw frames cost more per step than packed ones) gets packed
frames; a link that is not (packing costs more than it saves) gets raw frames; a link that
changes during the run changes the choice within the revise interval; a choice that keeps
winning is probed ever less often.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from openenv_gym.wire.compression_policy import (
    BATCH_WARMUP_STEPS,
    CLEAR_FACTOR,
    EARLY_FACTOR,
    EARLY_STEPS,
    MARGIN,
    MAX_REVISE_STEPS,
    PROBE_BUDGET,
    PROBE_STEPS,
    REVISE_STEPS,
    WARMUP_STEPS,
    CompressionPolicy,
)

Cost = Callable[[bool], float]


def tunnel(compressed: bool) -> float:
    """Pong N=16 through 20 ms / 100 Mbit/s: a raw frame is 1.6 MB (130 ms on the link)."""
    return 0.025 if compressed else 0.150


def same_host(compressed: bool) -> float:
    """Loopback without shared memory: packing costs more than the copy it saves."""
    return 0.0060 if compressed else 0.0050


def run(policy: CompressionPolicy, cost: Cost, steps: int) -> list[bool]:
    asked = []
    for _ in range(steps):
        choice = policy.choice()
        asked.append(choice)
        policy.record(choice, cost(choice))
    return asked


def test_it_compresses_when_the_link_is_the_bottleneck() -> None:
    policy = CompressionPolicy()
    asked = run(policy, tunnel, PROBE_STEPS + 1)
    # Packed first; the raw probe ends after one step that costs 6x a packed one.
    assert asked == [True] * PROBE_STEPS + [False]
    assert policy.compress is True
    assert policy.cost(True) == pytest.approx(0.025)
    assert policy.cost(False) == pytest.approx(0.150)


def test_it_stays_raw_when_packing_costs_more_than_it_saves() -> None:
    policy = CompressionPolicy()
    asked = run(policy, same_host, 2 * PROBE_STEPS)
    assert asked == [True] * PROBE_STEPS + [False] * PROBE_STEPS  # a near tie: all 8 each
    assert policy.compress is False


def test_the_choice_follows_a_link_that_changes() -> None:
    policy = CompressionPolicy()
    run(policy, same_host, 2 * PROBE_STEPS)
    assert policy.compress is False
    # The same server, now reached through a tunnel: noticed at the next probe.
    run(policy, tunnel, MAX_REVISE_STEPS + PROBE_STEPS)
    assert policy.compress is True
    assert policy.switches == 1
    # And back: the tunnel is gone.
    run(policy, same_host, MAX_REVISE_STEPS + PROBE_STEPS)
    assert policy.compress is False
    assert policy.switches == 2


@pytest.mark.parametrize("cost", [tunnel, same_host], ids=["tunnel", "same-host"])
def test_a_settled_choice_spends_about_the_budget_probing(cost: Cost) -> None:
    policy = CompressionPolicy()
    steps = 50_000
    asked = run(policy, cost, steps)
    chosen = policy.compress
    assert chosen is not None
    best, other = cost(chosen), cost(not chosen)
    spent = sum(cost(a) for a in asked)
    ideal = steps * best
    # What probing the loser cost beyond always taking the winner, start included.
    assert (spent - ideal) / ideal < 2 * PROBE_BUDGET + PROBE_STEPS * other / ideal
    assert policy.switches == 0


def test_a_difference_within_the_margin_does_not_flip_the_choice() -> None:
    policy = CompressionPolicy()
    run(policy, same_host, 2 * PROBE_STEPS)
    assert policy.compress is False
    slightly = 0.0050 * (1 - MARGIN / 2)
    run(policy, lambda c: slightly if c else 0.0050, 4 * MAX_REVISE_STEPS)
    assert policy.compress is False
    assert policy.switches == 0


def test_one_outlier_in_a_probe_does_not_decide() -> None:
    policy = CompressionPolicy()
    # The packed probe: one step disturbed by other work, seven normal ones.
    costs = iter([5.0] + [0.025] * (PROBE_STEPS - 1) + [0.150] * PROBE_STEPS)
    for _ in range(PROBE_STEPS + 1):
        choice = policy.choice()
        policy.record(choice, next(costs))
    assert policy.compress is True  # the median, not the mean, of the packed probe


def test_a_reply_to_a_request_of_the_other_choice_is_not_counted() -> None:
    policy = CompressionPolicy()
    policy.record(False, 99.0)  # a stale reply while packed frames are being probed
    assert policy.cost(False) is None
    run(policy, tunnel, PROBE_STEPS + 1)
    assert policy.compress is True


def test_warm_up_steps_ask_packed_and_do_not_count() -> None:
    # A fresh session's steps get cheaper as it warms up: packed steps that cost more only
    # because they came first must not decide.
    policy = CompressionPolicy(warmup=WARMUP_STEPS)
    warming = [0.010 - 0.0002 * k for k in range(WARMUP_STEPS)]  # 10 ms falling to ~4 ms
    for seconds in warming:
        assert policy.choice() is True
        policy.record(True, seconds)
    assert policy.cost(True) is None  # nothing measured yet
    asked = run(policy, same_host, 2 * PROBE_STEPS)
    assert asked == [True] * PROBE_STEPS + [False] * PROBE_STEPS
    assert policy.compress is False  # decided on the warm costs only
    without = CompressionPolicy()
    for seconds in warming[:PROBE_STEPS]:
        without.record(without.choice(), seconds)
    assert without.cost(True) == pytest.approx(0.010 - 0.0002 * 3.5)  # the cold steps count


def test_one_noisy_step_does_not_cut_a_probe_of_the_better_choice() -> None:
    # One host under load: raw is 10% cheaper, but the first raw step of the probe lands in
    # another process's burst (1.6x the packed median). It must not end the probe.
    policy = CompressionPolicy()
    costs = iter([0.0060] * PROBE_STEPS + [0.0060 * 1.6] + [0.0054] * (PROBE_STEPS - 1))
    asked = []
    for _ in range(2 * PROBE_STEPS):
        choice = policy.choice()
        asked.append(choice)
        policy.record(choice, next(costs))
    assert asked == [True] * PROBE_STEPS + [False] * PROBE_STEPS  # the raw probe ran out
    assert policy.compress is False


@pytest.mark.parametrize(
    ("factor", "steps"),
    [(CLEAR_FACTOR * 1.1, 1), ((EARLY_FACTOR + CLEAR_FACTOR) / 2, EARLY_STEPS)],
    ids=["far-worse", "clearly-worse"],
)
def test_a_worse_probe_is_cut_after_one_step_when_far_worse_else_after_early_steps(
    factor: float, steps: int
) -> None:
    policy = CompressionPolicy()
    asked = run(policy, lambda compressed: 0.010 if compressed else 0.010 * factor, 40)
    assert asked[PROBE_STEPS : PROBE_STEPS + steps + 1] == [False] * steps + [True]
    assert policy.compress is True


def test_a_batch_connection_s_reset_and_cold_steps_stay_out_of_the_first_probe() -> None:
    # Pong N=16 on one host, traced: the reset (1.6 s), two cold steps, then steady steps.
    policy = CompressionPolicy(warmup=BATCH_WARMUP_STEPS)
    for seconds in (1.6, 0.020, 0.019, 0.0060):
        assert policy.choice() is True
        policy.record(True, seconds)
    asked = run(policy, same_host, 2 * PROBE_STEPS)
    # The warm-up counted for nothing: a whole packed probe of steady steps, then raw.
    assert asked == [True] * PROBE_STEPS + [False] * PROBE_STEPS
    assert policy.compress is False


def test_a_near_first_call_on_cold_steps_is_checked_again_soon() -> None:
    # The bench's trace: packed steps cost 3.0 or 5.8 ms by turns through the first probe
    # (median 4.26 ms), then 3.1 ms steady; raw steps 3.5 ms. The first call (raw) is near:
    # checked again after REVISE_STEPS.
    policy = CompressionPolicy()
    for k in range(PROBE_STEPS):
        policy.record(policy.choice(), 0.0058 if k % 2 else 0.0030)  # the packed probe, cold
    steady = run(policy, lambda c: 0.0031 if c else 0.0035, REVISE_STEPS + 2 * PROBE_STEPS)
    assert steady[:PROBE_STEPS] == [False] * PROBE_STEPS  # the raw probe: raw chosen
    assert policy.switches == 1  # packed back within REVISE_STEPS
    assert policy.compress is True
    assert steady[-PROBE_STEPS:] == [True] * PROBE_STEPS


def test_a_clear_first_call_keeps_the_budgeted_stay() -> None:
    # A tunnel: the first call is clear (6x), so the next raw probe waits as the budget says.
    policy = CompressionPolicy()
    asked = run(policy, tunnel, PROBE_STEPS + 1 + 4 * REVISE_STEPS)
    assert asked[PROBE_STEPS + 1 :] == [True] * (4 * REVISE_STEPS)
