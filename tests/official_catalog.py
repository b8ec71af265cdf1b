"""Servers on the official ``openenv`` package shaped exactly like catalog envs whose action
size no server declares (meta-pytorch/OpenEnv ``685de41``).

The models are field for field those of ``envs/maze_env/models.py``,
``envs/connect4_env/models.py``, ``envs/snake_env/models.py``,
``envs/sumo_rl_env/models.py`` and ``envs/openspiel_env/models.py``; the environments
carry the official class names (the official package's ``GET /metadata`` reports the class
name), and the apps are built as the official ``server/app.py`` files build them. The games
are small stand-ins with the same action sets (OpenSpiel itself is not installed): maze's 4
moves, connect4's 7 columns, and an OpenSpiel game of the profile's size in which a move
once played is no longer legal, as in tic-tac-toe.

Variants for the fallbacks: ``serve_catalog(..., metadata_name=...)`` (another metadata
name), :class:`WiderMazeObservation` (one more observation field: another schema
fingerprint), an OpenSpiel game with ``game_params`` or a game no profile has.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Dict, List, Optional  # noqa: UP035 - the official models' spelling

from openenv.core.env_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field

from tests.official_peer import serve_official_app

# ----------------------------------------------------------------------------- maze_env


class MazeAction(Action):
    """Action for the Maze environment."""

    action: int


class MazeObservation(Observation):
    """Observation from the Maze environment."""

    legal_actions: List[int] = Field(default_factory=list)  # noqa: UP006
    current_position: List[int] = Field(default_factory=list)  # noqa: UP006
    previous_position: List[int] = Field(default_factory=list)  # noqa: UP006


class MazeState(State):
    episode_id: Optional[str] = None  # noqa: UP045
    step_count: int
    done: bool = False
    current_position: List[int] = Field(default_factory=list)  # noqa: UP006
    exit_cell: List[int] = Field(default_factory=list)  # noqa: UP006
    status: str = "playing"


#: maze.py's moves: MOVE_UP = 0, MOVE_DOWN = 1, MOVE_LEFT = 2, MOVE_RIGHT = 3 as (dcol, drow).
_MAZE_MOVES = {0: (0, -1), 1: (0, 1), 2: (-1, 0), 3: (1, 0)}
_MAZE_SIZE = 3


class MazeEnvironment(Environment[MazeAction, MazeObservation, MazeState]):
    """A 3x3 maze without walls from (0, 0) to the exit (2, 2); a move off the grid is not
    legal and leaves the agent where it is (as maze.py's blocked moves do)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._at = (0, 0)
        self._previous = (0, 0)
        self._state = MazeState(episode_id=str(uuid.uuid4()), step_count=0)

    def _legal(self) -> list[int]:
        col, row = self._at
        return [
            move
            for move, (dc, dr) in _MAZE_MOVES.items()
            if 0 <= col + dc < _MAZE_SIZE and 0 <= row + dr < _MAZE_SIZE
        ]

    def _observation(self, reward: float, done: bool) -> MazeObservation:
        return MazeObservation(
            legal_actions=[] if done else self._legal(),
            current_position=list(self._at),
            previous_position=list(self._previous),
            reward=reward,
            done=done,
        )

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> MazeObservation:
        self._at = self._previous = (0, 0)
        self._state = MazeState(episode_id=str(uuid.uuid4()), step_count=0)
        return self._observation(0.0, False)

    def step(self, action: MazeAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        if action.action not in _MAZE_MOVES:
            raise ValueError(f"move {action.action} is not one of maze.py's 4 moves")
        dc, dr = _MAZE_MOVES[action.action] if action.action in self._legal() else (0, 0)
        self._previous, self._at = self._at, (self._at[0] + dc, self._at[1] + dr)
        self._state.step_count += 1
        done = self._at == (_MAZE_SIZE - 1, _MAZE_SIZE - 1) or self._state.step_count >= 20
        return self._observation(1.0 if self._at == (2, 2) else -0.05, done)

    @property
    def state(self) -> MazeState:
        return self._state


class WiderMazeObservation(MazeObservation):
    """The maze's observation with one more field: another schema fingerprint."""

    exit_cell: List[int] = Field(default_factory=list)  # noqa: UP006


# ----------------------------------------------------------------------------- connect4_env


class Connect4Action(Action):
    """Action for Connect4 environment."""

    column: int


class Connect4Observation(Observation):
    """Observation for Connect4 environment."""

    board: List[List[int]] = Field(default_factory=list)  # noqa: UP006
    legal_actions: List[int] = Field(default_factory=list)  # noqa: UP006


class Connect4Environment(Environment):
    """Connect four's 6 x 7 board; the game ends when a column is played while full or
    the board is full (no win check: the action set is what matters here)."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    ROWS = 6
    COLUMNS = 7

    def __init__(self) -> None:
        super().__init__()
        self._board = [[0] * self.COLUMNS for _ in range(self.ROWS)]
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)

    def _observation(self, reward: float = 0.0, done: bool = False) -> Connect4Observation:
        legal = [c for c in range(self.COLUMNS) if self._board[0][c] == 0]
        return Connect4Observation(
            board=[row[:] for row in self._board], legal_actions=legal, reward=reward, done=done
        )

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> Connect4Observation:
        self._board = [[0] * self.COLUMNS for _ in range(self.ROWS)]
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)
        return self._observation()

    def step(self, action: Connect4Action, timeout_s: float | None = None, **kwargs: Any) -> Any:
        col = action.column
        self._state.step_count += 1
        if not 0 <= col < self.COLUMNS or self._board[0][col] != 0:
            return self._observation(-1.0, True)
        row = max(r for r in range(self.ROWS) if self._board[r][col] == 0)
        self._board[row][col] = 1 if self._state.step_count % 2 else -1
        return self._observation(0.0, all(v != 0 for v in self._board[0]))

    @property
    def state(self) -> State:
        return self._state


# ----------------------------------------------------------------------------- snake_env


class SnakeAction(Action):
    """Action for the Snake environment."""

    action: int


class SnakeObservation(Observation):
    """Observation from the Snake environment."""

    grid: List[List[int]]  # noqa: UP006
    observation: List[List[List[float]]]  # noqa: UP006
    episode_score: float = 0.0
    episode_steps: int = 0
    episode_fruits: int = 0
    episode_kills: int = 0
    alive: bool = True


class SnakeEnvironment(Environment):
    """A snake on a 4 x 4 grid with observer="snake"'s 3 relative actions (0 noop, 1 left,
    2 right); it dies after 10 steps."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)

    def _observation(self, reward: float = 0.0) -> SnakeObservation:
        steps = self._state.step_count
        grid = [[int(r == 0 and c == steps % 4) for c in range(4)] for r in range(4)]
        return SnakeObservation(
            grid=grid,
            observation=[[[float(v)] for v in row] for row in grid],
            episode_steps=steps,
            alive=steps < 10,
            reward=reward,
            done=steps >= 10,
        )

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> SnakeObservation:
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)
        return self._observation()

    def step(self, action: SnakeAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        if action.action not in (0, 1, 2):
            raise ValueError(f"action {action.action} is not one of observer='snake''s 0..2")
        self._state.step_count += 1
        return self._observation(reward=0.001)

    @property
    def state(self) -> State:
        return self._state


# ----------------------------------------------------------------------------- sumo_rl_env


class SumoAction(Action):
    """Action for SUMO traffic signal control environment."""

    phase_id: int
    ts_id: str = "0"


class SumoObservation(Observation):
    """Observation from SUMO traffic signal environment."""

    observation: List[float] = Field(default_factory=list)  # noqa: UP006
    observation_shape: List[int] = Field(default_factory=list)  # noqa: UP006
    action_mask: List[int] = Field(default_factory=list)  # noqa: UP006
    sim_time: float = 0.0
    done: bool = False
    reward: Optional[float] = None  # noqa: UP045


class SumoEnvironment(Environment):
    """A traffic signal of ``phases`` green phases; like sumo_environment.py, every
    observation's metadata says ``num_green_phases`` (unless ``report=False``)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, phases: int = 4, report: bool = True) -> None:
        super().__init__()
        self._phases, self._report = phases, report
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)

    def _observation(self, phase: int, reward: float | None) -> SumoObservation:
        one_hot = [float(p == phase) for p in range(self._phases)]
        metadata = {"num_green_phases": self._phases} if self._report else {}
        return SumoObservation(
            observation=one_hot,
            observation_shape=[self._phases],
            action_mask=list(range(self._phases)),
            sim_time=5.0 * self._state.step_count,
            done=self._state.step_count >= 10,
            reward=reward,
            metadata=metadata,
        )

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> SumoObservation:
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)
        return self._observation(0, None)

    def step(self, action: SumoAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        if not 0 <= action.phase_id < self._phases:
            raise ValueError(f"Invalid phase_id: {action.phase_id}")
        self._state.step_count += 1
        return self._observation(action.phase_id, -1.0)

    @property
    def state(self) -> State:
        return self._state


# ----------------------------------------------------------------------------- openspiel_env


class OpenSpielAction(Action):
    """Action for OpenSpiel environments."""

    action_id: int
    game_name: str = "catch"
    game_params: Dict[str, Any] = Field(default_factory=dict)  # noqa: UP006


class OpenSpielObservation(Observation):
    """Observation from OpenSpiel environment."""

    info_state: List[float]  # noqa: UP006
    legal_actions: List[int]  # noqa: UP006
    game_phase: str = "playing"
    current_player_id: int = 0
    opponent_last_action: Optional[int] = None  # noqa: UP045


class OpenSpielState(State):
    game_name: str = "catch"
    agent_player: int = 0
    opponent_policy: str = "random"
    game_params: Dict[str, Any] = Field(default_factory=dict)  # noqa: UP006
    num_players: int = 1


#: The stand-in games' action counts (the profiles' facts).
SPIEL_ACTIONS = {
    "catch": 3,
    "tic_tac_toe": 9,
    "kuhn_poker": 2,
    "cliff_walking": 4,
    "2048": 4,
    "blackjack": 2,
    "leduc_poker": 3,  # no profile: the mapping refuses
}


class OpenSpielEnvironment(Environment):
    """A stand-in for an OpenSpiel game of ``SPIEL_ACTIONS[game_name]`` actions: each move,
    once played, is no longer legal; the opponent (player 1) has taken the last action
    before the agent's first turn, so one reset shows fewer legal actions than the game has
    (as tic-tac-toe's second player sees 8 of 9 cells)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, game_name: str = "catch", game_params: dict[str, Any] | None = None):
        super().__init__()
        self.game_name = game_name
        self._actions = SPIEL_ACTIONS[game_name]
        self._played: list[int] = []
        self._state = OpenSpielState(
            game_name=game_name, game_params=game_params or {}, num_players=2
        )

    def _observation(self, reward: float | None = None) -> OpenSpielObservation:
        legal = [a for a in range(self._actions) if a not in self._played]
        done = len(legal) <= 1
        return OpenSpielObservation(
            info_state=[float(a in self._played) for a in range(self._actions)],
            legal_actions=[] if done else legal,
            game_phase="terminal" if done else "playing",
            opponent_last_action=self._played[-1] if self._played else None,
            reward=reward,
            done=done,
        )

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> OpenSpielObservation:
        self._played = [self._actions - 1]  # the opponent's first move
        self._state.episode_id, self._state.step_count = str(uuid.uuid4()), 0
        return self._observation()

    def step(self, action: OpenSpielAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        if action.action_id in self._played or not 0 <= action.action_id < self._actions:
            raise ValueError(f"action {action.action_id} is not legal")
        self._played.append(action.action_id)
        self._state.step_count += 1
        return self._observation(reward=1.0)

    @property
    def state(self) -> OpenSpielState:
        return self._state


class _Named:
    """An environment factory whose instances report ``name`` in ``GET /metadata``."""

    def __init__(self, env: Any, name: str) -> None:
        self.env, self.name = env, name

    def __call__(self) -> Any:
        instance = self.env()
        instance.get_metadata = lambda: EnvironmentMetadata(
            name=self.name, description="", version="1.0.0"
        )
        return instance


@contextmanager
def serve_catalog(
    env: str,
    *,
    game: str = "catch",
    game_params: dict[str, Any] | None = None,
    phases: int = 4,
    report: bool = True,
    observation: type[Observation] | None = None,
    metadata_name: str | None = None,
) -> Iterator[str]:
    """Serve a catalog stand-in as its official ``server/app.py`` builds it; yield its URL.

    ``env`` is ``"maze_env"``, ``"connect4_env"``, ``"snake_env"``, ``"sumo_rl_env"``
    (``phases`` its signal's, ``report=False`` leaves them out of the metadata) or
    ``"openspiel_env"`` (``game`` and ``game_params`` its game); ``observation`` replaces
    the observation model and ``metadata_name`` the name ``GET /metadata`` reports (the
    fallback variants).
    """
    factory: Any
    if env == "maze_env":
        factory, action, obs, name = MazeEnvironment, MazeAction, MazeObservation, "maze_env"
        concurrent: int | None = 1  # maze's app.py: max_concurrent_envs=1
    elif env == "connect4_env":
        factory, action, obs, name = (
            Connect4Environment,
            Connect4Action,
            Connect4Observation,
            "connect4_env",
        )
        concurrent = None
    elif env == "snake_env":
        factory, action, obs, name = SnakeEnvironment, SnakeAction, SnakeObservation, env
        concurrent = None
    elif env == "sumo_rl_env":

        def factory() -> SumoEnvironment:
            return SumoEnvironment(phases=phases, report=report)

        action, obs, name, concurrent = SumoAction, SumoObservation, env, None
    elif env == "openspiel_env":

        def factory() -> OpenSpielEnvironment:
            return OpenSpielEnvironment(game_name=game, game_params=game_params)

        action, obs, name, concurrent = OpenSpielAction, OpenSpielObservation, env, 8
    else:
        raise ValueError(f"unknown catalog env {env!r}")
    if metadata_name is not None:
        factory = _Named(factory, metadata_name)
    app = create_app(
        factory, action, observation or obs, env_name=name, max_concurrent_envs=concurrent
    )
    with serve_official_app(app) as url:
        yield url
