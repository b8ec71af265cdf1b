"""A chess server built the official way: the official ``openenv`` package's
``create_fastapi_app`` with the official chess schema and what the official ``chess_env``
server does that matters to a client: an illegal or unparsable move (a bare ``e7e8`` for a
pawn) is answered ``reward=-0.1`` and nothing moves, and a game reaching ``max_moves``
half-moves ends ``done`` with ``result="1/2-1/2"`` and no flag saying it was the move limit.
A random opponent (seeded by ``reset(seed=)``) answers each move. A test peer.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import chess
from openenv.core.env_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from tests.official_peer import serve_official_app


class OfficialChessAction(Action):
    move: str


class OfficialChessObservation(Observation):
    fen: str = ""
    legal_moves: list[str] = Field(default_factory=list)
    is_check: bool = False
    result: str | None = None


class OfficialStyleChessEnvironment(Environment):
    """The official chess server's replies (white to play, a random opponent)."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    max_moves = 500

    def __init__(self) -> None:
        super().__init__()
        self._board = chess.Board()
        self._rng = random.Random(0)
        self._state = State(step_count=0)

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        fen: str | None = None,
        **kwargs: Any,
    ) -> Any:
        self._board = chess.Board(fen) if fen else chess.Board()
        self._rng = random.Random(seed)
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return self._observation(0.0, False)

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        try:
            move = chess.Move.from_uci(action.move)
        except ValueError:
            return self._observation(-0.1, False)
        if move not in self._board.legal_moves:
            return self._observation(-0.1, False)
        self._board.push(move)
        self._state.step_count += 1
        done = self._done()
        if not done:
            self._board.push(self._rng.choice(list(self._board.legal_moves)))
            self._state.step_count += 1
            done = self._done()
        return self._observation(0.0, done)

    def _done(self) -> bool:
        board = self._board
        return (
            board.is_checkmate()
            or board.is_stalemate()
            or board.is_insufficient_material()
            or board.is_fifty_moves()
            or board.is_repetition(3)
            or self._state.step_count >= self.max_moves
        )

    def _observation(self, reward: float, done: bool) -> Any:
        board = self._board
        result = None
        if done:
            result = ("1-0" if not board.turn else "0-1") if board.is_checkmate() else "1/2-1/2"
        return OfficialChessObservation(
            fen=board.fen(),
            legal_moves=[m.uci() for m in board.legal_moves],
            is_check=board.is_check(),
            done=done,
            reward=reward,
            result=result,
            metadata={"fullmove_number": board.fullmove_number},
        )

    @property
    def state(self) -> State:
        return self._state


@contextmanager
def official_chess_server(max_moves: int = 500) -> Iterator[str]:
    """Serve :class:`OfficialStyleChessEnvironment` (``max_moves`` half-moves); yield its URL."""

    class Limited(OfficialStyleChessEnvironment):
        pass

    Limited.max_moves = max_moves
    app = create_fastapi_app(
        Limited, OfficialChessAction, OfficialChessObservation, max_concurrent_envs=8
    )
    with serve_official_app(app) as url:
        yield url
