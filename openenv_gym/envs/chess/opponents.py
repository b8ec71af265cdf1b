"""The chess server's opponents: ``random``, ``material`` (2-ply search) and ``uci``.

Each opponent is a callable ``(board, rng) -> chess.Move`` for a position with at least
one legal move; :func:`make_opponent` builds one by name.

Example:
    >>> import chess, random
    >>> board = chess.Board("k7/8/8/8/8/8/8/KQ5r b - - 0 1")  # the rook can take the queen
    >>> MaterialOpponent()(board, random.Random(0)).uci()
    'h1b1'
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable
from typing import Final

from openenv_gym.envs.chess.options import CHESS_PURPOSE, OPPONENTS
from openenv_gym.errors import EnvConfigError, UCIEngineNotFoundError
from openenv_gym.extras import optional_imports

with optional_imports(CHESS_PURPOSE):
    import chess
    import chess.engine

Opponent = Callable[[chess.Board, random.Random], chess.Move]
#: Executables tried for ``opponent="uci"`` when no path is given.
UCI_CANDIDATES: Final = ("stockfish", "lc0", "gnuchess", "fairy-stockfish")
PIECE_VALUES: Final = {
    chess.PAWN: 1,
    chess.KNIGHT: 3,
    chess.BISHOP: 3,
    chess.ROOK: 5,
    chess.QUEEN: 9,
    chess.KING: 0,
}
_MATE: Final = 1000


def random_opponent(board: chess.Board, rng: random.Random) -> chess.Move:
    """A uniformly random legal move."""
    return rng.choice(list(board.legal_moves))


def material(board: chess.Board, color: chess.Color) -> int:
    """Material of ``color`` minus the other side's (pawn = 1, queen = 9)."""
    total = 0
    for piece, value in PIECE_VALUES.items():
        total += value * (len(board.pieces(piece, color)) - len(board.pieces(piece, not color)))
    return total


class MaterialOpponent:
    """A 2-ply material search: the move whose worst reply leaves the most material.

    Mate in one is taken; ties are broken at random (with the episode's seeded rng).
    """

    def _score_after(self, board: chess.Board, me: chess.Color) -> int:
        """The worst material for ``me`` over the replies in ``board`` (reply side to move)."""
        if board.is_checkmate():
            return _MATE
        if board.is_game_over():
            return 0
        worst = _MATE
        for reply in board.legal_moves:
            board.push(reply)
            score = -_MATE if board.is_checkmate() else material(board, me)
            board.pop()
            worst = min(worst, score)
        return worst

    def __call__(self, board: chess.Board, rng: random.Random) -> chess.Move:
        me = board.turn
        best_score, best = -_MATE - 1, []
        for move in board.legal_moves:
            board.push(move)
            score = self._score_after(board, me)
            board.pop()
            if score > best_score:
                best_score, best = score, [move]
            elif score == best_score:
                best.append(move)
        return rng.choice(best)


def find_uci_engine(path: str | None = None) -> str:
    """The full path of the UCI engine ``path`` (or of the first of :data:`UCI_CANDIDATES`
    on ``PATH`` when ``None``).

    Raises:
        UCIEngineNotFoundError: Not found.
    """
    if path is not None:
        found = shutil.which(path)
    else:
        found = next((shutil.which(n) for n in UCI_CANDIDATES if shutil.which(n)), None)
    if found is None:
        wanted = repr(path) if path else f"any of {', '.join(UCI_CANDIDATES)}"
        raise UCIEngineNotFoundError(
            f"opponent='uci' needs a UCI chess engine, but {wanted} was not found on PATH. "
            "Install one (e.g. `apt-get install stockfish`), pass its path with "
            "--uci-engine / uci_engine=, or use opponent='material' or 'random'."
        )
    return found


class UCIOpponent:
    """A UCI engine (Stockfish, ...) with a time limit per move.

    Args:
        path: The engine executable; ``None`` tries :data:`UCI_CANDIDATES` on ``PATH``.
        time_limit: Seconds per move.

    Raises:
        UCIEngineNotFoundError: No engine executable found.
    """

    def __init__(self, path: str | None = None, time_limit: float = 0.05) -> None:
        found = find_uci_engine(path)
        self.path = found
        self.time_limit = time_limit
        self._engine = chess.engine.SimpleEngine.popen_uci(found)

    def __call__(self, board: chess.Board, rng: random.Random) -> chess.Move:
        result = self._engine.play(board, chess.engine.Limit(time=self.time_limit))
        if result.move is None:
            return random_opponent(board, rng)
        return result.move

    def close(self) -> None:
        """Stop the engine process."""
        self._engine.quit()


def make_opponent(name: str, *, uci_engine: str | None = None) -> Opponent:
    """The opponent called ``name``.

    Raises:
        EnvConfigError: Unknown name.
        UCIEngineNotFoundError: ``"uci"`` without an engine.
    """
    if name == "random":
        return random_opponent
    if name == "material":
        return MaterialOpponent()
    if name == "uci":
        return UCIOpponent(uci_engine)
    raise EnvConfigError(f"unknown chess opponent {name!r}: expected one of {', '.join(OPPONENTS)}")


__all__ = [
    "PIECE_VALUES",
    "UCI_CANDIDATES",
    "MaterialOpponent",
    "Opponent",
    "UCIOpponent",
    "find_uci_engine",
    "make_opponent",
    "material",
    "random_opponent",
]
