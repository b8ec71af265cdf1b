"""Self-play with RLlib (new API stack): both seats of a turn-based OpenEnv game, one policy.

RLlib's own PettingZoo wrapper (``ray.rllib.env.wrappers.pettingzoo_env.PettingZooEnv``)
turns an AEC env into a ``MultiAgentEnv``: each step returns the observation of the agent to
move, and at the end of a game every seat's final reward. :class:`RLlibSelfPlayEnv` is that
wrapper over :class:`~openenv_gym.multiagent.OpenEnvAECEnv`, with the observation reshaped to
what RLlib's action-masking RLModule reads: ``{"observations": float32 Box, "action_mask":
float32 Box}`` (the game's observation flattened; the mask of legal moves).

:func:`selfplay_config` points a ``PPOConfig`` (or any new-stack config) at a game with one
shared policy for every seat (``policy_mapping_fn``) and RLlib's
``ActionMaskingTorchRLModule``, whose logits of illegal moves are ``-inf``-like, so the policy
never plays an illegal move (a server would reject one with a typed error).

Example:
    >>> from ray.rllib.algorithms.ppo import PPOConfig  # doctest: +SKIP
    >>> config = selfplay_config(PPOConfig(), "openenv/Chess-v0")  # doctest: +SKIP
    >>> algo = config.build_algo()  # doctest: +SKIP

    >>> env = RLlibSelfPlayEnv.make("openenv/Chess-v0")
    >>> observations, infos = env.reset(seed=0)
    >>> sorted(observations), sorted(observations["player_0"])
    (['player_0'], ['action_mask', 'observations'])
    >>> int(observations["player_0"]["action_mask"].sum())  # 20 legal first moves
    20
    >>> env.close()
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar, cast

import numpy as np
from gymnasium import spaces

from openenv_gym.errors import NotYourTurnError, SpaceMappingError
from openenv_gym.extras import optional_imports
from openenv_gym.multiagent.aec import MASK_KEY, OBSERVATION_KEY, OpenEnvAECEnv
from openenv_gym.multiagent.make import make

RLLIB_PURPOSE: Final = "openenv_gym.multiagent.rllib (RLlib self-play)"

with optional_imports(RLLIB_PURPOSE):
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
    from ray.rllib.utils.typing import MultiAgentDict

#: The keys RLlib's ``ActionMaskingRLModule`` reads.
RLLIB_OBSERVATIONS_KEY: Final = "observations"
RLLIB_MASK_KEY: Final = "action_mask"
#: The policy both seats share in :func:`selfplay_config`.
SHARED_POLICY: Final = "shared"
ConfigT = TypeVar("ConfigT")


class RLlibSelfPlayEnv(PettingZooEnv):
    """RLlib's ``PettingZooEnv`` over an :class:`OpenEnvAECEnv`, observations masked the way
    RLlib's action-masking RLModule expects (see the module docstring).

    Args:
        env: The AEC env; this env owns it (``close``).
    """

    def __init__(self, env: OpenEnvAECEnv) -> None:
        super().__init__(env)
        self._inner_spaces: dict[Any, spaces.Dict] = {
            aid: cast(spaces.Dict, env.observation_space(aid)) for aid in env.possible_agents
        }
        observation_spaces: dict[Any, spaces.Space[Any]] = {
            aid: _rllib_space(space) for aid, space in self._inner_spaces.items()
        }
        self.observation_spaces = observation_spaces
        self.observation_space = spaces.Dict(observation_spaces)

    @classmethod
    def make(cls, env_id: str, **kwargs: Any) -> RLlibSelfPlayEnv:
        """``RLlibSelfPlayEnv(openenv_gym.multiagent.make(env_id, **kwargs))``."""
        return cls(make(env_id, **kwargs))

    def reset(  # type: ignore[override]  # RLlib's MultiAgentEnv retypes gymnasium's reset
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        """New game; the observation of the agent to move first."""
        observations, infos = super().reset(seed=seed, options=options)
        return self._convert(observations), infos

    def step(self, action: MultiAgentDict) -> tuple[Any, ...]:
        """Play the move of the agent to move; RLlib's wrapper steps finished seats.

        Raises:
            NotYourTurnError: ``action`` has no move for the agent to move (nothing is sent).
            ServerReplyError: The server refused the move (an illegal one; the game goes on).
        """
        mover = self.env.agent_selection
        if mover not in action:
            raise NotYourTurnError(
                f"it is {mover}'s turn, but the actions are for {sorted(map(str, action))}; "
                f"expected env.step({{{mover!r}: move}}) with a move from {mover}'s action_mask"
            )
        observations, *rest = super().step(action)
        return (self._convert(observations), *rest)

    def _convert(self, observations: MultiAgentDict) -> MultiAgentDict:
        return {
            aid: _rllib_observation(self._inner_spaces[aid], observation)
            for aid, observation in observations.items()
        }


def _rllib_space(space: spaces.Dict) -> spaces.Dict:
    inner = spaces.flatten_space(space[OBSERVATION_KEY])
    if not isinstance(inner, spaces.Box):
        raise SpaceMappingError(
            f"RLlib's action-masking module needs an observation that flattens to a Box; "
            f"got {space[OBSERVATION_KEY]} (flattened: {inner}); expected a game whose "
            "observation space is made of Box, Discrete, MultiBinary, Dict or Tuple spaces",
            field=OBSERVATION_KEY,
        )
    mask = space[MASK_KEY]
    return spaces.Dict(
        {
            RLLIB_MASK_KEY: spaces.Box(0.0, 1.0, mask.shape, np.float32),
            RLLIB_OBSERVATIONS_KEY: spaces.Box(
                inner.low.astype(np.float32), inner.high.astype(np.float32), dtype=np.float32
            ),
        }
    )


def _rllib_observation(space: spaces.Dict, observation: Mapping[str, Any]) -> dict[str, Any]:
    flat = spaces.flatten(space[OBSERVATION_KEY], observation[OBSERVATION_KEY])
    return {
        RLLIB_MASK_KEY: np.asarray(observation[MASK_KEY], dtype=np.float32),
        RLLIB_OBSERVATIONS_KEY: np.asarray(flat, dtype=np.float32),
    }


def env_creator(env_id: str) -> Callable[[Mapping[str, Any]], RLlibSelfPlayEnv]:
    """A ``tune.register_env`` creator: ``env_config`` holds :func:`make`'s keywords
    (``base_url``, ``max_moves``, ...)."""

    def create(env_config: Mapping[str, Any]) -> RLlibSelfPlayEnv:
        return RLlibSelfPlayEnv.make(env_id, **dict(env_config))

    return create


def shared_policy(agent_id: Any, episode: Any, **kwargs: Any) -> str:
    """The ``policy_mapping_fn`` of self-play: every seat plays :data:`SHARED_POLICY`."""
    return SHARED_POLICY


def selfplay_config(
    config: ConfigT,
    env_id: str,
    *,
    env_config: Mapping[str, Any] | None = None,
    name: str | None = None,
) -> ConfigT:
    """Point an RLlib ``AlgorithmConfig`` at self-play of ``env_id``: one shared, masked policy.

    Registers :func:`env_creator` with ``tune.register_env`` under ``name`` (default
    ``"openenv-selfplay:" + env_id``), then sets ``environment`` (without RLlib's env check,
    which plays a random unmasked move: illegal in most games), ``multi_agent`` (one policy,
    :func:`shared_policy`) and ``rl_module`` (RLlib's ``ActionMaskingTorchRLModule``).

    Args:
        config: E.g. ``PPOConfig()``; returned, configured.
        env_id: A registered multi-agent id, e.g. ``"openenv/Chess-v0"``, or
            ``"openenv/Remote-v0"`` with ``base_url`` in ``env_config``.
        env_config: :func:`openenv_gym.multiagent.make` keywords.
        name: The name to register the env under.
    """
    with optional_imports(RLLIB_PURPOSE):
        from ray import tune
        from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
        from ray.rllib.core.rl_module.rl_module import RLModuleSpec
        from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
            ActionMaskingTorchRLModule,
        )

    registered = name or f"openenv-selfplay:{env_id}"
    tune.register_env(registered, env_creator(env_id))
    module = RLModuleSpec(module_class=ActionMaskingTorchRLModule)
    configured: Any = config
    configured = (
        # RLlib's env check steps an unmasked action_space.sample(): an illegal chess move.
        configured.environment(
            registered, env_config=dict(env_config or {}), disable_env_checking=True
        )
        .multi_agent(policies={SHARED_POLICY}, policy_mapping_fn=shared_policy)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={SHARED_POLICY: module}))
    )
    result: ConfigT = configured
    return result


__all__ = [
    "RLLIB_MASK_KEY",
    "RLLIB_OBSERVATIONS_KEY",
    "SHARED_POLICY",
    "RLlibSelfPlayEnv",
    "env_creator",
    "selfplay_config",
    "shared_policy",
]
