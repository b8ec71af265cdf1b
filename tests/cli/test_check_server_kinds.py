"""``openenv-gym check`` gives one verdict per kind of server, the same in text and ``--json``:
a missing ``/metadata`` is a note (first-release servers and plain FastAPI apps have none),
and the episode plays legal actions where the server lists them."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from typing import Any

import pytest

from openenv_gym.cli import main
from tests.official_catalog import serve_catalog
from tests.official_peer import serve_official_app
from tests.third_party_servers.fastapi_apps import walk_app


def _both_reports(
    server: AbstractContextManager[str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, int, dict[str, Any]]:
    """The exit codes and reports of ``check`` and ``check --json`` against ``server``."""
    with server as url:
        text_code = main(["check", url, "--episodes", "0"])
        text = capsys.readouterr().out
        json_code = main(["check", url, "--episodes", "0", "--json"])
        body = json.loads(capsys.readouterr().out)
    return text_code, text, json_code, body


@pytest.mark.parametrize("step_body", ["flat", "wrapped"])
def test_plain_fastapi_app_without_metadata_passes_with_a_note(
    step_body: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, text, json_code, body = _both_reports(serve_official_app(walk_app(step_body)), capsys)
    assert (code, json_code) == (0, 0)
    assert "[note] metadata   none: GET " in text
    assert "/metadata answered HTTP 404 (optional; the env does not need it)" in text
    assert text.endswith("result: PASS (6 checks)\n")
    assert "cause:" not in text
    assert "form: http (one session per server)\n" in text
    assert "sources: action from GET /openapi.json (the request body of POST /step)" in text
    metadata = next(c for c in body["checks"] if c["name"] == "metadata")
    assert (metadata["ok"], metadata["note"]) == (True, True)
    assert body["passed"] is True
    assert body["cause"] is None
    assert body["form"] == "http"
    assert body["space_sources"].startswith("action from GET /openapi.json")


def test_metadata_present_is_no_note(capsys: pytest.CaptureFixture[str]) -> None:
    code, text, _, body = _both_reports(
        serve_official_app(walk_app("wrapped", schema_route=True)), capsys
    )
    assert code == 0
    assert '[ok]   metadata   {"name": "walk", "version": "1.0"}' in text
    assert not any(c["note"] for c in body["checks"])
    assert body["space_sources"] == "action from GET /schema; observation from GET /schema"


@pytest.mark.slow
def test_episode_plays_only_legal_actions_of_an_openspiel_server(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # catch lists its legal actions; a sample of Discrete(3) outside them was refused by
    # the server, and the episode failed where check_env (which samples legally) passed.
    for _ in range(3):  # several seeds: an unmasked sample fails one of them
        code, text, json_code, body = _both_reports(
            serve_catalog("openspiel_env", game="catch"), capsys
        )
        assert (code, json_code) == (0, 0), text
        assert "[ok]   episode" in text
        assert body["passed"] is True
