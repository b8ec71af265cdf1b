"""FastAPI apps shaped like third-party servers that hand out a session id, or answer a
string observation (issue 31).

* :func:`chess_session_app`: a plain FastAPI chess server as shyamsridhar123/openenv-chess
  ships it: ``POST /reset`` answers ``{game_id, observation, info}`` (many games live in the
  server, one per ``game_id``), ``POST /step`` takes ``{game_id, action}`` (both required,
  the action a UCI move string), an illegal move is HTTP 400, an unknown game 404, and the
  state is ``GET /state/{game_id}`` only. The observation nests the FEN
  (``board_state.fen``), lists ``legal_moves``, and only steps add ``is_checkmate`` and
  ``is_stalemate``. ``game_id_in="info"`` puts the id in the reset reply's ``info`` only
  (its response model declares no ``game_id``); ``"nowhere"`` hands out none (the step body
  still requires it). The step bodies received are kept in ``app.state.bodies``.
* :func:`text_observation_app`: a server whose observation is a string (``str(obs)``, as
  nachikethshetty-art/med-trainge-openenv answers), action ``{"kind": "wait" | "treat"}``;
  optionally its reward is a one-number object, ``{"score": x}``.

Example:
    >>> from fastapi.testclient import TestClient
    >>> client = TestClient(chess_session_app())
    >>> reply = client.post("/reset", json={}).json()
    >>> sorted(reply), len(reply["observation"]["legal_moves"])
    (['game_id', 'info', 'observation'], 20)
    >>> client.post("/step", json={"game_id": reply["game_id"], "action": "e2e5"}).status_code
    400
    >>> client.post("/step", json={"action": "e2e4"}).status_code
    422
    >>> TestClient(text_observation_app()).post("/reset", json={}).json()["observation"]
    "{'waiting': 3, 'treated': 0}"
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

import chess
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field


class ChessReset(BaseModel):
    """The reset body: an optional FEN and game id."""

    fen: str | None = None
    game_id: str | None = None


class ChessResetReply(BaseModel):
    """What ``/reset`` answers."""

    game_id: str
    observation: dict[str, Any]
    info: dict[str, Any]


class ChessResetReplyInfoOnly(BaseModel):
    """What ``/reset`` answers with ``game_id_in="info"`` (the id only in ``info``) or
    ``"nowhere"``."""

    observation: dict[str, Any]
    info: dict[str, Any]


class ChessStep(BaseModel):
    """The step body: the game and a UCI move."""

    game_id: str = Field(..., description="Game identifier")
    action: str = Field(..., description="Move in UCI notation (e.g., 'e2e4')")


class ChessStepReply(BaseModel):
    """What ``/step`` answers (Gymnasium's five values)."""

    game_id: str
    observation: dict[str, Any]
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


def _observation(board: chess.Board, *, after_step: bool) -> dict[str, Any]:
    tensor = [[[0] * 12 for _ in range(8)] for _ in range(8)]
    for square, piece in board.piece_map().items():
        plane = piece.piece_type - 1 + (0 if piece.color else 6)
        tensor[chess.square_rank(square)][chess.square_file(square)][plane] = 1
    observation: dict[str, Any] = {
        "board_state": {"fen": board.fen(), "board_tensor": tensor},
        "legal_moves": [move.uci() for move in board.legal_moves],
        "current_player": "white" if board.turn else "black",
        "is_check": board.is_check(),
    }
    if after_step:  # keys the reset observation does not have
        observation["is_checkmate"] = board.is_checkmate()
        observation["is_stalemate"] = board.is_stalemate()
    return observation


def chess_session_app(
    game_id_in: Literal["top", "info", "nowhere"] = "top", max_plies: int = 120
) -> FastAPI:
    """The chess server (see the module docstring); ``max_plies`` ends a game truncated."""
    app = FastAPI(title="chess-sessions")
    app.state.bodies = []
    games: dict[str, chess.Board] = {}
    reply_model = ChessResetReply if game_id_in == "top" else ChessResetReplyInfoOnly

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/reset", response_model=reply_model)
    def reset(request: ChessReset) -> dict[str, Any]:
        game_id = request.game_id or str(uuid.uuid4())
        board = chess.Board(request.fen) if request.fen else chess.Board()
        games[game_id] = board
        reply: dict[str, Any] = {
            "observation": _observation(board, after_step=False),
            "info": {"move_count": 0},
        }
        if game_id_in == "top":
            reply["game_id"] = game_id
        if game_id_in == "info":
            reply["info"]["game_id"] = game_id
        return reply

    @app.post("/step", response_model=ChessStepReply)
    def step(request: ChessStep) -> dict[str, Any]:
        app.state.bodies.append(request.model_dump())
        board = games.get(request.game_id)
        if board is None:
            raise HTTPException(status_code=404, detail=f"Game {request.game_id} not found")
        try:
            move = chess.Move.from_uci(request.action)
        except ValueError:
            raise HTTPException(status_code=400, detail=f"not UCI: {request.action}") from None
        if move not in board.legal_moves:
            raise HTTPException(status_code=400, detail=f"Illegal move: {request.action}")
        board.push(move)
        terminated = board.is_game_over()
        truncated = not terminated and board.ply() >= max_plies
        outcome = board.outcome()
        reward = 0.0
        if outcome is not None and outcome.winner is not None:
            reward = 1.0 if outcome.winner != board.turn else -1.0
        return {
            "game_id": request.game_id,
            "observation": _observation(board, after_step=True),
            "reward": reward,
            "terminated": terminated,
            "truncated": truncated,
            "info": {"move_count": board.ply(), "last_move": request.action},
        }

    @app.get("/state/{game_id}")
    def state(game_id: str) -> dict[str, Any]:
        if game_id not in games:
            raise HTTPException(status_code=404, detail=f"Game {game_id} not found")
        return {"game_id": game_id, "move_count": games[game_id].ply()}

    return app


class TriageStep(BaseModel):
    """The text server's action."""

    kind: Literal["wait", "treat"]


def text_observation_app(*, reward_model: bool = False) -> FastAPI:
    """Reset and step answer ``{"observation": str(obs), ...}``; no ``GET /state``.
    ``reward_model``: the reward is an object, ``{"score": x}`` (as
    404DevNotFoundd/smart-energy-env answers)."""
    app = FastAPI(title="text-observation")
    ward = {"waiting": 3, "treated": 0}

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "healthy"}

    @app.post("/reset")
    def reset() -> dict[str, Any]:
        ward.update(waiting=3, treated=0)
        return {"observation": str(ward), "status": "reset"}

    @app.post("/step")
    def step(action: TriageStep) -> dict[str, Any]:
        if action.kind == "treat" and ward["waiting"]:
            ward["waiting"] -= 1
            ward["treated"] += 1
        done = ward["waiting"] == 0
        reward: Any = float(action.kind == "treat")
        reward = {"score": reward} if reward_model else reward
        return {"observation": str(ward), "reward": reward, "done": done}

    return app


__all__ = ["chess_session_app", "text_observation_app"]
