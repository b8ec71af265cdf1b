"""The chess codecs: UCI moves <-> move indices, FEN <-> board planes.

They stand in for the schema-derived codecs of :class:`~openenv_gym.env.OpenEnvEnv` (the
official chess schema is ``{move: str}`` / ``{fen: str, legal_moves: list[str], ...}``), so
a chess env is an ordinary ``OpenEnvEnv`` and vectorizes natively. Both are stateless: one
codec serves every session of a vector env.

* :class:`ChessMoveCodec`: ``Discrete(4240)`` (see :mod:`openenv_gym.envs.chess.encoding`)
  -> ``{"move": uci}``. A plain index is sent as its from-to squares; a pawn reaching the
  last rank that way promotes to a queen (the index's meaning): :class:`ChessOpenEnvEnv`
  adds the ``q`` from its board, a vector env from each sub-env's last ``legal_moves``
  (official servers refuse a bare ``e7e8``). ``mask(legal_moves)`` is the legal-move mask.
* :class:`ChessBoardCodec`: the observation's ``fen`` -> ``Box(0, 1, (8, 8, 18))`` planes;
  every wire field (``fen``, ``legal_moves``, ``is_check``, ``result``) goes to ``info``.
  Its :meth:`~ChessBoardCodec.truncates` rule tells a draw by the move limit (truncated)
  from one by the rules (terminated), for the single and the vector env alike.

Example:
    >>> moves = ChessMoveCodec()
    >>> moves.encode(796), int(moves.mask(["e2e4", "g1f3"]).sum())
    ({'move': 'e2e4'}, 2)
    >>> board = ChessBoardCodec()
    >>> board.decode({"fen": "8/8/8/8/8/8/8/K6k w - - 0 1", "legal_moves": []}).shape
    (8, 8, 18)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from openenv_gym.envs.chess import encoding
from openenv_gym.envs.chess.options import CHESS_PURPOSE
from openenv_gym.errors import ActionOutOfSpaceError, ObservationMismatchError
from openenv_gym.extras import optional_imports
from openenv_gym.spaces import ActionCodec, ObservationCodec
from openenv_gym.spaces.describe import describe_value

with optional_imports(CHESS_PURPOSE):
    import chess

MOVE_FIELD: Final = "move"
FEN_FIELD: Final = "fen"
LEGAL_FIELD: Final = "legal_moves"


class ChessMoveCodec(ActionCodec):
    """Move indices as UCI moves (see the module docstring)."""

    def __init__(self) -> None:  # no schema mapping: the space is fixed
        self.space = encoding.action_space()
        self.key: str | None = MOVE_FIELD
        self.inferred = ()
        self.left_out = {}

    @property
    def maskable(self) -> bool:
        """Always: ``legal_moves`` gives the mask."""
        return True

    def index(self, action: Any) -> int:
        """``action`` as a move index.

        Raises:
            ActionOutOfSpaceError: It is not an integer in ``[0, 4240)``.
        """
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action.item()
        if (
            isinstance(action, int | np.integer)
            and not isinstance(action, bool)
            and 0 <= int(action) < encoding.N_ACTIONS
        ):
            return int(action)
        raise ActionOutOfSpaceError(
            f"action {describe_value(action)} is not in the action space "
            f"Discrete({encoding.N_ACTIONS}); expected a move index (see "
            "openenv_gym.envs.chess.encoding)",
            field=MOVE_FIELD,
        )

    def encode(
        self, action: Any, board: chess.Board | None = None, legal: Any = None
    ) -> dict[str, Any]:
        """A move index -> ``{"move": uci}``. A pawn's plain move to the last rank carries
        its queen promotion when ``board`` shows the pawn or ``legal`` (the last
        ``legal_moves``) lists the move only with ``q`` — official servers refuse it bare."""
        index = self.index(action)
        move = encoding.index_to_move(index, board if board is not None else chess.Board(None))
        uci = move.uci()
        bare = move.promotion is None and isinstance(legal, list | tuple) and uci not in legal
        if bare and f"{uci}q" in legal:
            uci = f"{uci}q"
        return {MOVE_FIELD: uci}

    def encode_batch(
        self, actions: Any, count: int, legal: Sequence[Any] | None = None
    ) -> list[dict[str, Any]]:
        """One wire action per move index of the batch; ``legal`` (each sub-env's last
        ``legal_moves``) gives the promotions, as :meth:`encode` does."""
        array = np.asarray(actions)
        if array.shape != (count,):
            raise ActionOutOfSpaceError(
                f"expected a batch of {count} move indices, got {describe_value(actions)}"
            )
        rows = legal if legal is not None and len(legal) == count else [None] * count
        return [self.encode(a, legal=rows[i]) for i, a in enumerate(array.tolist())]

    def mask(self, legal: Any, field: str = LEGAL_FIELD) -> np.ndarray:
        """The ``bool`` mask of the UCI moves in ``legal``."""
        if not isinstance(legal, list | tuple):
            raise ActionOutOfSpaceError(
                f"field {field!r}: expected a list of UCI moves, got {describe_value(legal)}",
                field=field,
            )
        try:
            return encoding.moves_mask(chess.Move.from_uci(str(m)) for m in legal)
        except ValueError as exc:
            raise ActionOutOfSpaceError(
                f"field {field!r}: the server lists a move that is not UCI: {exc}", field=field
            ) from exc

    def decode(self, data: Mapping[str, Any]) -> Any:
        """``{"move": uci}`` -> its move index (server side, tests)."""
        try:
            return np.int64(encoding.move_to_index(chess.Move.from_uci(str(data[MOVE_FIELD]))))
        except (KeyError, TypeError, ValueError) as exc:
            raise ActionOutOfSpaceError(
                f"expected {{'move': <UCI move>}}, got {describe_value(data)}", field=MOVE_FIELD
            ) from exc

    def __repr__(self) -> str:
        return f"ChessMoveCodec(Discrete({encoding.N_ACTIONS}))"


class ChessBoardCodec(ObservationCodec):
    """Board planes from the observation's FEN; the wire fields go to ``info``."""

    def __init__(self) -> None:  # no schema mapping: the space is fixed
        self.space = encoding.observation_space()
        self.key: str | None = None
        self.truncated_key: str | None = None
        self.terminated_key: str | None = None
        self.inferred = ()
        self.variable = {LEGAL_FIELD: "the legal moves (they change as the game goes on)"}
        self.legal_key: str | None = LEGAL_FIELD
        self.truncation_rule = True

    def truncates(self, observation: Mapping[str, Any]) -> bool:
        """Whether a finished game was called off by the server's move limit (truncated).

        Our server says so in ``metadata["truncated"]`` (it always sends
        ``metadata["agent_color"]``). The official server only answers ``done`` with
        ``result="1/2-1/2"``: a drawn position with no checkmate, stalemate, insufficient
        material or fifty-move rule in its FEN ended by the move limit. (A threefold
        repetition is not visible in a FEN: on the official server it reads as truncated.)
        """
        metadata = observation.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        if "truncated" in metadata or "agent_color" in metadata:
            return bool(metadata.get("truncated"))
        if observation.get("result") != "1/2-1/2":
            return False
        try:
            board = chess.Board(str(observation.get(FEN_FIELD)))
        except ValueError:
            return False
        return board.outcome(claim_draw=False) is None and not board.is_fifty_moves()

    def decode(self, observation: Mapping[str, Any]) -> np.ndarray:
        """The ``(8, 8, 18)`` planes of the observation's ``fen``."""
        fen = observation.get(FEN_FIELD) if isinstance(observation, Mapping) else None
        try:
            return encoding.board_planes(chess.Board(str(fen or chess.STARTING_FEN)))
        except ValueError as exc:
            raise ObservationMismatchError(
                f"field {FEN_FIELD!r}: expected a FEN position, got {describe_value(fen)}: {exc}",
                field=FEN_FIELD,
            ) from exc

    def decode_batch(self, fields: Mapping[str, Any], count: int) -> list[Any]:
        """One decoded observation per row of a batch reply."""
        return [self.decode({k: column[i] for k, column in fields.items()}) for i in range(count)]

    def extras(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        """Every wire field: ``fen``, ``legal_moves``, ``is_check``, ``result``, ``metadata``."""
        return dict(observation) if isinstance(observation, Mapping) else {}

    def __repr__(self) -> str:
        return "ChessBoardCodec(Box(0, 1, (8, 8, 18)))"


__all__ = ["ChessBoardCodec", "ChessMoveCodec"]
