"""ChessEnvironment: python-chess against a built-in opponent, as an OpenEnv environment.

The agent plays one color (``agent_color``: ``"white"``, ``"black"`` or ``"random"`` per
episode); after each agent move the opponent answers at once, so every observation is a
position with the agent to move (or a finished game). Rewards: ``+1`` win, ``-1`` loss,
``0`` draw and every other move.

Illegal moves (``illegal_move``):

* ``"penalty"`` (the default, as the official OpenEnv chess server does): no move is
  made, reward ``-0.1``, the game goes on;
* ``"loss"``: the agent forfeits: reward ``-1``, ``done``, result in the opponent's favour;
* ``"error"``: a ``VALIDATION_ERROR`` reply (:class:`~openenv_gym.errors.IllegalMoveError`);
  the position does not change.

Games longer than ``max_moves`` half-moves end as a draw with ``metadata["truncated"]``.

Self-play (``opponent="self"``): no built-in opponent; the client moves for both colours.
Every observation's ``metadata`` seats the players: ``players`` (``["white", "black"]``),
``current_player`` (whose turn it is) and ``rewards`` (each player's reward for the last
move: won ``+1``, lost ``-1``, draw and every other move ``0``); the wire ``reward`` is the
mover's. A step may name its player (``metadata={"player": "black"}``, the official action's own
field): a move out of turn is refused
(:class:`~openenv_gym.errors.NotYourTurnError`), and so is a move after the game ended
(:class:`~openenv_gym.errors.GameOverError`). The schema stays the official one, so an
official client can play both sides.

Example:
    >>> env = ChessEnvironment(opponent="random", agent_color="white")
    >>> first = env.reset(seed=0)
    >>> len(first.legal_moves), first.fen.split()[1]
    (20, 'w')
    >>> after = env.step(ChessAction(move="e2e4"))
    >>> after.fen.split()[1], after.reward, env.state.move_history[0]
    ('w', 0.0, 'e2e4')
    >>> both = ChessEnvironment(opponent="self")
    >>> both.reset(seed=0).metadata["current_player"]
    'white'
    >>> both.step(ChessAction(move="e2e4", metadata={"player": "white"})).metadata["current_player"]
    'black'
"""

from __future__ import annotations

import random
import uuid
from typing import Any

from openenv_gym.envs.chess.models import ChessAction, ChessObservation, ChessState
from openenv_gym.envs.chess.opponents import Opponent, make_opponent
from openenv_gym.envs.chess.options import (
    CHESS_PURPOSE,
    DEFAULT_ILLEGAL_MOVE,
    DEFAULT_MAX_MOVES,
    ILLEGAL_MOVE_PENALTY,
    SELF_PLAY,
    check_chess_options,
)
from openenv_gym.errors import EnvConfigError, GameOverError, IllegalMoveError, NotYourTurnError
from openenv_gym.extras import optional_imports
from openenv_gym.server.environment import Environment
from openenv_gym.server.models import EnvironmentMetadata

with optional_imports(CHESS_PURPOSE):
    import chess


class ChessEnvironment(Environment[ChessAction, ChessObservation, ChessState]):
    """Chess against a built-in opponent, with the official OpenEnv chess schema.

    Args:
        opponent: ``"random"``, ``"material"`` (2-ply material search), ``"uci"``, or
            ``"self"`` (the client plays both colours; ``agent_color`` is then unused).
        illegal_move: ``"penalty"`` (default), ``"loss"`` or ``"error"`` (see module doc).
        agent_color: ``"white"`` (default), ``"black"`` or ``"random"`` (per episode).
        max_moves: Half-moves before the game is called a draw (truncated).
        uci_engine: Engine executable for ``opponent="uci"``.

    Raises:
        EnvConfigError: An option is invalid.
        UCIEngineNotFoundError: ``opponent="uci"`` and no engine was found.
    """

    def __init__(
        self,
        opponent: str = "random",
        illegal_move: str = DEFAULT_ILLEGAL_MOVE,
        agent_color: str = "white",
        max_moves: int = DEFAULT_MAX_MOVES,
        uci_engine: str | None = None,
    ) -> None:
        check_chess_options(opponent, illegal_move, agent_color)
        if max_moves < 1:
            raise EnvConfigError(f"expected max_moves >= 1, got {max_moves}")
        self.opponent_name = opponent
        self.illegal_move = illegal_move
        self.agent_color_setting = agent_color
        self.max_moves = max_moves
        self.self_play = opponent == SELF_PLAY
        self._opponent: Opponent | None = (
            None if self.self_play else make_opponent(opponent, uci_engine=uci_engine)
        )
        self._rng = random.Random()
        self._board = chess.Board()
        self._agent: chess.Color = chess.WHITE
        self._state = ChessState()
        self._forfeited = False

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        fen: str | None = None,
        **kwargs: Any,
    ) -> ChessObservation:
        """New game from the initial position (or ``fen``); ``seed`` seeds the opponent.

        Raises:
            EnvConfigError: ``fen`` is not a valid position.
        """
        if seed is not None:
            self._rng = random.Random(seed)
        try:
            self._board = chess.Board(fen) if fen else chess.Board()
        except ValueError as exc:
            raise EnvConfigError(f"invalid fen {fen!r}: {exc}") from exc
        self._forfeited = False
        if self.self_play:
            self._agent = self._board.turn
        elif self.agent_color_setting == "random":
            self._agent = self._rng.random() < 0.5
        else:
            self._agent = self.agent_color_setting == "white"
        self._state = ChessState(
            episode_id=episode_id if episode_id is not None else str(uuid.uuid4()),
            step_count=0,
            fen=self._board.fen(),
            current_player=_color_name(self._board.turn),
            move_history=[],
        )
        if self._board.turn != self._agent and not self._board.is_game_over():
            self._opponent_moves()
        return self._observation(0.0, reset=True)

    def step(self, action: ChessAction) -> ChessObservation:
        """Play ``action.move`` (UCI), then the opponent's answer.

        Raises:
            IllegalMoveError: The move is illegal and ``illegal_move="error"``.
            NotYourTurnError: ``action.metadata["player"]`` is not the side to move.
            GameOverError: Self-play, and the game has ended (reset first).
        """
        if self.self_play:
            self._check_turn(action.metadata.get("player"))
            self._agent = self._board.turn
        elif self._board.is_game_over():
            return self._observation(0.0)
        try:
            move: chess.Move | None = chess.Move.from_uci(action.move)
        except ValueError:
            move = None
        if move is not None and move.promotion is None and move not in self._board.legal_moves:
            # A pawn's bare move to the last rank promotes to a queen (the move index's
            # meaning; clients that know no board, such as a vector env's codec, send it so).
            queen = chess.Move(move.from_square, move.to_square, chess.QUEEN)
            if queen in self._board.legal_moves:
                move = queen
        if move is None or move not in self._board.legal_moves:
            return self._illegal(action.move)
        self._push(move)
        if not self._finished() and not self._board.is_game_over():
            self._opponent_moves()
        return self._observation(self._agent_reward())

    def _check_turn(self, player: str | None) -> None:
        """Self-play: refuse a move after the end, or by the side not to move."""
        if self._forfeited or self._board.is_game_over(claim_draw=True) or self._finished():
            raise GameOverError(
                f"the game is over ({self._board.fen()!r}); expected a reset before the next "
                "move: env.reset()"
            )
        turn = _color_name(self._board.turn)
        if player is not None and player != turn:
            raise NotYourTurnError(
                f"player {player!r} moved out of turn; expected a move by {turn!r} (the side "
                f"to move in {self._board.fen()!r})",
                field="player",
            )

    def _illegal(self, text: str) -> ChessObservation:
        if self.illegal_move == "error":
            legal = ", ".join(m.uci() for m in list(self._board.legal_moves)[:12])
            raise IllegalMoveError(
                f"move {text!r} is not legal in {self._board.fen()!r}; expected a legal UCI "
                f"move such as {legal}",
                field="move",
            )
        if self.illegal_move == "loss":
            self._forfeited = True
            return self._observation(-1.0, forfeit=True)
        return self._observation(ILLEGAL_MOVE_PENALTY)

    def _push(self, move: chess.Move) -> None:
        self._board.push(move)
        self._state.step_count += 1
        self._state.move_history.append(move.uci())
        self._state.fen = self._board.fen()
        self._state.current_player = _color_name(self._board.turn)

    def _opponent_moves(self) -> None:
        if self._opponent is not None:
            self._push(self._opponent(self._board, self._rng))

    def _finished(self) -> bool:
        return self._state.step_count >= self.max_moves

    def _agent_reward(self) -> float:
        outcome = self._board.outcome(claim_draw=True)
        if outcome is None or outcome.winner is None:
            return 0.0
        return 1.0 if outcome.winner == self._agent else -1.0

    def _observation(
        self, reward: float, *, reset: bool = False, forfeit: bool = False
    ) -> ChessObservation:
        board = self._board
        outcome = board.outcome(claim_draw=True)
        truncated = outcome is None and self._finished()
        done = forfeit or outcome is not None or truncated
        result = None
        if forfeit:
            result = "0-1" if self._agent == chess.WHITE else "1-0"
        elif outcome is not None:
            result = outcome.result()
        elif truncated:
            result = "1/2-1/2"
        metadata: dict[str, Any] = {
            "agent_color": _color_name(self._agent),
            "fullmove_number": board.fullmove_number,
            "halfmove_clock": board.halfmove_clock,
        }
        if truncated:
            metadata["truncated"] = True
        if forfeit:
            metadata["forfeit"] = True
        if self.self_play:
            metadata.update(self._seats(reward, reset=reset))
        return ChessObservation(
            fen=board.fen(),
            legal_moves=[] if done else [m.uci() for m in board.legal_moves],
            is_check=board.is_check(),
            result=result,
            done=done,
            reward=None if reset else reward,
            metadata=metadata,
        )

    def _seats(self, reward: float, *, reset: bool) -> dict[str, Any]:
        """Self-play metadata: the players, whose turn it is, each player's reward."""
        mover = _color_name(self._agent)
        other = _color_name(not self._agent)
        rewards = {mover: 0.0, other: 0.0} if reset else {mover: reward, other: -reward}
        if not reset and reward not in (1.0, -1.0):  # an illegal-move penalty is the mover's
            rewards[other] = 0.0
        return {
            "players": ["white", "black"],
            "current_player": _color_name(self._board.turn),
            "rewards": {"white": rewards["white"], "black": rewards["black"]},
            "truncated": bool(self._finished() and self._board.outcome(claim_draw=True) is None),
        }

    @property
    def state(self) -> ChessState:
        """Episode id, half-moves played, FEN, side to move and the move list."""
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        """Name the opponent and the illegal-move policy."""
        return EnvironmentMetadata(
            name="Chess",
            description=(
                f"Chess (python-chess) against the {self.opponent_name!r} opponent; illegal "
                f"moves: {self.illegal_move!r}"
            ),
            version="1.0.0",
            documentation_url="https://python-chess.readthedocs.io/",
        )

    def close(self) -> None:
        """Stop the UCI engine, if any."""
        close = getattr(self._opponent, "close", None)
        if callable(close):
            close()


def _color_name(color: chess.Color) -> str:
    return "white" if color == chess.WHITE else "black"


__all__ = ["ChessEnvironment"]
