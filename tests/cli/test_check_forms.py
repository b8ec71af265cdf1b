"""``openenv-gym check`` states the protocol form agreed with the server, in text and JSON."""

from __future__ import annotations

import json

import pytest

from openenv_gym.cli import main
from tests.official_peer import serve_official_app
from tests.third_party_servers.fastapi_apps import walk_app


def test_websocket_server_form(cartpole_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", cartpole_url]) == 0
    forms = [line for line in capsys.readouterr().out.splitlines() if line.startswith("form: ")]
    assert len(forms) == 1
    assert forms[0].startswith("form: websocket")


def test_http_only_app_with_ok_health_passes_and_says_http(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with serve_official_app(walk_app("wrapped", schema_route=True)) as url:
        assert main(["check", url]) == 0
        report = capsys.readouterr().out
        assert main(["check", url, "--json"]) == 0
        body = json.loads(capsys.readouterr().out)
    assert '[ok]   health     HTTP 200 {"status":"ok"}' in report
    assert "form: http (one session per server)\n" in report
    assert "close check skipped: the server holds one environment" in report
    assert report.endswith("result: PASS (6 checks)\n")
    assert body["passed"] is True
    assert body["form"] == "http"


def test_form_is_said_whether_or_not_an_env_was_built(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with serve_official_app(walk_app("flat")) as url:  # no /schema
        main(["check", url, "--episodes", "0"])
        report = capsys.readouterr().out
        main(["check", url, "--episodes", "0", "--json"])
        body = json.loads(capsys.readouterr().out)
    assert "[ok]   health" in report
    assert "form: http (one session per server)\n" in report
    assert body["form"] == "http"
