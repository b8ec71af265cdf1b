"""The official OpenEnv chess models (field for field), served by our chess server.

Example:
    >>> ChessAction(move="e2e4").move
    'e2e4'
    >>> sorted(ChessObservation.model_fields)
    ['done', 'fen', 'is_check', 'legal_moves', 'metadata', 'result', 'reward']
"""

from __future__ import annotations

from pydantic import Field

from openenv_gym.server.models import Action, Observation, State

#: The FEN of the initial position.
STARTING_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


class ChessAction(Action):
    """Action for Chess environment.

    Attributes:
        move: UCI format move string (e.g., "e2e4", "e7e8q" for promotion).

    A self-play client may name the colour that moves in ``metadata["player"]``
    (``"white"``/``"black"``); the server refuses a move out of turn.
    """

    move: str


class ChessObservation(Observation):
    """Observation for Chess environment.

    Attributes:
        fen: Board position in FEN notation.
        legal_moves: List of legal moves in UCI format.
        is_check: Whether the current player is in check.
        result: Game result string if game is over (e.g., "1-0", "0-1", "1/2-1/2").
    """

    fen: str = ""
    legal_moves: list[str] = Field(default_factory=list)
    is_check: bool = False
    result: str | None = None


class ChessState(State):
    """State for Chess environment.

    Attributes:
        fen: Current board position in FEN notation.
        current_player: "white" or "black".
        move_history: List of moves played in UCI format.
    """

    fen: str = STARTING_FEN
    current_player: str = "white"
    move_history: list[str] = Field(default_factory=list)
    step_count: int = 0


__all__ = ["STARTING_FEN", "ChessAction", "ChessObservation", "ChessState"]
