"""Seats: how a turn-based OpenEnv game says who plays, whose turn it is and who got what.

A server seats every player of a turn-based game when each observation's ``info`` (its
``metadata``, or fields left out of the observation space) holds:

* ``players``: the players' names in seat order (``["white", "black"]``);
* ``current_player``: whose turn it is (a name from ``players``);
* ``rewards`` (optional): each player's reward for the last move, by name. Without it the
  wire ``reward`` is the mover's and a finished game gives the others its negative
  (a zero-sum game).

The seats of a PettingZoo env are ``player_0``, ``player_1``, ... in that order.

Example:
    >>> seats = Seats.read({"players": ["white", "black"], "current_player": "black"}, 2)
    >>> seats.agents, seats.turn({"current_player": "black"})
    (('player_0', 'player_1'), 'player_1')
    >>> seats.rewards({"rewards": {"white": -1.0, "black": 1.0}}, "player_1", 1.0, True)
    {'player_0': -1.0, 'player_1': 1.0}
    >>> Seats.read({"fen": "..."}, 2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    openenv_gym.errors.SeatsUnavailableError: the server seats one player: ...
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from openenv_gym.errors import ProtocolError, SeatsUnavailableError

#: Who needs PettingZoo, in the error when it is missing.
MULTIAGENT_PURPOSE: Final = "openenv_gym.multiagent (PettingZoo envs)"
PLAYERS_KEY: Final = "players"
TURN_KEY: Final = "current_player"
REWARDS_KEY: Final = "rewards"


def agent_names(count: int) -> tuple[str, ...]:
    """PettingZoo's seat names: ``player_0``, ``player_1``, ..."""
    return tuple(f"player_{i}" for i in range(count))


@dataclass(frozen=True)
class Seats:
    """The players of a game (server names) and their PettingZoo agents, in seat order."""

    players: tuple[str, ...]
    agents: tuple[str, ...]

    @classmethod
    def read(cls, info: Mapping[str, Any], count: int) -> Seats:
        """The seats a reset's ``info`` declares.

        Raises:
            SeatsUnavailableError: It names no players or no current player, or fewer
                players than ``count``.
        """
        players = info.get(PLAYERS_KEY)
        if TURN_KEY not in info or not isinstance(players, list | tuple):
            raise SeatsUnavailableError(
                f"the server seats one player: its observations name no {PLAYERS_KEY!r} and "
                f"{TURN_KEY!r} (got the keys {sorted(info)}), so a client cannot move for "
                f"{count} players. Serve the game with a mode that seats every player, e.g. "
                "make('openenv/Chess-v0', opponent='self') or openenv-gym serve chess "
                "--opponent self"
            )
        if len(players) != count:
            raise SeatsUnavailableError(
                f"expected a game of {count} players, the server seats {len(players)}: "
                f"{list(players)}"
            )
        return cls(tuple(str(p) for p in players), agent_names(count))

    def seat(self, info: Mapping[str, Any]) -> int:
        """The seat (``0`` for ``player_0``) whose turn it is.

        Raises:
            ProtocolError: The server names a player it did not seat.
        """
        player = str(info.get(TURN_KEY))
        if player not in self.players:
            raise ProtocolError(
                f"the server says it is {player!r}'s turn; expected one of {list(self.players)}"
            )
        return self.players.index(player)

    def turn(self, info: Mapping[str, Any]) -> str:
        """The agent whose turn it is (see :meth:`seat`)."""
        return self.agents[self.seat(info)]

    def rewards(
        self, info: Mapping[str, Any], mover: str, reward: float, done: bool
    ) -> dict[str, float]:
        """Each agent's reward for the last move (see the module docstring)."""
        by_player = info.get(REWARDS_KEY)
        if isinstance(by_player, Mapping):
            return {
                agent: float(by_player.get(player, 0.0))
                for player, agent in zip(self.players, self.agents, strict=True)
            }
        others = -reward if done else 0.0
        return {agent: reward if agent == mover else others for agent in self.agents}


__all__ = ["MULTIAGENT_PURPOSE", "PLAYERS_KEY", "REWARDS_KEY", "TURN_KEY", "Seats", "agent_names"]
