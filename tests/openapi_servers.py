"""Official ``openenv`` servers that keep their models only in FastAPI's ``/openapi.json``.

Each is the official package's app (so ``/ws`` speaks the protocol) with ``GET /schema``
removed (it answers 404, as on a first-release or hand-written FastAPI server), and, except
for ``"untyped"``, its generic ``POST /step`` replaced by a typed route as hand-written
servers have:

* ``"wrapped"``: body ``{"action": MoveAction}``, response ``{observation, reward, done}``;
* ``"fields"``: body the action's fields directly, response the observation itself;
* ``"untyped"``: the official generic ``StepRequest`` (``action: Dict[str, Any]``): no
  source gives the action.

The HTTP ``/step`` routes step one env of their own; the client plays over ``/ws``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from fastapi import FastAPI
from openenv.core.env_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import BaseModel, Field

from tests.official_peer import serve_official_app


class MoveAction(Action):
    column: int = Field(ge=0, le=3)
    style: Literal["drop", "slide"] = "drop"


class BoardObservation(Observation):
    board: list[list[int]] = Field(default_factory=list)
    legal_actions: list[int] = Field(default_factory=list)
    last: int | None = None


@dataclasses.dataclass
class MoveData:
    """The action as a first-release ``models.py`` writes it: a dataclass."""

    column: int = Field(ge=0, le=3)


class BoardEnvironment(Environment):
    """Four columns of height 2; a full board ends the game."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._heights = [0] * 4
        self._last: int | None = None
        self._state = State(step_count=0)

    def _observation(self, reward: float | None = None) -> BoardObservation:
        board = [[int(h > row) for h in self._heights] for row in range(2)]
        legal = [c for c in range(4) if self._heights[c] < 2]
        return BoardObservation(
            board=board, legal_actions=legal, last=self._last, reward=reward, done=not legal
        )

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> BoardObservation:
        self._heights, self._last = [0] * 4, None
        self._state = State(episode_id=episode_id, step_count=0)
        return self._observation()

    def step(self, action: MoveAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        if self._heights[action.column] >= 2:
            raise ValueError(f"column {action.column} is full")
        self._heights[action.column] += 1
        self._last = action.column
        self._state.step_count += 1
        return self._observation(reward=1.0)

    @property
    def state(self) -> State:
        return self._state


class WrappedStep(BaseModel):
    action: MoveAction
    timeout_s: float | None = None


class StepReply(BaseModel):
    observation: BoardObservation
    reward: float | None = None
    done: bool = False


def _without(app: FastAPI, paths: set[str]) -> FastAPI:
    app.router.routes = [r for r in app.router.routes if getattr(r, "path", None) not in paths]
    app.openapi_schema = None
    return app


def openapi_app(kind: str) -> FastAPI:
    """The official app of :class:`BoardEnvironment` as ``kind`` describes (see above)."""
    app = create_fastapi_app(BoardEnvironment, MoveAction, BoardObservation, max_concurrent_envs=4)
    if kind == "untyped":
        return _without(app, {"/schema"})
    _without(app, {"/schema", "/step"})
    http_env = BoardEnvironment()
    http_env.reset()
    if kind == "wrapped":

        @app.post("/step", response_model=StepReply)
        def step_wrapped(body: WrappedStep) -> StepReply:
            observation = http_env.step(body.action)
            return StepReply(observation=observation, reward=observation.reward)

    elif kind == "fields":

        @app.post("/step", response_model=BoardObservation)
        def step_fields(action: MoveAction) -> BoardObservation:
            return http_env.step(action)

    else:
        raise ValueError(f"unknown kind {kind!r}")
    return app


@contextmanager
def serve_openapi(kind: str) -> Iterator[str]:
    """Serve :func:`openapi_app` on 127.0.0.1; yield its URL."""
    with serve_official_app(openapi_app(kind)) as url:
        yield url
