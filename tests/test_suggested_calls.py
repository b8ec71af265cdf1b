"""Every call we suggest is one that works (issue 26, item 5).

The text of each suggestion (an ``ObservationMismatchError``'s pin, ``pinning_kwargs()``,
``openenv-gym check``'s ``works:`` line) is taken as printed, evaluated, and the env is made
with it against official ``openenv`` servers with the catalog's schema shapes
(tests/official_shapes.py). The refusals whose call holds a placeholder (``Discrete(n)``)
are run with ``n`` filled in by tests/test_official_shapes.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import gymnasium
import gymnasium as gym
import numpy
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.cli import main
from openenv_gym.errors import ObservationMismatchError
from openenv_gym.spaces import space_to_json
from tests.official_shapes import COLUMNS, serve_shape

NAMESPACE = {"gym": gym, "gymnasium": gymnasium, "numpy": numpy}


@pytest.fixture(scope="module")
def control_url() -> Iterator[str]:
    with serve_shape("control") as url:
        yield url


def _keyword(text: str, name: str) -> dict[str, Any]:
    """The ``name={...}`` keyword at the end of ``text``, evaluated as printed."""
    match = re.search(rf"\b{name}=(\{{.*\}})$", text)
    assert match, f"no {name}= suggestion in: {text}"
    return {name: eval(match.group(1), NAMESPACE)}


def _play(env: gym.Env[Any, Any], **reset: Any) -> None:
    obs, _ = env.reset(seed=0, **reset)
    assert env.observation_space.contains(obs)
    obs, *_ = env.step(env.action_space.sample())
    assert env.observation_space.contains(obs)


@pytest.mark.parametrize(
    "given",
    [
        {},  # shapes taken from the reset observation
        {
            "observation_field_shapes": {
                "observations.position": (3,),
                "observations.velocity": (2,),
            }
        },  # shapes the user pinned
        {"observation_field_shapes": {"observations.position": (3,)}},  # one key pinned
    ],
)
def test_the_pin_a_shape_disagreement_suggests_makes_an_env_that_takes_it(
    control_url: str, given: dict[str, Any]
) -> None:
    env = gym.make("openenv/Remote-v0", base_url=control_url, **given)
    try:
        with pytest.raises(ObservationMismatchError) as info:
            env.reset(options={"grow": True})
    finally:
        env.close()
    message = str(info.value)
    assert "observation_field_spaces={'observations'" not in message  # the dotted pin only
    keyword = _keyword(message, "observation_field_shapes")
    fixed = gym.make("openenv/Remote-v0", base_url=control_url, **keyword)
    try:
        _play(fixed, options={"grow": True})
        assert fixed.observation_space["observations"]["position"].shape == (4,)
        # The keys the suggestion names are every key the space had: none dropped.
        env_keys = list(fixed.observation_space["observations"].spaces)
        assert env_keys == [k.split(".", 1)[1] for k in keyword["observation_field_shapes"]]
    finally:
        fixed.close()


@pytest.mark.parametrize(
    ("shape", "given"),
    [
        ("control", {}),
        ("grid", {}),
        ("chat", {}),
        ("nullable", {}),
        ("declared_columns", {}),
        ("columns", {"action_field_spaces": {"column": gymnasium.spaces.Discrete(COLUMNS)}}),
    ],
)
def test_pinning_kwargs_and_checks_works_line_make_the_env(
    shape: str, given: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    with serve_shape(shape) as url:
        env = gym.make("openenv/Remote-v0", base_url=url, **given)
        try:
            pins = env.unwrapped.pinning_kwargs()
            space = env.observation_space, env.action_space
        finally:
            env.close()
        pinned = gym.make(
            "openenv/Remote-v0", base_url=url, **given, **eval(f"dict({pins})", NAMESPACE)
        )
        try:
            assert pinned.unwrapped.inferred_spaces == ()  # everything pinned
            assert (pinned.observation_space, pinned.action_space) == space
            _play(pinned)
        finally:
            pinned.close()
        args = ["check", url, "--max-steps", "3"]
        if given:
            column = json.dumps(space_to_json(given["action_field_spaces"]["column"]))
            args += ["--action-field-space", f"column={column}"]
        main(args)
        works = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("works: ")]
        assert len(works) == 1, works
        made = eval(works[0].removeprefix("works: "), NAMESPACE)
        try:
            assert (made.observation_space, made.action_space) == space
            _play(made)
        finally:
            made.close()
