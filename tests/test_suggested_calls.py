"""Every call we suggest is one that works (issue 26, item 5).

The text of each suggestion (an ``ObservationMismatchError``'s pin, ``pinning_kwargs()``,
``openenv-gym check``'s ``works:`` line) is taken as printed, evaluated, and the env is made
with it against official ``openenv`` servers with the catalog's schema shapes
(tests/official_shapes.py). A refusal's line to paste is evaluated as printed when it says
``Paste`` (complete) or ``Paste (observed ...)`` (complete, from values seen at reset); one
that says ``Paste and edit`` holds a placeholder (issue 31, item 6).
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
from openenv.core.env_server import create_fastapi_app
from openenv.core.env_server.types import Observation
from pydantic import BaseModel, Field

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.cli import main
from openenv_gym.errors import ObservationMismatchError, SpaceMappingError
from openenv_gym.spaces import space_to_json
from tests.official_peer import serve_official_app
from tests.official_shapes import COLUMNS, ChatAction, ChatEnvironment, serve_shape

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


# --------------------------------------------------------------------- issue 31, item 6

#: The line to paste that ends a refusal: its label and the call.
PASTE = re.compile(r"^(Paste(?: and edit| \(observed[^)]*\))?): (gym\.make\(.*\))$")


def _paste(message: str) -> tuple[str, str]:
    match = PASTE.match(message.splitlines()[-1])
    assert match, message
    return match.group(1), match.group(2)


@pytest.mark.parametrize(
    ("shape", "given", "label"),
    [
        # legal actions 0..3 seen at reset: a complete call, labelled observed
        ("columns", {}, "Paste (observed at one reset, not declared; the game may allow more)"),
        # the option already given is kept in the call: complete, nothing observed
        ("unmappable", {"action_field_spaces": {"choice": gymnasium.spaces.Discrete(3)}}, "Paste"),
    ],
)
def test_a_refusals_complete_call_is_pasted_as_printed_and_plays(
    shape: str, given: dict[str, Any], label: str
) -> None:
    with serve_shape(shape) as url:
        with pytest.raises(SpaceMappingError) as info:
            gym.make("openenv/Remote-v0", base_url=url, **given)
        printed, call = _paste(str(info.value))
        assert printed == label
        env = eval(call, NAMESPACE)
        try:
            _play(env)
        finally:
            env.close()


def test_a_call_left_to_edit_says_so_and_names_what_to_fill_in() -> None:
    with serve_shape("unmappable") as url, pytest.raises(SpaceMappingError) as info:
        gym.make("openenv/Remote-v0", base_url=url)
    label, call = _paste(str(info.value))
    assert label == "Paste and edit"
    with pytest.raises(NameError, match="'n' is not defined"):
        eval(call, NAMESPACE)


class Log(BaseModel):
    messages: list[str] = Field(default_factory=list)
    events: list[str] = Field(default_factory=list)


class LogObservation(Observation):
    history: list[str] = Field(default_factory=list)
    log: Log = Field(default_factory=Log)
    turns: int = 0


class LogEnvironment(ChatEnvironment):
    """The chat echo whose observation has a top-level ``list[str]`` and an object made
    only of lists: both have no fixed shape."""

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> LogObservation:
        super().reset(seed, episode_id)
        return LogObservation()

    def step(self, action: ChatAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        chat = super().step(action)
        turns = len(chat.history)
        return LogObservation(
            history=chat.history,
            log=Log(messages=chat.history, events=[f"step {turns}"]),
            turns=turns,
            reward=chat.reward,
            done=chat.done,
        )


def test_an_object_made_only_of_lists_goes_to_info_as_a_list_does_and_check_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    app = create_fastapi_app(LogEnvironment, ChatAction, LogObservation, max_concurrent_envs=4)
    with serve_official_app(app) as url:
        env = gym.make("openenv/Remote-v0", base_url=url)
        try:
            assert list(env.observation_space.spaces) == ["turns"]
            assert set(env.unwrapped.observation_codec.variable) == {"history", "log"}
            _, info = env.reset(seed=0)
            assert info["log"] == {"messages": [], "events": []}
            _, _, _, _, info = env.step("hi")
            assert info["history"] == ["hi"]
            assert info["log"] == {"messages": ["hi"], "events": ["step 1"]}
        finally:
            env.close()
        assert main(["check", url, "--episodes", "0", "--max-steps", "3"]) == 0
        lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
        works = next(line for line in lines if line.startswith("works: "))
        made = eval(works.removeprefix("works: "), NAMESPACE)
        try:
            _play(made)
        finally:
            made.close()
    assert "left to info: 'history' (a list of non-numeric items has no fixed shape)" in lines
    assert (
        "left to info: 'log' (an object whose every field goes to info (log.messages, "
        "log.events))" in lines
    )
