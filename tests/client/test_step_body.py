"""An HTTP session sends ``POST /step`` in the shape ``/openapi.json`` stated
(``space_sources.step_body``) from the first step: no 422 and retry; a stated shape is not
second-guessed; a shape that is not one is a typed error."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import gymnasium as gym
import pytest
from fastapi import FastAPI, Request, Response

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.client import ConnectOptions, HttpSession
from openenv_gym.errors import EnvConfigError, ServerReplyError
from openenv_gym.wire.messages import reset_message, step_message
from tests.official_peer import serve_official_app
from tests.third_party_servers.fastapi_apps import walk_app


def logged(app: FastAPI) -> tuple[FastAPI, list[tuple[str, int]]]:
    """``app``, logging each request's path and answered status."""
    log: list[tuple[str, int]] = []

    @app.middleware("http")
    async def record(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Any:
        response = await call_next(request)
        log.append((request.url.path, response.status_code))
        return response

    return app, log


@pytest.fixture
def flat_server() -> Iterator[tuple[str, list[tuple[str, int]]]]:
    """A FastAPI app whose step body is the action's fields, and its request log."""
    app, log = logged(walk_app("flat"))
    with serve_official_app(app) as url:
        yield url, log


@pytest.mark.parametrize("step_body", ["flat", "wrapped"])
def test_env_sends_the_stated_shape_from_the_first_step(step_body: str) -> None:
    app, log = logged(walk_app(step_body))
    with serve_official_app(app) as url:
        env = gym.make("openenv/Remote-v0", base_url=url)
        try:
            stated = env.unwrapped.space_sources.step_body
            env.reset(seed=0)
            for _ in range(5):
                _, _, terminated, truncated, _ = env.step(2)
                if terminated or truncated:
                    env.reset()
        finally:
            env.close()
    assert stated == {"flat": "fields", "wrapped": "wrapped"}[step_body]
    steps = [status for path, status in log if path == "/step"]
    assert steps == [200] * 5  # no 422 then a retry: the first step was in the right shape


def test_stated_wrapped_shape_is_not_retried(
    flat_server: tuple[str, list[tuple[str, int]]],
) -> None:
    url, log = flat_server
    session = HttpSession(url, ConnectOptions(step_body="wrapped"))
    try:
        session.request(reset_message(seed=0))
        with pytest.raises(ServerReplyError) as caught:
            session.request(step_message({"direction": 2}))
    finally:
        session.close()
    assert caught.value.code == "VALIDATION_ERROR"
    assert [status for path, status in log if path == "/step"] == [422]


def test_stated_fields_shape_is_sent_from_the_first_step(
    flat_server: tuple[str, list[tuple[str, int]]],
) -> None:
    url, log = flat_server
    session = HttpSession(url, ConnectOptions(step_body="fields"))
    try:
        start = session.request_observation(reset_message(seed=5)).observation
        reply = session.request_observation(step_message({"direction": 2}))
    finally:
        session.close()
    assert reply.observation == {"position": start["position"] + 1, "steps": 1}
    assert [status for path, status in log if path == "/step"] == [200]


def test_unknown_step_body_is_a_config_error() -> None:
    with pytest.raises(EnvConfigError, match=r"expected step_body to be one of .*got 'flat'"):
        ConnectOptions(step_body="flat")


def test_unknown_form_is_a_config_error() -> None:
    with pytest.raises(EnvConfigError, match=r"expected form to be None or 'http', got 'ws'"):
        ConnectOptions(form="ws")
