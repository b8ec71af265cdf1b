"""Chess positions as planes and moves as integers, for the Gymnasium side.

Observation: ``Box(0, 1, (8, 8, 18), float32)``, ``[rank, file, plane]`` with rank 0 =
rank 1 and file 0 = the a-file (White's view, whoever the agent plays):

* planes 0-5: White pawn, knight, bishop, rook, queen, king; 6-11: the same for Black;
* plane 12: all ones when White is to move;
* planes 13-16: castling rights (White king side, White queen side, Black king side,
  Black queen side), all ones when held;
* plane 17: the en-passant target square.

Actions: ``Discrete(4240)``. ``from * 64 + to`` (squares 0 = a1 .. 63 = h8) for every
move except under-promotions; promotions to a queen use that plain index. The 144
under-promotions follow at ``4096 + ((color * 8 + from_file) * 3 + direction) * 3 +
piece``, with color 0 for White (to rank 8) and 1 for Black, direction 0/1/2 for a capture
towards the a-file / straight / towards the h-file, piece 0/1/2 for knight/bishop/rook.

Example:
    >>> import chess
    >>> board = chess.Board()
    >>> move_to_index(chess.Move.from_uci("e2e4"))
    796
    >>> index_to_move(796, board).uci()
    'e2e4'
    >>> int(legal_move_mask(board).sum())
    20
    >>> board_planes(board).shape
    (8, 8, 18)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import numpy as np
from gymnasium import spaces

from openenv_gym.envs.chess.options import CHESS_PURPOSE
from openenv_gym.extras import optional_imports

with optional_imports(CHESS_PURPOSE):
    import chess

N_PLANES: Final = 18
PLAIN_MOVES: Final = 64 * 64
UNDERPROMOTIONS: Final = (chess.KNIGHT, chess.BISHOP, chess.ROOK)
N_ACTIONS: Final = PLAIN_MOVES + 2 * 8 * 3 * 3  # 4240
_PIECES: Final = (chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, chess.KING)


def observation_space() -> spaces.Box:
    """The planes' space."""
    return spaces.Box(0.0, 1.0, (8, 8, N_PLANES), np.float32)


def action_space() -> spaces.Discrete:
    """The move-index space."""
    return spaces.Discrete(N_ACTIONS)


def board_planes(board: chess.Board) -> np.ndarray:
    """The ``(8, 8, 18)`` float32 planes of ``board`` (see the module docstring)."""
    planes = np.zeros((64, N_PLANES), np.float32)
    for offset, color in ((0, chess.WHITE), (6, chess.BLACK)):
        for index, piece in enumerate(_PIECES):
            for square in board.pieces(piece, color):
                planes[square, offset + index] = 1.0
    if board.turn == chess.WHITE:
        planes[:, 12] = 1.0
    rights = (
        board.has_kingside_castling_rights(chess.WHITE),
        board.has_queenside_castling_rights(chess.WHITE),
        board.has_kingside_castling_rights(chess.BLACK),
        board.has_queenside_castling_rights(chess.BLACK),
    )
    for plane, held in enumerate(rights, start=13):
        if held:
            planes[:, plane] = 1.0
    if board.ep_square is not None:
        planes[board.ep_square, 17] = 1.0
    return planes.reshape(8, 8, N_PLANES)


def move_to_index(move: chess.Move) -> int:
    """The action index of ``move``."""
    if move.promotion is None or move.promotion == chess.QUEEN:
        return move.from_square * 64 + move.to_square
    color = 0 if chess.square_rank(move.to_square) == 7 else 1
    from_file = chess.square_file(move.from_square)
    direction = chess.square_file(move.to_square) - from_file + 1
    piece = UNDERPROMOTIONS.index(move.promotion)
    return PLAIN_MOVES + ((color * 8 + from_file) * 3 + direction) * 3 + piece


def index_to_move(index: int, board: chess.Board) -> chess.Move:
    """The move of action ``index`` in ``board`` (queen promotion for a pawn's plain move).

    The move may be illegal (or the null move for meaningless indices); the server judges.
    """
    if index < PLAIN_MOVES:
        from_square, to_square = divmod(index, 64)
        if from_square == to_square:
            return chess.Move.null()
        promotion = None
        if board.piece_type_at(from_square) == chess.PAWN and chess.square_rank(to_square) in (
            0,
            7,
        ):
            promotion = chess.QUEEN
        return chess.Move(from_square, to_square, promotion)
    rest = index - PLAIN_MOVES
    rest, piece = divmod(rest, 3)
    rest, direction = divmod(rest, 3)
    color, from_file = divmod(rest, 8)
    to_file = from_file + direction - 1
    if not 0 <= to_file < 8:
        return chess.Move.null()
    from_rank, to_rank = (6, 7) if color == 0 else (1, 0)
    return chess.Move(
        chess.square(from_file, from_rank),
        chess.square(to_file, to_rank),
        UNDERPROMOTIONS[piece],
    )


def legal_move_mask(board: chess.Board) -> np.ndarray:
    """A ``bool`` mask of the legal action indices in ``board``."""
    return moves_mask(board.legal_moves)


def moves_mask(moves: Iterable[chess.Move]) -> np.ndarray:
    """A ``bool`` mask with the indices of ``moves`` set."""
    mask = np.zeros(N_ACTIONS, bool)
    for move in moves:
        mask[move_to_index(move)] = True
    return mask


__all__ = [
    "N_ACTIONS",
    "N_PLANES",
    "action_space",
    "board_planes",
    "index_to_move",
    "legal_move_mask",
    "move_to_index",
    "moves_mask",
    "observation_space",
]
