"""``OpenEnvAECEnv``: one OpenEnv session of a turn-based game as a PettingZoo ``AECEnv``.

The env wraps an :class:`~openenv_gym.env.OpenEnvEnv` (its spaces and codecs come from the
server's schema, as for a single env) whose server seats every player
(:mod:`openenv_gym.multiagent.seats`) and lists the legal actions. It follows PettingZoo's
chess conventions:

* agents ``player_0``, ``player_1`` (the server's ``players`` in order);
* observations ``{"observation": ..., "action_mask": int8 mask}``, the mask all zeros for
  the agent not to move;
* ``rewards`` per agent (each player's view), ``terminations`` / ``truncations`` per agent;
* after the game ends each agent is stepped with ``None`` (a move gets
  :class:`~openenv_gym.errors.GameOverError`).

The game is turn-based, so ``metadata["is_parallelizable"]`` is ``False``; PettingZoo's
``turn_based_aec_to_parallel`` gives the Parallel API (:func:`openenv_gym.multiagent.parallel_env`).

Example:
    >>> from openenv_gym.multiagent import make
    >>> env = make("openenv/Chess-v0")
    >>> env.reset(seed=0)
    >>> env.agent_selection, int(env.observe("player_0")["action_mask"].sum())
    ('player_0', 20)
    >>> env.step(796)  # e2e4
    >>> env.agent_selection, env.rewards
    ('player_1', {'player_0': 0.0, 'player_1': 0.0})
    >>> env.close()
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from openenv_gym.env import OpenEnvEnv
from openenv_gym.errors import ActionMaskUnavailableError, GameOverError, SeatsUnavailableError
from openenv_gym.extras import optional_imports
from openenv_gym.multiagent.seats import MULTIAGENT_PURPOSE, Seats

with optional_imports(MULTIAGENT_PURPOSE):
    from pettingzoo import AECEnv

#: PettingZoo's keys of a masked observation.
OBSERVATION_KEY = "observation"
MASK_KEY = "action_mask"


class OpenEnvAECEnv(AECEnv[str, dict[str, Any], Any]):
    """A remote turn-based game as a PettingZoo ``AECEnv`` (see the module docstring).

    The seats are read from a first reset while the env is built (one round trip).

    Args:
        env: The single env of the game's session; this env owns it (:meth:`close`).
        players: How many seats the game has.

    Raises:
        SeatsUnavailableError: The server does not seat ``players`` players, or lists no
            legal actions (the env closes ``env``).
    """

    metadata: dict[str, Any] = {
        "render_modes": ["ansi", "rgb_array"],
        "name": "openenv_aec_v0",
        "is_parallelizable": False,
    }

    def __init__(self, env: OpenEnvEnv, players: int = 2) -> None:
        super().__init__()
        self.env = env
        try:
            _, info = env.reset()
            self.seats = Seats.read(info, players)
            mask = env.action_masks()
        except ActionMaskUnavailableError as exc:
            env.close()
            raise SeatsUnavailableError(
                f"a multi-agent env needs the legal actions of each turn: {exc}"
            ) from exc
        except BaseException:
            env.close()
            raise
        self.render_mode = env.render_mode
        self.metadata = {**type(self).metadata, "render_modes": env.metadata["render_modes"]}
        self.possible_agents = list(self.seats.agents)
        space = spaces.Dict(
            {
                OBSERVATION_KEY: env.observation_space,
                MASK_KEY: spaces.Box(0, 1, mask.shape, np.int8),
            }
        )
        self.observation_spaces = dict.fromkeys(self.possible_agents, space)
        self.action_spaces = dict.fromkeys(self.possible_agents, env.action_space)
        self._observation: Any = None
        self._mask = mask.astype(np.int8)
        self._no_moves = np.zeros_like(self._mask)
        self.agents: list[str] = []
        self.agent_selection: str = self.seats.turn(info)

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        """The masked observation space (the same for every seat)."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        """The action space of the server's schema (the same for every seat)."""
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """New game; ``seed`` and ``options`` go to the server as the single env's do."""
        observation, info = self.env.reset(seed=seed, options=options)
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self._record(observation, info)

    def step(self, action: Any) -> None:
        """Play ``action`` for :attr:`agent_selection` (``None`` once the game is over).

        Raises:
            GameOverError: A move for an agent whose game has ended.
            ActionOutOfSpaceError: ``action`` is not in the action space (nothing is sent).
        """
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:
                raise GameOverError(
                    f"{agent} moved after the game ended; expected env.step(None) for each "
                    "agent, then env.reset() to play again"
                )
            self._was_dead_step(action)
            return
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._cumulative_rewards[agent] = 0.0
        self.rewards = self.seats.rewards(info, agent, reward, terminated or truncated)
        self.terminations = dict.fromkeys(self.agents, terminated)
        self.truncations = dict.fromkeys(self.agents, truncated)
        self._record(observation, info)
        if terminated or truncated:
            # Both are done: the next agent steps None first, as in PettingZoo's chess.
            self.agent_selection = self.agents[(self.agents.index(agent) + 1) % len(self.agents)]
        self._accumulate_rewards()

    def _record(self, observation: Any, info: dict[str, Any]) -> None:
        self._observation = observation
        self.infos = {a: dict(info) for a in self.agents}
        self.agent_selection = self.seats.turn(info)
        self._mask = self.env.action_masks().astype(np.int8)

    def observe(self, agent: str) -> dict[str, Any]:
        """The last observation, with ``agent``'s action mask (zeros when not its turn)."""
        mask = self._mask if agent == self.agent_selection else self._no_moves
        return {OBSERVATION_KEY: self._observation, MASK_KEY: mask}

    def render(self) -> Any:
        """What the single env renders (chess: the board as text for ``"ansi"``)."""
        return self.env.render()

    def close(self) -> None:
        """End the session and stop the server if it was started for this env."""
        self.env.close()

    def __repr__(self) -> str:
        return f"<OpenEnvAECEnv {self.env.base_url} {list(self.seats.players)}>"


__all__ = ["MASK_KEY", "OBSERVATION_KEY", "OpenEnvAECEnv"]
