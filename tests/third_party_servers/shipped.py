"""FastAPI apps shaped like third-party OpenEnv servers as people ship them (issue 31).

Each serves :class:`~tests.third_party_servers.walk.Walk` and keeps the bodies ``POST /step``
received in ``app.state.bodies``:

* :func:`defaults_app`: an action whose fields all have defaults, one of which (a
  ``dict[int, int]``) has no space (grid2op's ``do_nothing`` + ``line_set``); observation
  keys that only a reset shows; no ``GET /state``.
* :func:`bare_reset_app`: ``/reset`` answers the bare observation, ``/step`` the envelope.
* :func:`schema_app`: untyped bodies, and a hand-written ``GET /schema``: with the keys
  ``action_schema`` / ``observation_schema`` (ICU-Guardian), or with the reply wrapper as the
  ``observation`` (traffic-signal).
* :func:`any_action_app`: ``POST /step`` takes ``{"action": Any}`` (bioreactor), and the
  observation's ``lab`` is an object at reset and ``null`` after a step.

Example:
    >>> from fastapi.testclient import TestClient
    >>> client = TestClient(defaults_app())
    >>> client.post("/reset", json={}).json()["observation"]
    {'position': 0, 'steps': 0, 'queues': {'north': 1, 'south': 2}}
    >>> client.post("/step", json={"do_nothing": True}).json()["observation"]["position"]
    0
    >>> client.get("/state").status_code
    404
    >>> TestClient(bare_reset_app()).post("/reset", json={"seed": 5}).json()
    {'position': 1, 'steps': 0}
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import FastAPI, Request
from pydantic import BaseModel, Field

from tests.third_party_servers.fastapi_apps import (
    ResetRequest,
    StepResponse,
    WalkAction,
    WalkObservation,
)
from tests.third_party_servers.walk import Walk


class QueueObservation(WalkObservation):
    """The walk plus queues keyed by name: the keys are open until a reset shows them."""

    queues: dict[str, int]


class QueueReply(BaseModel):
    """What :func:`defaults_app` answers."""

    observation: QueueObservation
    reward: float | None = None
    done: bool = False


class GridAction(BaseModel):
    """Every field has a default; ``line_set`` (free integer keys) has no space."""

    do_nothing: bool = False
    line_set: dict[int, int] = Field(default_factory=dict)


def _walk_app(title: str) -> tuple[FastAPI, Walk]:
    """An app with ``{"status": "ok"}`` health and ``app.state.bodies``, and its walk."""
    app = FastAPI(title=title)
    app.state.bodies = []

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    return app, Walk()


def defaults_app() -> FastAPI:
    """Step ``{"do_nothing": true}`` stays, anything else walks right; no ``/state``."""
    app, game = _walk_app("grid-like")
    queues = {"north": 1, "south": 2}

    @app.post("/reset")
    def reset(request: ResetRequest) -> QueueReply:
        return QueueReply(observation=QueueObservation(**game.reset(request.seed), queues=queues))

    @app.post("/step")
    def step(action: GridAction) -> QueueReply:
        app.state.bodies.append(action.model_dump(exclude_unset=True))
        observation, reward, done = game.step(1 if action.do_nothing else 2)
        return QueueReply(
            observation=QueueObservation(**observation, queues=queues), reward=reward, done=done
        )

    return app


def bare_reset_app() -> FastAPI:
    """``/reset`` answers the observation object itself; no ``/state``."""
    app, game = _walk_app("bare-reset")

    @app.post("/reset")
    def reset(request: ResetRequest) -> WalkObservation:
        return WalkObservation(**game.reset(request.seed))

    @app.post("/step")
    def step(action: WalkAction) -> StepResponse:
        app.state.bodies.append(action.model_dump())
        observation, reward, done = game.step(action.direction)
        return StepResponse(observation=WalkObservation(**observation), reward=reward, done=done)

    return app


class AnyStep(BaseModel):
    """A body that wraps an action the document does not type."""

    action: Any


def any_action_app() -> FastAPI:
    """``POST /step`` with body ``{"action": Any}``; the action is a walk action."""
    app, game = _walk_app("any-action")

    @app.post("/reset")
    def reset(request: ResetRequest) -> dict[str, Any]:
        observation = {**game.reset(request.seed), "lab": {"level": 2.5}}
        return {"observation": observation, "reward": None, "done": False}

    @app.post("/step")
    def step(body: AnyStep) -> dict[str, Any]:
        app.state.bodies.append(body.action)
        observation, reward, done = game.step(WalkAction(**body.action).direction)
        return {"observation": {**observation, "lab": None}, "reward": reward, "done": done}

    return app


def schema_app(shape: Literal["aliases", "wrapper"]) -> FastAPI:
    """Untyped ``/reset`` and ``/step`` bodies; ``GET /schema`` in the given shape."""
    app, game = _walk_app(f"schema-{shape}")

    @app.get("/schema")
    def schema() -> dict[str, Any]:
        action = WalkAction.model_json_schema()
        if shape == "aliases":
            observation = WalkObservation.model_json_schema()
            return {"action_schema": action, "observation_schema": observation}
        return {"action": action, "observation": StepResponse.model_json_schema()}

    @app.post("/reset")
    async def reset(request: Request) -> dict[str, Any]:
        body = await request.json()
        return {"observation": game.reset(body.get("seed")), "reward": None, "done": False}

    @app.post("/step")
    async def step(request: Request) -> dict[str, Any]:
        body = await request.json()
        app.state.bodies.append(body)
        action = WalkAction(**body.get("action", body))
        observation, reward, done = game.step(action.direction)
        return {"observation": observation, "reward": reward, "done": done}

    return app
