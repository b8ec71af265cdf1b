"""Tests' helpers: two vector envs stepped alike, and two batch results read alike, must
give the same values (and dtypes, and key orders) at every step."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium.utils.env_checker import data_equivalence

from openenv_gym.wire.batch import BatchResult


def assert_same_step(step: int, ours: tuple[Any, ...], other: tuple[Any, ...]) -> None:
    """The results of one ``reset`` (2 items) or ``step`` (5) of two vector envs are equal."""
    names = ("obs", "infos") if len(ours) == 2 else ("obs", "rewards", "term", "trunc", "infos")
    for name, a, b in zip(names, ours, other, strict=True):
        assert data_equivalence(a, b), f"step {step}: {name} differ:\n{a}\n{b}"
    assert list(ours[-1]) == list(other[-1]), f"step {step}: info keys differ"
    for key, value in ours[-1].items():  # dtypes too (data_equivalence compares values)
        assert getattr(value, "dtype", None) == getattr(other[-1][key], "dtype", None), key


def step_alike(
    ours: Any,
    other: Any,
    steps: int,
    *,
    seed: int = 0,
    reset_ended: bool = False,
    after_step: Callable[[int], None] | None = None,
) -> None:
    """Reset both with ``seed``, then step both with the same random actions ``steps``
    times, comparing every result; ``reset_ended``: reset what ended (``DISABLED``
    autoreset); ``after_step(step)`` runs after each step's comparison."""
    assert_same_step(-1, ours.reset(seed=seed), other.reset(seed=seed))
    ours.single_action_space.seed(seed)
    for step in range(steps):
        actions = np.array([ours.single_action_space.sample() for _ in range(ours.num_envs)])
        result = ours.step(actions)
        assert_same_step(step, result, other.step(actions))
        if after_step is not None:
            after_step(step)
        ended = result[2] | result[3]
        if reset_ended and ended.any():
            options = {"reset_mask": ended}
            assert_same_step(step, ours.reset(options=options), other.reset(options=options))


def assert_same_result(a: BatchResult, b: BatchResult) -> None:
    """Two batch results are equal: values, the fields' order (the infos' key order), the
    Python types of list values."""
    assert a.indices == b.indices
    assert a.reward == b.reward
    assert a.done == b.done
    assert list(a.fields) == list(b.fields)
    for name in a.fields:
        assert data_equivalence(a.fields[name], b.fields[name]), name
        if isinstance(b.fields[name], list):
            assert [type(v) for v in a.fields[name]] == [type(v) for v in b.fields[name]], name
    assert a.metadata == b.metadata
    assert a.metadata_field == b.metadata_field
    assert a.final == b.final
