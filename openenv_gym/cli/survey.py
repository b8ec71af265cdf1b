"""The survey of ``openenv-gym check --episodes K``: what a server sends over K short episodes.

A space is never taken from what one reset shows (docs/spaces.md); where the server declares
no range, the user pins one. The survey helps choose it: it plays ``K`` short episodes with
random actions on its own session (plain JSON, as the official client) and reports, per
field, what was **observed**: numeric ranges and shapes, string lengths, how often a field
was ``None``, and the legal actions listed. Nothing here becomes a space.

Actions: a random pick from the observation's legal actions (``legal_actions``,
``legal_moves``, ``valid_actions``) when the action has one required field; else a sample
of the mapped action space when there is one; else the survey only resets. A step the
server refuses ends that episode and is counted.

Example:
    >>> survey = Survey()
    >>> survey.add({"board": [[0, 1], [2, 0]], "legal_actions": [0, 3], "last": None})
    >>> survey.add({"board": [[1, 1], [2, 0]], "legal_actions": [3], "last": 3})
    >>> for line in survey.lines():
    ...     print(line)
    'board': values 0..2, shapes (2, 2)
    'legal_actions': values 0..3, 1..2 items
    'last': values 3..3, None in 1 of 2
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from openenv_gym.client import ConnectOptions, open_session, resolve_token
from openenv_gym.errors import OpenEnvGymError
from openenv_gym.spaces import OBSERVATION_ENVELOPE_FIELDS
from openenv_gym.spaces.inference import is_legal_actions_name
from openenv_gym.wire.messages import reset_message, step_message

#: Steps per survey episode at most (short episodes: the survey samples, it does not train).
SURVEY_MAX_STEPS: Final = 100
#: Seconds the whole survey may take; it stops at the first step after that.
SURVEY_TIME_BUDGET: Final = 30.0


@dataclass
class FieldRecord:
    """What one field held over the survey."""

    seen: int = 0
    nulls: int = 0
    low: float | None = None
    high: float | None = None
    shapes: set[tuple[int, ...]] = field(default_factory=set)
    lengths: set[int] = field(default_factory=set)
    texts: set[str] = field(default_factory=set)

    def add(self, value: Any, listed: bool) -> None:
        self.seen += 1
        if value is None:
            self.nulls += 1
            return
        if isinstance(value, str):
            self.lengths.add(len(value))
            if len(self.texts) <= 20:
                self.texts.add(value)
            return
        if isinstance(value, list) and listed:
            self.lengths.add(len(value))
            for item in value:
                if isinstance(item, str) and len(self.texts) <= 20:
                    self.texts.add(item)
        try:
            array = np.asarray(value)
        except (ValueError, TypeError):
            return
        if array.dtype.kind not in "biuf" or array.size == 0:
            return
        if isinstance(value, list) and not listed:
            self.shapes.add(tuple(int(n) for n in array.shape))
        low, high = float(array.min()), float(array.max())
        self.low = low if self.low is None else min(self.low, low)
        self.high = high if self.high is None else max(self.high, high)

    def describe(self, listed: bool) -> str:
        parts = []
        if self.low is not None and self.high is not None:
            parts.append(f"values {_number(self.low)}..{_number(self.high)}")
        if self.shapes:
            parts.append("shapes " + ", ".join(str(s) for s in sorted(self.shapes)))
        if self.lengths:
            unit = "items" if listed else "characters"
            parts.append(f"{min(self.lengths)}..{max(self.lengths)} {unit}")
        if self.texts and listed and len(self.texts) <= 20:
            parts.append(f"{len(self.texts)} distinct")
        if self.nulls:
            parts.append(f"None in {self.nulls} of {self.seen}")
        return ", ".join(parts) or "no values"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


class Survey:
    """Observed values per dotted observation field (nested objects walked)."""

    def __init__(self) -> None:
        self.fields: dict[str, FieldRecord] = {}
        self.listed: set[str] = set()

    def add(self, observation: Mapping[str, Any], prefix: str = "") -> None:
        """Record one wire observation (its envelope fields left out)."""
        for key, value in observation.items():
            if not prefix and key in OBSERVATION_ENVELOPE_FIELDS:
                continue
            path = f"{prefix}{key}"
            if isinstance(value, Mapping):
                self.add(value, path + ".")
                continue
            listed = is_legal_actions_name(path) and isinstance(value, list)
            if listed:
                self.listed.add(path)
            self.fields.setdefault(path, FieldRecord()).add(value, listed)

    def lines(self) -> list[str]:
        """One line per field: what was observed."""
        return [
            f"{path!r}: {record.describe(path in self.listed)}"
            for path, record in self.fields.items()
        ]


@dataclass
class SurveyResult:
    """The survey's counts and records."""

    episodes: int = 0
    steps: int = 0
    finished: int = 0
    refused: list[str] = field(default_factory=list)
    acted: str = "nothing (resets only)"
    stopped: bool = False  # the time budget ran out
    budget: float = SURVEY_TIME_BUDGET
    survey: Survey = field(default_factory=Survey)


def run_survey(
    url: str,
    *,
    episodes: int,
    seed: int,
    options: ConnectOptions,
    action_field: str | None,
    sample_action: Callable[[], dict[str, Any]] | None,
    max_steps: int = SURVEY_MAX_STEPS,
    budget: float = SURVEY_TIME_BUDGET,
) -> SurveyResult:
    """Play ``episodes`` short episodes on one session and record what was observed.

    ``action_field`` is the one required action field (a legal action is sent in it when
    the observation lists them); ``sample_action`` gives a wire action from the mapped
    space. The session is closed on return.

    Raises:
        OpenEnvGymError: The session cannot be opened or a reset fails.
    """
    result = SurveyResult(budget=budget)
    rng = random.Random(seed)
    started = time.monotonic()
    session = open_session(url, options)
    try:
        for episode in range(episodes):
            if episode and time.monotonic() - started > budget:
                result.stopped = True
                break
            reply = session.request_observation(reset_message(seed=seed + episode))
            result.episodes += 1
            result.survey.add(reply.observation)
            for _ in range(max_steps):
                if reply.done:
                    result.finished += 1
                    break
                if time.monotonic() - started > budget:
                    result.stopped = True
                    break
                action = _action(reply.observation, action_field, sample_action, rng, result)
                if action is None:
                    break
                try:
                    reply = session.request_observation(step_message(action))
                except OpenEnvGymError as exc:
                    result.refused.append(str(exc).splitlines()[0][:160])
                    if session.closed:
                        session.close()
                        session = open_session(url, options)
                    break
                result.steps += 1
                result.survey.add(reply.observation)
    finally:
        session.close()
    return result


def _action(
    observation: Mapping[str, Any],
    action_field: str | None,
    sample_action: Callable[[], dict[str, Any]] | None,
    rng: random.Random,
    result: SurveyResult,
) -> dict[str, Any] | None:
    if action_field is not None:
        for key, value in observation.items():
            if is_legal_actions_name(key) and isinstance(value, list) and value:
                result.acted = f"a random one of {key!r} in {action_field!r}"
                return {action_field: rng.choice(value)}
    if sample_action is not None:
        result.acted = "samples of the action space"
        return sample_action()
    return None


def describe_result(result: SurveyResult, episodes: int) -> tuple[str, list[str]]:
    """The check line (summary, details) of a survey: every line labelled as observed."""
    summary = (
        f"observed, not declared: {result.episodes} episode(s) of at most {SURVEY_MAX_STEPS} "
        f"steps, {result.steps} steps, {result.finished} finished"
    )
    if result.stopped:
        summary += f" (stopped: the survey's {result.budget:g} s were up)"
    details = [f"actions: {result.acted}"]
    details += [f"observed: {line}" for line in result.survey.lines()]
    if result.refused:
        details.append(
            f"the server refused {len(result.refused)} step(s), e.g.: {result.refused[0]}"
        )
    details.append(
        "a sample, not the game's range: pin a space that holds every value the game allows"
    )
    return summary, details


def survey_server(
    url: str,
    schema: Mapping[str, Any],
    env: Any,
    *,
    episodes: int,
    seed: int,
    timeout: float,
    token: str | None,
) -> tuple[str, list[str]]:
    """Survey the server at ``url`` (``GET /schema`` body ``schema``; ``env``: the mapped
    env, closed or not, whose action space gives random actions, or ``None``) and describe
    what was observed (see :func:`describe_result`)."""
    action = schema.get("action") or {}
    required = [f for f in action.get("required") or () if f != "metadata"]
    sample = None
    shape: dict[str, Any] = {}  # how the server's POST /step takes a body, as the env found
    if env is not None:
        sources = env.space_sources
        shape = {"step_body": sources.step_body, "session_fields": sources.session_fields}
        env.action_space.seed(seed)

        def sample() -> dict[str, Any]:  # the mapped space's codec needs no session
            return dict(env.action_codec.encode(env.action_space.sample()))

    result = run_survey(
        url,
        episodes=episodes,
        seed=seed,
        options=ConnectOptions(
            encoding="json", connect_timeout=timeout, token=resolve_token(token), **shape
        ),
        action_field=required[0] if len(required) == 1 else None,
        sample_action=sample,
    )
    return describe_result(result, episodes)
