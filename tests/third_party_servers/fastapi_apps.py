"""Plain FastAPI apps that serve :mod:`.walk` over the first release's HTTP API, written by
hand as people write them: typed Pydantic bodies (so ``GET /openapi.json`` holds the action's
schema, and the observation's as a response model) and ``{"status": "ok"}`` health.

Example:
    >>> from fastapi.testclient import TestClient
    >>> client = TestClient(walk_app(step_body="flat"))
    >>> client.get("/health").json()
    {'status': 'ok'}
    >>> client.post("/reset", json={"seed": 5}).json()["observation"]
    {'position': 1, 'steps': 0}
    >>> client.post("/step", json={"action": {"direction": 2}}).status_code
    422
    >>> client.post("/step", json={"direction": 2}).json()["observation"]
    {'position': 2, 'steps': 1}
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import FastAPI
from pydantic import BaseModel, Field

from tests.third_party_servers.walk import END, Walk


class WalkAction(BaseModel):
    """The action: ``0`` left, ``1`` stay, ``2`` right."""

    direction: int = Field(ge=0, le=2)


class WalkObservation(BaseModel):
    """The observation."""

    position: int = Field(ge=-END, le=END)
    steps: int = Field(ge=0, le=1000)


class ResetRequest(BaseModel):
    """The reset body."""

    seed: int | None = None


class StepRequest(BaseModel):
    """The step body of the first release's shape: ``{"action": {...}}``."""

    action: WalkAction


class StepResponse(BaseModel):
    """What reset and step answer."""

    observation: WalkObservation
    reward: float | None = None
    done: bool = False


def walk_app(
    step_body: Literal["wrapped", "flat"] = "wrapped", *, schema_route: bool = False
) -> FastAPI:
    """A FastAPI app serving one :class:`~tests.third_party_servers.walk.Walk`.

    ``step_body="flat"``: ``POST /step`` takes the action's fields directly (and answers 422
    to ``{"action": {...}}``). ``schema_route``: also ``GET /schema`` and ``GET /metadata``, as in
    later releases (still no ``/ws``).
    """
    app = FastAPI(title="walk")
    game = Walk()

    def answer(observation: dict[str, Any], reward: float | None, done: bool) -> StepResponse:
        return StepResponse(observation=WalkObservation(**observation), reward=reward, done=done)

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/reset")
    def reset(request: ResetRequest) -> StepResponse:
        return answer(game.reset(request.seed), None, False)

    if step_body == "flat":

        @app.post("/step")
        def step_flat(action: WalkAction) -> StepResponse:
            return answer(*game.step(action.direction))

    else:

        @app.post("/step")
        def step(request: StepRequest) -> StepResponse:
            return answer(*game.step(request.action.direction))

    @app.get("/state")
    def state() -> dict[str, Any]:
        return game.state()

    if schema_route:

        @app.get("/metadata")
        def metadata() -> dict[str, Any]:
            return {"name": "walk", "version": "1.0"}

        @app.get("/schema")
        def schema() -> dict[str, Any]:
            return {
                "action": WalkAction.model_json_schema(),
                "observation": WalkObservation.model_json_schema(),
                "state": {"type": "object"},
            }

    return app


#: The ``action_model=`` / ``observation_model=`` of these apps.
MODELS = {"action_model": WalkAction, "observation_model": WalkObservation}
