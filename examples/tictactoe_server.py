"""Tic-tac-toe as an OpenEnv server that seats both players: the game the self-play example
learns, and an example of a turn-based server any multi-agent client can play.

What a server declares so that ``openenv_gym.multiagent`` seats every player: each
observation's ``metadata`` holds ``players`` (seat order), ``current_player`` (whose turn it
is) and ``rewards`` (each player's reward for the last move), and the observation lists the
legal actions (``legal_actions``). The board is ``1`` for X, ``-1`` for O, ``0`` for empty.

Run it on its own::

    python examples/tictactoe_server.py --port 8000
"""

from __future__ import annotations

import argparse
import uuid
from typing import Annotated, Any

from pydantic import Field

from openenv_gym.errors import ActionOutOfSpaceError, GameOverError, NotYourTurnError
from openenv_gym.server import (
    Action,
    Environment,
    EnvironmentMetadata,
    Observation,
    OpenEnvServer,
    State,
)

PLAYERS = ("x", "o")
LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))


class TicTacToeAction(Action):
    """The cell to mark (0-8, row by row); ``metadata["player"]`` may name the mover."""

    cell: int = Field(ge=0, le=8)


class TicTacToeObservation(Observation):
    """The board (X = 1, O = -1, empty = 0) and the empty cells (``metadata["winner"]``
    names the winner once there is one)."""

    board: list[Annotated[int, Field(ge=-1, le=1)]] = Field(
        default_factory=lambda: [0] * 9, min_length=9, max_length=9
    )
    legal_actions: list[int] = Field(default_factory=list)


class TicTacToeEnvironment(Environment[TicTacToeAction, TicTacToeObservation, State]):
    """Both players move through one session; X starts."""

    def __init__(self) -> None:
        self._board = [0] * 9
        self._turn = 0
        self._over = False
        self._state = State(step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> TicTacToeObservation:
        self._board, self._turn, self._over = [0] * 9, 0, False
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return self._observation({p: 0.0 for p in PLAYERS}, reward=None)

    def step(self, action: TicTacToeAction) -> TicTacToeObservation:
        mover = PLAYERS[self._turn]
        if self._over:
            raise GameOverError("the game is over; expected a reset before the next move")
        player = action.metadata.get("player")
        if player is not None and player != mover:
            raise NotYourTurnError(
                f"player {player!r} moved out of turn; expected a move by {mover!r}",
                field="player",
            )
        if self._board[action.cell] != 0:
            raise ActionOutOfSpaceError(
                f"cell {action.cell} is taken; expected one of {self._legal()}", field="cell"
            )
        self._board[action.cell] = 1 if self._turn == 0 else -1
        self._state.step_count += 1
        won = any(abs(sum(self._board[i] for i in line)) == 3 for line in LINES)
        self._over = won or not self._legal()
        reward = 1.0 if won else 0.0
        self._turn = 1 - self._turn
        other = PLAYERS[self._turn]
        return self._observation({mover: reward, other: -reward}, reward, mover if won else None)

    def _legal(self) -> list[int]:
        return [i for i, v in enumerate(self._board) if v == 0]

    def _observation(
        self, rewards: dict[str, float], reward: float | None, winner: str | None = None
    ) -> TicTacToeObservation:
        return TicTacToeObservation(
            board=list(self._board),
            legal_actions=[] if self._over else self._legal(),
            done=self._over,
            reward=reward,
            metadata={
                "players": list(PLAYERS),
                "current_player": PLAYERS[self._turn],
                "rewards": rewards,
                "winner": winner,
            },
        )

    @property
    def state(self) -> State:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="TicTacToe", description="Tic-tac-toe, both seats", version="1.0.0"
        )


def tictactoe_server(**kwargs: Any) -> OpenEnvServer:
    """The tic-tac-toe server (``OpenEnvServer`` keywords: ``port``, ``max_sessions``...)."""
    return OpenEnvServer(
        TicTacToeEnvironment,
        action_type=TicTacToeAction,
        observation_type=TicTacToeObservation,
        state_type=State,
        metadata=TicTacToeEnvironment().get_metadata(),
        **kwargs,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    tictactoe_server(host="127.0.0.1", port=args.port).run()
