"""``openenv-gym check --action-model module:Class`` (and ``--observation-model``) mean what
``gym.make(..., action_model=...)`` means: a server that plays with a pasted class passes
check with the same class, and the ``works:`` line carries it. Bad references are usage
errors that say what was expected. Also: check names an echoed session field."""

from __future__ import annotations

import pytest

from openenv_gym.cli import main
from tests.official_peer import serve_official_app
from tests.third_party_servers.sessions import chess_session_app
from tests.third_party_servers.shipped import any_action_app

MODELS = "tests.third_party_servers.walk_models"


def test_check_agrees_with_gym_make_given_the_action_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with serve_official_app(any_action_app()) as url:
        without = main(["check", url, "--episodes", "0"])
        refused = capsys.readouterr().out
        code = main(["check", url, "--episodes", "0", "--action-model", f"{MODELS}:WalkAction"])
        text = capsys.readouterr().out
    assert without == 1
    assert "action_model=" in refused
    assert code == 0, text
    assert "sources: action from action_model=WalkAction" in text
    assert f"works: gym.make('openenv/Remote-v0', base_url={url!r}, " in text
    assert f"action_model={MODELS}.WalkAction" in text
    assert text.endswith("result: PASS (6 checks)\n")


def test_both_models_are_taken(capsys: pytest.CaptureFixture[str]) -> None:
    with serve_official_app(any_action_app()) as url:
        code = main(
            [
                "check",
                url,
                "--episodes",
                "0",
                "--action-model",
                f"{MODELS}:WalkAction",
                "--observation-model",
                f"{MODELS}:WalkObservation",
            ]
        )
    text = capsys.readouterr().out
    assert "observation from observation_model=WalkObservation" in text
    assert f"observation_model={MODELS}.WalkObservation" in text
    assert code in (0, 1)  # the verdict is the env's; the class was taken either way


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("WalkAction", "expected MODULE:CLASS (e.g. models:MyAction"),
        (":WalkAction", "expected MODULE:CLASS"),
        ("no_such_module_31:Action", "cannot import 'no_such_module_31'"),
        (f"{MODELS}:Nope", f"module '{MODELS}' has no 'Nope'"),
        (f"{MODELS}:annotations", "to name a class (a Pydantic model or a dataclass), got"),
    ],
)
def test_a_bad_model_reference_is_a_usage_error(
    reference: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "http://127.0.0.1:9", "--action-model", reference]) == 2
    err = capsys.readouterr().err
    assert "--action-model" in err
    assert expected in err


def test_check_names_the_session_field(capsys: pytest.CaptureFixture[str]) -> None:
    with serve_official_app(chess_session_app()) as url:
        main(["check", url, "--episodes", "0"])
    text = capsys.readouterr().out
    assert "session field: game_id, echoed from the reset reply" in text
    assert "action_space: Discrete(4208)" in text
    assert "action_masks(): from 'legal_moves'" in text
    # Gymnasium's check_env samples without the mask; the server's 400 is a finding
    assert "[server] illegal actions the server refuses actions outside the legal ones" in text
    assert text.endswith("result: PASS (6 checks; server findings: illegal actions)\n")
