"""``openenv-gym check --episodes K``: the survey of what a server sends, labelled as observed.

Against official ``openenv`` servers with the catalog's shapes (tests/official_shapes.py),
each allowing ONE session (as the official maze and connect-four): the survey opens its
own session after the check's env is closed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from openenv_gym.cli import main
from openenv_gym.cli.survey import describe_result, run_survey
from openenv_gym.client import ConnectOptions
from tests.official_shapes import serve_shape


@pytest.fixture(scope="module")
def columns_url() -> Iterator[str]:
    with serve_shape("columns", max_concurrent_envs=1) as url:
        yield url


@pytest.fixture(scope="module")
def nullable_url() -> Iterator[str]:
    with serve_shape("nullable", max_concurrent_envs=1) as url:
        yield url


def _survey(report: str) -> list[str]:
    """The survey's lines: ``[survey] ...`` and its indented details."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("[survey]"))
    end = start + 1
    while end < len(lines) and lines[end].startswith("         "):
        end += 1
    return [line.strip() for line in lines[start:end]]


def test_an_undeclared_range_is_refused_and_the_survey_shows_what_was_observed(
    columns_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", columns_url, "--episodes", "4"]) == 1  # the refusal stands
    report = capsys.readouterr().out
    survey = _survey(report)
    assert survey[0].startswith("[survey] observed, not declared: 4 episode(s)")
    assert "4 finished" in survey[0]  # random legal play ends every game
    assert "actions: a random one of 'legal_actions' in 'column'" in survey
    assert "observed: 'legal_actions': values 0..3, 0..4 items" in survey
    assert "observed: 'board': values 0..2, shapes (2, 4)" in survey
    assert survey[-1].startswith("a sample, not the game's range")
    # Nothing observed became a space: the call to paste is labelled observed.
    assert "Fix (observed, not declared): action_field_spaces={'column': " in report
    assert "Paste (observed at one reset, not declared; the game may allow more)" in report
    assert "works:" not in report
    assert report.endswith("result: FAIL (spaces) (4 checks)\n")  # the survey is no check


def test_the_survey_counts_none_and_is_in_the_json_report(
    nullable_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", nullable_url, "--episodes", "3", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    survey = body["survey"]
    assert survey["summary"].startswith("observed, not declared: 3 episode(s)")
    assert "actions: samples of the action space" in survey["details"]
    line = next(d for d in survey["details"] if d.startswith("observed: 'opponent_last_action'"))
    assert "None in " in line  # None at every reset
    assert [c["name"] for c in body["checks"]][-1] == "check_env"


def test_the_survey_does_not_change_the_call_that_works(
    nullable_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", nullable_url, "--episodes", "0"]) == 0
    without = capsys.readouterr().out
    assert "[survey]" not in without
    assert main(["check", nullable_url, "--episodes", "2"]) == 0
    surveyed = capsys.readouterr().out
    works = [line for line in without.splitlines() if line.startswith("works: ")]
    assert works == [line for line in surveyed.splitlines() if line.startswith("works: ")]
    assert "[survey] observed, not declared: 2 episode(s)" in surveyed


@pytest.mark.parametrize("bad", ["-1", "101", "many"])
def test_a_bad_episode_count_is_a_usage_error(
    nullable_url: str, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", nullable_url, "--episodes", bad]) == 2
    assert "--episodes" in capsys.readouterr().err


def test_the_survey_stops_when_its_time_is_up(nullable_url: str) -> None:
    result = run_survey(
        nullable_url,
        episodes=5,
        seed=0,
        options=ConnectOptions(encoding="json"),
        action_field=None,
        sample_action=lambda: {"count": 1},
        budget=0.0,
    )
    assert (result.episodes, result.steps, result.stopped) == (1, 0, True)
    summary, details = describe_result(result, 5)
    assert summary.endswith("(stopped: the survey's 0 s were up)")
    assert "observed: 'opponent_last_action': None in 1 of 1" in details
