"""Two-player (and n-player) turn-based OpenEnv games as PettingZoo environments.

* :func:`make` / :class:`OpenEnvAECEnv`: one game as a PettingZoo ``AECEnv``;
  :func:`parallel_env`: its Parallel API through PettingZoo's turn-based conversion.
* :class:`SelfPlayVectorEnv`: many games stepped together, one round trip per server.
* :mod:`openenv_gym.multiagent.rllib` (the ``rllib`` extra, imported on its own): RLlib
  multi-agent PPO with one shared, action-masked policy for every seat.

Needs the ``multiagent`` extra (``pip install openenv-gym[multiagent]``: PettingZoo).

See docs/multiagent.md.

Example:
    >>> from openenv_gym.multiagent import SEATING, Seats
    >>> dict(SEATING["openenv/Chess-v0"])  # how make() seats both chess players
    {'opponent': 'self', 'illegal_move': 'error'}
    >>> Seats.read({"players": ["white", "black"], "current_player": "white"}, 2).agents
    ('player_0', 'player_1')
"""

from __future__ import annotations

from openenv_gym.multiagent.aec import OpenEnvAECEnv
from openenv_gym.multiagent.make import SEATING, make, parallel_env
from openenv_gym.multiagent.seats import Seats
from openenv_gym.multiagent.vector import SelfPlayVectorEnv

__all__ = ["SEATING", "OpenEnvAECEnv", "Seats", "SelfPlayVectorEnv", "make", "parallel_env"]
