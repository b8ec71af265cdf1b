"""Pydantic models shared by the spaces tests: the official Atari and chess schemas, and a
model with one field per mapping rule. Built on the official OpenEnv base classes."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from openenv.core.env_server.types import Action, Observation
from pydantic import BaseModel, Field

# --------------------------------------------------------------------------- official envs


class AtariAction(Action):
    """The official OpenEnv Atari action."""

    action_id: int
    game_name: str = "pong"
    obs_type: Literal["rgb", "grayscale", "ram"] = "rgb"
    full_action_space: bool = False


class AtariObservation(Observation):
    """The official OpenEnv Atari observation (screen flattened)."""

    screen: list[int]
    screen_shape: list[int]
    legal_actions: list[int]
    lives: int
    episode_frame_number: int
    frame_number: int


class ChessAction(Action):
    """The official OpenEnv chess action (a UCI move)."""

    move: str


class ChessObservation(Observation):
    """The official OpenEnv chess observation."""

    fen: str
    legal_moves: list[str]
    is_check: bool
    result: str | None = None


# --------------------------------------------------------------------------- one field per rule


class Color(StrEnum):
    RED = "red"
    GREEN = "green"
    BLUE = "blue"


class Point(BaseModel):
    x: float = Field(ge=-1.0, le=1.0)
    y: float = Field(ge=-1.0, le=1.0)


Vec3 = Annotated[list[float], Field(min_length=3, max_length=3)]
Row = Annotated[list[Annotated[int, Field(ge=0, le=9)]], Field(min_length=3, max_length=3)]
Grid = Annotated[list[Row], Field(min_length=2, max_length=2)]
Mask = Annotated[list[bool], Field(min_length=4, max_length=4)]
Words = Annotated[list[str], Field(min_length=2, max_length=2)]


class RichObservation(Observation):
    """Field order is deliberately not alphabetical."""

    zeta: int = Field(ge=0, le=9)
    level: int = Field(gt=0, lt=4)
    score: float
    ratio: float = Field(ge=0.0, le=1.0)
    alive: bool
    color: Color
    mode: Literal["a", "b"]
    name: str = Field(min_length=1, max_length=16)
    vec: Vec3
    grid: Grid
    mask: Mask
    pos: Point
    maybe: int | None = Field(default=None, ge=1, le=5)
    note: str | None = None
    pair: tuple[int, int]
    words: Words
    alpha: int


class RichAction(Action):
    """Required fields form the space; ``speed`` (optional) only with include."""

    steer: float = Field(ge=-1.0, le=1.0)
    gear: int = Field(ge=-1, le=5)
    horn: bool
    lane: Literal["left", "right"]
    keys: Annotated[list[Annotated[int, Field(ge=0, le=3)]], Field(min_length=2, max_length=2)]
    lights: Mask
    target: Point
    speed: float = Field(default=1.0, ge=0.0, le=2.0)
