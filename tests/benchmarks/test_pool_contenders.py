"""The pool's contenders in the suite: the plan that picks them, real tiny runs against our
server and the official-package ``Variable`` server (no speed is asserted: the targets are
the benchmark's, not the tests'), the starvation check and the targets' rows."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from openenv.core.env_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from openenv_gym.bench import build_parser
from openenv_gym.bench.context import Settings
from openenv_gym.bench.measure import STATUS_OK, ActionStream, CellResult
from openenv_gym.bench.pool_contenders import (
    POOL_TARGETS,
    PoolDriver,
    StarvedSubEnvError,
    pool_targets,
)
from openenv_gym.bench.report import parse_table
from openenv_gym.bench.runner import run_groups
from openenv_gym.bench.suite import default_envs, plan, settings_from_args
from openenv_gym.bench.targets import TARGETS, format_targets
from openenv_gym.vector.pool import make_pool
from tests.official_peer import serve_official_app

pytestmark = pytest.mark.timeout(240)


def _keys(settings: Settings) -> list[list[tuple[str, str, int]]]:
    return [[(c.env, c.key, c.num_envs) for c in g.cells] for g in plan(settings)]


def test_the_variable_env_runs_its_own_contenders_only_when_they_are_named() -> None:
    assert default_envs(False, None) == ["CartPole", "Pong"]
    args = build_parser().parse_args(["--contenders", "variable-vector,variable-pool", "--n", "16"])
    settings = settings_from_args(args)
    assert list(settings.envs) == ["CartPole", "Pong", "Variable"]
    # CartPole and Pong have none of those contenders: no group, no servers started.
    assert _keys(settings) == [
        [("Variable", "variable-vector", 16), ("Variable", "variable-pool", 16)]
    ]
    everything = Settings(envs=["CartPole", "Variable"], sizes=[8])
    cartpole, variable = _keys(everything)
    keys = {key for _, key, _ in cartpole}
    assert {"ours-binary", "ours-pool"} <= keys
    assert not keys & {"learner-vector", "learner-pool", "variable-vector", "variable-pool"}
    assert {key for _, key, _ in variable} == {"variable-vector", "variable-pool"}
    learner = Settings(envs=["Pong"], sizes=[32], contenders=["learner-vector", "learner-pool"])
    assert _keys(learner) == [[("Pong", "learner-vector", 32), ("Pong", "learner-pool", 32)]]


def test_pool_rows_run_against_our_server_and_the_variable_server() -> None:
    settings = Settings(
        envs=["CartPole", "Variable"],
        sizes=[4],
        seconds=0.4,
        warmup=0.1,
        workers=1,
        contenders=["ours-binary", "ours-pool", "learner-pool", "variable-vector", "variable-pool"],
    )
    groups = plan(settings, log=lambda line: None)
    results = run_groups(groups, settings.seconds, settings.warmup, log=lambda line: None)
    by_key = {r.contender: r for r in results}
    assert set(by_key) == set(settings.contenders or ())
    for result in results:
        assert result.status == STATUS_OK, (result.contender, result.reason)
        assert result.steps_per_s is not None
        assert result.steps_per_s > 0
    notes = [note for group in groups for note in group.notes]
    for label in ("learner-pool CartPole N=4 batch_size=2", "variable-pool Variable N=4"):
        assert any(note.startswith(label) and "every sub-env served" in note for note in notes)


class _SeededSlowAction(Action):
    action: int = Field(default=0, ge=0, lt=2)


class _TickObservation(Observation):
    ticks: int = 0


class _SeededSlowEnvironment(Environment):
    """Steps take a second for the session reset with seed 5, no time for the others."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._slow = False
        self._state = State(step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kw: Any) -> Any:
        self._slow = seed == 5
        return _TickObservation(reward=0.0, done=False)

    def step(self, action: _SeededSlowAction, timeout_s: float | None = None, **kw: Any) -> Any:
        if self._slow:
            time.sleep(1.0)
        return _TickObservation(ticks=1, reward=1.0, done=False)

    @property
    def state(self) -> State:
        return self._state


@pytest.fixture(scope="module")
def seeded_slow_url() -> Iterator[str]:
    app = create_fastapi_app(
        _SeededSlowEnvironment, _SeededSlowAction, _TickObservation, max_concurrent_envs=16
    )
    with serve_official_app(app) as url:
        yield url


def test_a_pool_call_counts_its_batch_and_every_sub_env_served(seeded_slow_url: str) -> None:
    notes: list[str] = []
    pool = make_pool(None, 4, 2, base_url=seeded_slow_url)
    driver = PoolDriver(pool, 0.0, notes.append, "a pool")  # resets sub-env i with seed i
    try:
        window = driver.run(ActionStream(np.zeros((4, 4), dtype=np.int64)), 0.2)
        assert window.calls >= 8
        assert window.env_steps == window.calls * 2  # a call is a batch, not N
    finally:
        driver.close()
    assert len(notes) == 1
    assert notes[0].startswith("a pool: every sub-env served, ")


def test_a_starved_sub_env_fails_the_cell(seeded_slow_url: str) -> None:
    notes: list[str] = []
    pool = make_pool(None, 6, 1, base_url=seeded_slow_url)
    driver = PoolDriver(pool, 0.0, notes.append, "a pool")  # sub-env 5 steps in a second
    try:
        driver.run(ActionStream(np.zeros((4, 6), dtype=np.int64)), 0.05)  # the warm-up
        with pytest.raises(StarvedSubEnvError, match=r"sub-envs \[5\] got no step"):
            driver.run(ActionStream(np.zeros((4, 6), dtype=np.int64)), 0.3)
    finally:
        driver.close()
    assert notes == []  # no window passed the check: nothing claims every sub-env was served


def _cell(key: str, env: str, n: int, rate: float) -> CellResult:
    return CellResult(env, key, key, n, STATUS_OK, steps_per_s=rate)


def test_pool_targets_show_only_when_measured_and_the_learner_row_only_over_wan() -> None:
    assert format_targets([], [*TARGETS, *pool_targets("loopback")]) == ""
    cells = [
        _cell("ours-binary", "CartPole", 16, 1000.0),
        _cell("ours-pool", "CartPole", 16, 990.0),
        _cell("learner-vector", "Pong", 32, 100.0),
        _cell("learner-pool", "Pong", 32, 125.0),
    ]
    on_loopback = parse_table(format_targets(cells, [*TARGETS, *pool_targets("loopback")]))
    assert [row["target"] for row in on_loopback] == [POOL_TARGETS[0].text]
    assert on_loopback[-1]["ratio"] == "0.99x"
    assert on_loopback[-1]["verdict"] == "**met**"
    over_wan = parse_table(format_targets(cells, [*TARGETS, *pool_targets("wan")]))
    assert over_wan[-1]["target"] == POOL_TARGETS[-1].text
    assert (over_wan[-1]["verdict"], over_wan[-1]["ratio"]) == ("**met**", "1.25x")


def test_a_target_takes_the_median_of_interleaved_pairs() -> None:
    cells = [
        _cell("ours-binary", "CartPole", 16, 1000.0),
        _cell("ours-pool", "CartPole", 16, 3000.0),  # a pair disturbed by other work
        _cell("ours-binary", "CartPole", 16, 1100.0),
        _cell("ours-pool", "CartPole", 16, 1050.0),
        _cell("ours-binary", "CartPole", 16, 2000.0),
        _cell("ours-pool", "CartPole", 16, 1000.0),
    ]
    verdict = POOL_TARGETS[0].assess(cells)
    assert verdict.numbers == "ours-pool 1,050 / ours-binary 1,100 steps/s"
    assert verdict.ratio == pytest.approx(1050 / 1100)
