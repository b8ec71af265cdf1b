"""Environments on the official ``openenv`` package with the schema shapes real OpenEnv envs use.

Our own models, shaped like the official catalog's:

* :class:`ColumnsEnvironment` (connect-four / OpenSpiel): an ``int`` action without bounds,
  ``legal_actions: list[int]`` that shrinks as columns fill, a board ``list[list[int]]`` of
  unstated size, a ``Literal`` phase and an unbounded ``int`` player; nothing declares the
  action range. :class:`DeclaredColumnsEnvironment` is the same game whose state declares
  ``num_actions``.
* :class:`ControlEnvironment` (dm_control): ``values: list[float] = []`` as the action, of
  a length only the state's ``action_spec`` gives; ``observations: dict[str, list[float]]``
  whose keys depend on the task; reset ``grow=True`` lengthens one array (a server whose
  shapes change).
* :class:`ChatEnvironment` (TextArena / echo / reasoning-gym): free text both ways, a
  variable-length ``history: list[str]`` and an ``Enum`` speaker.
* :class:`ShoutEnvironment`: the chat echo upper-cased, with characters outside any charset.
* :class:`UnseededEnvironment`: the chat echo whose reset ignores ``seed``.
* :class:`GridEnvironment` (grid world / maze / snake): an ``Enum`` action, a bounded
  ``int`` speed, ``valid_actions: list[str]`` naming the enum values that may be played.
* :class:`UnmappableEnvironment`: an action union ``int | str`` and an observation ``Any``,
  nothing a space fits.
* :class:`NullableEnvironment` (repl_env / OpenSpiel): an action whose fields all have
  defaults, ``final_answer: Optional[str] = None`` among them, plus ``Optional[float]`` and a
  bounded ``Optional[int]``; an observation with OpenSpiel's
  ``opponent_last_action: Optional[int] = None``, and the action echoed back with the names
  of the fields that arrived (``sent``).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import Any, Literal, Optional

from openenv.core.env_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from tests.official_peer import serve_official_app

COLUMNS = 4
HEIGHT = 2


class ColumnsAction(Action):
    column: int


class ColumnsObservation(Observation):
    board: list[list[int]] = Field(default_factory=list)
    legal_actions: list[int] = Field(default_factory=list)
    current_player: int = 0
    phase: Literal["play", "over"] = "play"


class ColumnsEnvironment(Environment):
    """Drop pieces into columns of height 2; the game ends when the board is full."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._heights = [0] * COLUMNS
        self._board = [[0] * COLUMNS for _ in range(HEIGHT)]
        self._state = State(step_count=0)

    def _observation(self, reward: float | None = None) -> ColumnsObservation:
        legal = [c for c in range(COLUMNS) if self._heights[c] < HEIGHT]
        return ColumnsObservation(
            board=[row[:] for row in self._board],
            legal_actions=legal,
            current_player=self._state.step_count % 2,
            phase="play" if legal else "over",
            reward=reward,
            done=not legal,
        )

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> ColumnsObservation:
        self._heights = [0] * COLUMNS
        self._board = [[0] * COLUMNS for _ in range(HEIGHT)]
        self._state = State(episode_id=episode_id, step_count=0)
        return self._observation()

    def step(self, action: ColumnsAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        column = action.column
        if not 0 <= column < COLUMNS or self._heights[column] >= HEIGHT:
            raise ValueError(f"column {column} is not a legal move")
        self._board[self._heights[column]][column] = 1 + self._state.step_count % 2
        self._heights[column] += 1
        self._state.step_count += 1
        return self._observation(reward=1.0)

    @property
    def state(self) -> State:
        return self._state


class ControlAction(Action):
    values: list[float] = Field(default_factory=list)


class ControlObservation(Observation):
    observations: dict[str, list[float]] = Field(default_factory=dict)


class ControlState(State):
    action_spec: dict[str, Any] = Field(default_factory=dict)


class ControlEnvironment(Environment):
    """A point mass: position (3) and velocity (2) under a 2-d force in [-1, 1]."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._position = [0.0, 0.0, 0.0]
        self._velocity = [0.0, 0.0]
        self._grow = False
        self._state = ControlState(
            step_count=0, action_spec={"shape": [2], "minimum": [-1, -1], "maximum": [1, 1]}
        )

    def _observation(self, reward: float | None = None) -> ControlObservation:
        position = self._position + ([0.0] if self._grow else [])
        return ControlObservation(
            observations={"position": position, "velocity": list(self._velocity)},
            reward=reward,
            done=self._state.step_count >= 50,
        )

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        grow: bool = False,
        **kwargs: Any,
    ) -> ControlObservation:
        self._position, self._velocity, self._grow = [0.0, 0.0, 0.0], [0.0, 0.0], grow
        self._state.episode_id, self._state.step_count = episode_id, 0
        return self._observation()

    def step(self, action: ControlAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        if len(action.values) != 2:
            raise ValueError(f"expected 2 action values, got {len(action.values)}")
        self._velocity = [v + 0.1 * f for v, f in zip(self._velocity, action.values, strict=True)]
        self._position = [self._position[0] + self._velocity[0], self._position[1], 0.0]
        self._state.step_count += 1
        return self._observation(reward=-abs(self._position[0]))

    @property
    def state(self) -> ControlState:
        return self._state


class Speaker(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


class ChatAction(Action):
    message: str


class ChatObservation(Observation):
    prompt: str = ""
    history: list[str] = Field(default_factory=list)
    speaker: Speaker = Speaker.USER


class ChatEnvironment(Environment):
    """Echo: the prompt is the last message; three messages end the episode."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._history: list[str] = []
        self._state = State(step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> ChatObservation:
        self._history = []
        self._state = State(episode_id=episode_id, step_count=0)
        return ChatObservation(prompt="say something")

    def step(self, action: ChatAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        self._history.append(action.message)
        self._state.step_count += 1
        return ChatObservation(
            prompt=action.message,
            history=list(self._history),
            speaker=Speaker.ASSISTANT,
            reward=float(len(action.message) > 0),
            done=len(self._history) >= 3,
        )

    @property
    def state(self) -> State:
        return self._state


class Direction(StrEnum):
    UP = "up"
    DOWN = "down"
    LEFT = "left"
    RIGHT = "right"


#: What :class:`ShoutEnvironment` adds: a combining mark, a snowman, an emoji and a NUL.
SHOUT_SUFFIX = "\u0301 \u2603 \U0001f600 \x00!"


class ShoutEnvironment(ChatEnvironment):
    """:class:`ChatEnvironment` whose prompt is the message shouted: upper-cased, with
    characters no ``Text`` charset lists (as an MCP "shout" tool's replies have)."""

    def step(self, action: ChatAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        observation = super().step(action)
        observation.prompt = action.message.upper() + SHOUT_SUFFIX
        return observation


class UnseededEnvironment(ChatEnvironment):
    """:class:`ChatEnvironment` whose reset prompt is random whatever the seed: a server
    that ignores ``reset(seed=)``."""

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> ChatObservation:
        super().reset(seed, episode_id)
        return ChatObservation(prompt=f"say something {random.random()}")


class GridAction(Action):
    direction: Direction


class GridObservation(Observation):
    position: list[int] = Field(default_factory=list)
    valid_actions: list[str] = Field(default_factory=list)


_MOVES = {"up": (0, 1), "down": (0, -1), "left": (-1, 0), "right": (1, 0)}


class GridEnvironment(Environment):
    """A 3x3 grid from the corner (0, 0) to (2, 2); walls leave only some moves valid."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._at = (0, 0)
        self._state = State(step_count=0)

    def _valid(self) -> list[str]:
        x, y = self._at
        return [name for name, (dx, dy) in _MOVES.items() if 0 <= x + dx < 3 and 0 <= y + dy < 3]

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> GridObservation:
        self._at = (0, 0)
        self._state = State(episode_id=episode_id, step_count=0)
        return GridObservation(position=list(self._at), valid_actions=self._valid())

    def step(self, action: GridAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        dx, dy = _MOVES[action.direction.value]
        x, y = self._at
        if 0 <= x + dx < 3 and 0 <= y + dy < 3:
            self._at = (x + dx, y + dy)
        self._state.step_count += 1
        done = self._at == (2, 2) or self._state.step_count >= 30
        return GridObservation(
            position=list(self._at),
            valid_actions=self._valid(),
            reward=1.0 if self._at == (2, 2) else 0.0,
            done=done,
        )

    @property
    def state(self) -> State:
        return self._state


class UnmappableAction(Action):
    choice: int | str


class UnmappableObservation(Observation):
    anything: Any = None
    score: float = 0.0


class UnmappableEnvironment(Environment):
    """Nothing about its ``choice`` or ``anything`` says what space they have."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> UnmappableObservation:
        self._state = State(episode_id=episode_id, step_count=0)
        return UnmappableObservation(anything={"free": "form"})

    def step(self, action: UnmappableAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        self._state.step_count += 1
        return UnmappableObservation(
            anything=[action.choice], score=1.0, reward=1.0, done=self._state.step_count >= 5
        )

    @property
    def state(self) -> State:
        return self._state


class NullableAction(Action):
    code: str = ""
    is_final: bool = False
    final_answer: Optional[str] = None  # noqa: UP045 - the exact shape of repl_env's model
    weight: Optional[float] = None  # noqa: UP045
    count: Optional[int] = Field(default=None, ge=0, le=9)  # noqa: UP045


class NullableObservation(Observation):
    opponent_last_action: Optional[int] = None  # noqa: UP045 - OpenSpiel's exact shape
    final_answer: Optional[str] = None  # noqa: UP045
    weight: Optional[float] = None  # noqa: UP045
    count: Optional[int] = None  # noqa: UP045
    code: str = ""
    sent: str = ""


class NullableEnvironment(Environment):
    """Echoes each action (``sent``: the fields that arrived, comma-separated); the
    opponent's last action is ``None`` at reset and then the step's ``count``."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> NullableObservation:
        self._state = State(episode_id=episode_id, step_count=0)
        return NullableObservation()

    def step(self, action: NullableAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        self._state.step_count += 1
        sent = sorted(action.model_fields_set - {"metadata"})
        return NullableObservation(
            opponent_last_action=action.count,
            final_answer=action.final_answer,
            weight=action.weight,
            count=action.count,
            code=action.code,
            sent=",".join(sent),
            reward=1.0 if action.is_final else 0.0,
            done=action.is_final or self._state.step_count >= 20,
        )

    @property
    def state(self) -> State:
        return self._state


class DeclaredColumnsState(State):
    num_actions: int = COLUMNS


class DeclaredColumnsEnvironment(ColumnsEnvironment):
    """:class:`ColumnsEnvironment` whose state declares its number of actions."""

    @property
    def state(self) -> State:
        return DeclaredColumnsState(**self._state.model_dump())


ENVIRONMENTS: dict[str, tuple[Any, type[Action], type[Observation], type[State]]] = {
    "columns": (ColumnsEnvironment, ColumnsAction, ColumnsObservation, State),
    "declared_columns": (
        DeclaredColumnsEnvironment,
        ColumnsAction,
        ColumnsObservation,
        DeclaredColumnsState,
    ),
    "control": (ControlEnvironment, ControlAction, ControlObservation, ControlState),
    "chat": (ChatEnvironment, ChatAction, ChatObservation, State),
    "grid": (GridEnvironment, GridAction, GridObservation, State),
    "shout": (ShoutEnvironment, ChatAction, ChatObservation, State),
    "unseeded": (UnseededEnvironment, ChatAction, ChatObservation, State),
    "unmappable": (UnmappableEnvironment, UnmappableAction, UnmappableObservation, State),
    "nullable": (NullableEnvironment, NullableAction, NullableObservation, State),
}


@contextmanager
def serve_shape(name: str, max_concurrent_envs: int = 16) -> Iterator[str]:
    """Serve one of :data:`ENVIRONMENTS` with the official package; yield its URL."""
    env, action, observation, state = ENVIRONMENTS[name]
    app = create_fastapi_app(
        env, action, observation, max_concurrent_envs=max_concurrent_envs, state_cls=state
    )
    with serve_official_app(app) as url:
        yield url
