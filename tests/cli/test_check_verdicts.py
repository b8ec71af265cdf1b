"""``openenv-gym check`` gives one verdict (issue 31, item 6).

* ``/health`` is healthy on any 2xx (a FastAPI app's ``{"status": "ok"}``, an empty 204);
  a failed ``/health`` does not stop the other checks, and ``cause:`` names the first real
  cause of a failure.
* A server's randomness is a *server finding*, the same in the text and ``--json`` reports:
  resets that ignore the seed (``seeding``) and a random opponent (``stepping``: the official
  chess server's opponent is not seeded).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi import FastAPI, Response
from openenv.core.env_server import create_fastapi_app

from openenv_gym.cli import main
from tests.envs.official_chess import (
    OfficialChessAction,
    OfficialChessObservation,
    OfficialStyleChessEnvironment,
)
from tests.official_peer import serve_official_app
from tests.official_shapes import ENVIRONMENTS


@contextmanager
def _serve(app: FastAPI, routes: dict[str, Callable[[], Any] | None]) -> Iterator[str]:
    """Serve ``app`` with each path of ``routes`` removed, then given the route (if any)."""
    app.router.routes = [r for r in app.router.routes if getattr(r, "path", None) not in routes]
    for path, route in routes.items():
        if route is not None:
            app.get(path)(route)
    with serve_official_app(app) as url:
        yield url


def _chat_app() -> FastAPI:
    env, action, observation, state = ENVIRONMENTS["chat"]
    return create_fastapi_app(env, action, observation, state_cls=state)


def _report(url: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["check", url, "--episodes", "0", "--max-steps", "5", *extra])
    return code, capsys.readouterr().out


@pytest.mark.parametrize(
    ("route", "shown"),
    [
        (lambda: {"status": "ok"}, 'HTTP 200 {"status":"ok"}'),
        (lambda: Response(status_code=204), "HTTP 204 (empty body)"),
    ],
    ids=["status-ok", "empty-204"],
)
def test_any_2xx_health_is_healthy(
    route: Callable[[], Any], shown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with _serve(_chat_app(), {"/health": route}) as url:
        code, report = _report(url, capsys)
    assert code == 0, report
    assert f"[ok]   health     {shown} in " in report
    assert report.splitlines()[-1] == "result: PASS (6 checks)"


def test_a_failed_health_does_not_stop_the_checks_and_the_cause_is_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with _serve(_chat_app(), {"/health": None}) as url:  # no /health: 404
        code, report = _report(url, capsys)
    assert code == 1
    assert "[FAIL] health     ValueError: expected HTTP 2xx from GET /health, got 404" in report
    for name in ("schema", "metadata", "spaces", "episode", "check_env"):
        assert f"[ok]   {name}" in report, (name, report)
    assert "cause: health: ValueError: expected HTTP 2xx" in report
    assert report.splitlines()[-1] == "result: FAIL (health) (6 checks)"
    # /health failing and /schema missing: the schema is the real cause.
    with _serve(_chat_app(), {"/health": None, "/schema": None}) as url:
        code, report = _report(url, capsys)
        assert code == 1
        assert "[FAIL] spaces" in report
        # No /schema and an untyped /openapi.json body: nothing gives the action.
        assert "cause: schema: SpaceMappingError: no source gives the action's fields" in report
        code, out = _report(url, capsys, "--json")
    body = json.loads(out)
    assert body["cause"]["check"] == "schema"
    assert [c["name"] for c in body["checks"] if not c["ok"]] == ["health", "schema", "spaces"]


class _UnseededOpponentChess(OfficialStyleChessEnvironment):
    """The official chess server: its opponent plays at random whatever the seed."""

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Any:
        observation = super().reset(seed=seed, episode_id=episode_id, **kwargs)
        self._rng = random.Random()
        return observation


def _chess_app(environment: type[OfficialStyleChessEnvironment]) -> FastAPI:
    return create_fastapi_app(
        environment, OfficialChessAction, OfficialChessObservation, max_concurrent_envs=4
    )


def test_a_random_opponent_is_a_server_finding_in_text_and_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with _serve(_chess_app(_UnseededOpponentChess), {}) as url:
        code, report = _report(url, capsys)
        assert code == 0, report
        assert "[server] stepping   the server steps at random" in report
        assert "[ok]   check_env  passed" in report
        assert report.splitlines()[-1] == "result: PASS (6 checks; server findings: stepping)"
        code, out = _report(url, capsys, "--json")
    assert code == 0
    body = json.loads(out)
    assert body["passed"] is True
    assert body["cause"] is None
    assert [f["name"] for f in body["server_findings"]] == ["stepping"]
    # The same game with a seeded opponent has no finding.
    with _serve(_chess_app(OfficialStyleChessEnvironment), {}) as url:
        code, report = _report(url, capsys)
    assert code == 0, report
    assert "[server]" not in report
