"""MCP tool environments built on the official ``openenv`` package (``MCPEnvironment`` +
FastMCP tools), served by the official ``create_app`` for the MCP env tests.

* :class:`EchoEnvironment`: the shape of OpenEnv's quickstart echo env (``echo_message``,
  ``echo_with_length``).
* :class:`ToolboxEnvironment`: tools of every argument shape real MCP envs use: strings,
  numbers with bounds, enums and literals, nested objects, optional arguments, free-form
  values (``Any``, ``dict[str, str]``), no arguments; typed and untyped outputs; a tool that
  fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import Annotated, Any, Literal
from uuid import uuid4

from fastmcp import FastMCP
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Action, Observation, State
from pydantic import BaseModel, Field

from tests.official_peer import serve_official_app


class _SessionEnv(MCPEnvironment):
    """Reset/state/non-MCP actions common to the test envs."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, mcp: FastMCP) -> None:
        super().__init__(mcp)
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> Observation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return Observation(done=False, reward=0.0, metadata={"status": "ready"})

    def _step_impl(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Any:
        return Observation(done=False, reward=0.0, metadata={"error": "MCP actions only"})

    async def step_async(self, action: Action, timeout_s: float | None = None, **kwargs: Any):  # type: ignore[no-untyped-def]
        self._state.step_count += 1
        return await super().step_async(action, timeout_s=timeout_s, **kwargs)

    @property
    def state(self) -> State:
        return self._state


class EchoEnvironment(_SessionEnv):
    """OpenEnv's echo env: two tools taking one string."""

    def __init__(self) -> None:
        mcp = FastMCP("echo_env")

        @mcp.tool
        def echo_message(message: str) -> str:
            """Echo back the provided message."""
            return message

        @mcp.tool
        def echo_with_length(message: str) -> dict:  # type: ignore[type-arg]
            """Echo back the message with its length."""
            return {"message": message, "length": len(message)}

        super().__init__(mcp)


class Color(StrEnum):
    RED = "red"
    GREEN = "green"
    BLUE = "blue"


class Point(BaseModel):
    x: float = Field(ge=-1.0, le=1.0)
    y: float = Field(ge=0.0, le=10.0)


class Placement(BaseModel):
    cell: Point
    layer: int = Field(ge=0, le=3)


class ToolboxEnvironment(_SessionEnv):
    """Tools of several argument shapes; ``count`` remembers the calls of the session."""

    def __init__(self) -> None:
        mcp = FastMCP("toolbox")
        env = self

        @mcp.tool
        def move(
            steps: Annotated[int, Field(ge=0, le=10)],
            color: Color,
            where: Point,
            note: str | None = None,
            speed: Annotated[float, Field(gt=0.0, le=2.0)] = 1.0,
        ) -> dict:  # type: ignore[type-arg]
            """Move a number of steps, with a colour, to a point."""
            return {
                "steps": steps,
                "color": color.value,
                "x": where.x,
                "note": note,
                "speed": speed,
            }

        @mcp.tool
        def scale(
            value: Annotated[float, Field(ge=-5.0, le=5.0)], factor: Literal[1, 2, 3]
        ) -> float:
            """Multiply a bounded number by 1, 2 or 3."""
            return value * factor

        @mcp.tool
        def place(
            target: Placement, label: Annotated[str, Field(min_length=1, max_length=12)]
        ) -> Point:
            """Place a label at a nested target; returns the cell."""
            return target.cell

        @mcp.tool
        def store(key: str, payload: Any, tags: dict[str, str]) -> str:
            """Store a free-form payload."""
            return f"{key}:{type(payload).__name__}:{len(tags)}"

        @mcp.tool
        def count() -> int:
            """How many steps this session has taken."""
            return env._state.step_count

        @mcp.tool
        def fail(reason: str) -> str:
            """Always fails."""
            raise ValueError(f"failed on purpose: {reason[:20]}")

        super().__init__(mcp)


def official_mcp_app(env_class: type[MCPEnvironment], *, bare_action: bool = False) -> Any:
    """``create_app`` of the official package for ``env_class`` (``CallToolAction`` in its
    schema, or the base ``Action``/``Observation`` with ``bare_action``)."""
    action, observation = (
        (Action, Observation) if bare_action else (CallToolAction, CallToolObservation)
    )
    return create_app(
        env_class, action, observation, env_name=env_class.__name__, max_concurrent_envs=8
    )


@contextmanager
def serve_mcp_env(
    env_class: type[MCPEnvironment], *, bare_action: bool = False, without_mcp_route: bool = False
) -> Iterator[str]:
    """Serve an official MCP env app on 127.0.0.1; yield its URL. ``without_mcp_route``
    drops ``POST /mcp`` (the tool list then comes from a ``list_tools`` step)."""
    app = official_mcp_app(env_class, bare_action=bare_action)
    if without_mcp_route:
        app.router.routes = [
            route
            for route in app.router.routes
            if not (
                getattr(route, "path", None) == "/mcp" and "POST" in getattr(route, "methods", ())
            )
        ]
    with serve_official_app(app) as url:
        yield url
