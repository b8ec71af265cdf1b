"""``SelfPlayVectorEnv``: many games of a turn-based server, stepped in one round trip.

Each row is one game (one OpenEnv session). Every ``step`` takes one action per game, played
for whoever is to move there; the games are an
:class:`~openenv_gym.vector.OpenEnvVectorEnv` (``gym.make_vec`` of the id, with the
:data:`~openenv_gym.multiagent.SEATING` keywords), so against our servers one frame per
connection carries every game's move and autoreset happens server-side in the same round
trip.

The calling convention is the batched one CleanRL's self-play loops use with one shared
policy: arrays over games, the seat to move as an integer, and rewards per seat:

* ``reset() -> (observations, info)``; ``info["agent"]`` is the seat to move in each game
  (``0`` = ``player_0``), ``info["action_mask"]`` its legal actions;
* ``step(actions) -> (observations, rewards, terminations, truncations, info)`` with
  ``rewards`` of shape ``(num_envs, players)``: each seat's reward for that move (a finished
  game also pays the seat that did not move). A finished game restarts at once
  (``info["final_info"]`` has its last info).

Why not SuperSuit or RLlib: SuperSuit vectorizes Parallel envs, where every agent acts
every step (a turn-based game would send an idle row per seat and one frame per game),
and an RLlib ``MultiAgentEnv`` is one game per env runner slot. Here the games share
the vector env's frames.

Example:
    >>> import numpy as np
    >>> from openenv_gym.multiagent import SelfPlayVectorEnv
    >>> games = SelfPlayVectorEnv("openenv/Chess-v0", num_envs=4, max_moves=2)
    >>> obs, info = games.reset(seed=0)
    >>> obs.shape, info["agent"].tolist(), info["action_mask"].shape
    ((4, 8, 8, 18), [0, 0, 0, 0], (4, 4240))
    >>> first = np.array([np.flatnonzero(m)[0] for m in info["action_mask"]])
    >>> obs, rewards, terminations, truncations, info = games.step(first)
    >>> info["agent"].tolist(), rewards.shape
    ([1, 1, 1, 1], (4, 2))
    >>> games.close()
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from openenv_gym.errors import EnvConfigError, SeatsUnavailableError
from openenv_gym.multiagent.make import SEATING, check_id
from openenv_gym.multiagent.seats import PLAYERS_KEY, REWARDS_KEY, TURN_KEY, Seats
from openenv_gym.vector import OpenEnvVectorEnv


class SelfPlayVectorEnv:
    """``num_envs`` games of ``env_id`` stepped together (see the module docstring).

    Args:
        env_id: A registered ``openenv/...`` id of a turn-based game.
        num_envs: How many games.
        players: The game's number of seats.
        **kwargs: ``gym.make_vec`` keywords of the id (``base_url``, server options).

    Raises:
        SeatsUnavailableError: The server does not seat every player (the games close).
    """

    def __init__(self, env_id: str, num_envs: int, *, players: int = 2, **kwargs: Any) -> None:
        check_id(env_id)
        envs = gym.make_vec(
            env_id,
            num_envs=num_envs,
            autoreset_mode=AutoresetMode.SAME_STEP,
            **{**SEATING.get(env_id, {}), **kwargs},
        )
        if not isinstance(envs, OpenEnvVectorEnv):
            envs.close()
            raise EnvConfigError(f"{env_id!r} is not an OpenEnv id; got {type(envs).__name__}")
        self.envs = envs
        self.num_envs = num_envs
        self.players = players
        self.single_observation_space = envs.single_observation_space
        self.single_action_space = envs.single_action_space
        self.seats: Seats | None = None

    @property
    def possible_agents(self) -> list[str]:
        """The seats, ``player_0`` ... (known after the first :meth:`reset`)."""
        return list(self.seats.agents) if self.seats else []

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """New games in every row.

        Raises:
            SeatsUnavailableError: The server does not seat every player.
        """
        observations, info = self.envs.reset(seed=seed, options=options)
        if self.seats is None:
            try:
                self.seats = Seats.read(_row(info, 0, (PLAYERS_KEY, TURN_KEY)), self.players)
            except SeatsUnavailableError:
                self.close()
                raise
        return observations, self._annotate(info)

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Play one action per game for the seat to move there (see the module docstring)."""
        seats = self._seats()
        movers = self._movers
        observations, reward, terminations, truncations, info = self.envs.step(actions)
        rewards = np.zeros((self.num_envs, self.players), np.float32)
        done = np.logical_or(terminations, truncations)
        final = info.get("final_info", {})
        for i in range(self.num_envs):
            source = final if done[i] and isinstance(final, Mapping) else info
            row = _row(source, i, (REWARDS_KEY,))
            mover = seats.agents[int(movers[i])]
            by_agent = seats.rewards(row, mover, float(reward[i]), bool(done[i]))
            rewards[i] = [by_agent[a] for a in seats.agents]
        return observations, rewards, terminations, truncations, self._annotate(info)

    def _seats(self) -> Seats:
        if self.seats is None:
            raise EnvConfigError("call reset() before step()")
        return self.seats

    def _annotate(self, info: dict[str, Any]) -> dict[str, Any]:
        seats = self._seats()
        turns = info.get(TURN_KEY)
        self._movers = np.array([seats.seat({TURN_KEY: t}) for t in np.asarray(turns)])
        info["agent"] = self._movers.copy()
        info["action_mask"] = self.envs.action_masks()
        return info

    def close(self) -> None:
        """Close every game (and the servers started for them)."""
        self.envs.close()


def _row(info: Mapping[str, Any], index: int, keys: tuple[str, ...]) -> dict[str, Any]:
    """Row ``index`` of the vector ``info``'s ``keys`` (nested dicts too: ``rewards``)."""
    row: dict[str, Any] = {}
    for key in keys:
        present = info.get(f"_{key}")
        if key not in info or (present is not None and not bool(np.asarray(present)[index])):
            continue
        value = info[key]
        if isinstance(value, Mapping):
            row[key] = {k: v[index] for k, v in value.items() if not k.startswith("_")}
        else:
            row[key] = value[index]
    return row


__all__ = ["SelfPlayVectorEnv"]
