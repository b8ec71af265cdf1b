"""End episodes on conditions declared in a config, for single envs and vector envs.

Two conditions:

* :class:`FieldBound`: an observation or info field leaves ``[low, high]`` (e.g. a cart
  position beyond 1.0, ``lives`` below 3);
* :class:`NoRewardFor`: ``steps`` consecutive steps without a reward above ``threshold``.

Each says whether it *terminates* (the state is terminal: no bootstrapping) or *truncates*
(a cut: learners bootstrap from ``s'``); the default is to truncate, which is right for
limits that are not part of the task. The first condition that fires is named in
``info["termination_condition"]`` (``"conditions[1]: no reward for 100 steps"``).

:class:`TerminateWhen` wraps a single env. :class:`VectorTerminateWhen` wraps a vector env
in the ``SAME_STEP`` autoreset mode (the sub-env is reset in the same step, its final
observation goes to ``info["final_obs"]``) or ``DISABLED`` (the caller resets it). In the
``NEXT_STEP`` mode a vector wrapper cannot reset one sub-env without stepping the others, so
it refuses; apply :class:`TerminateWhen` to each sub-env instead (``make_from_config`` does).

Example:
    >>> import gymnasium as gym
    >>> env = TerminateWhen(gym.make("CartPole-v1"), [FieldBound("observation", 0, high=0.01)])
    >>> _ = env.reset(seed=0)
    >>> steps = 0
    >>> while True:
    ...     _, _, terminated, truncated, info = env.step(1)
    ...     steps += 1
    ...     if terminated or truncated:
    ...         break
    >>> truncated, info["termination_condition"]
    (True, 'conditions[0]: observation[0] > 0.01')
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper
from pydantic import BaseModel, ConfigDict, PositiveInt, model_validator

from openenv_gym.errors import WrapperConfigError
from openenv_gym.wrappers.episodes import EpisodeTracker, autoreset_mode_of, index_observation
from openenv_gym.wrappers.fields import check_instances, check_scalar_field, read_field
from openenv_gym.wrappers.shaping import FieldKey, Number

__all__ = [
    "TERMINATION_KEY",
    "Condition",
    "FieldBound",
    "NoRewardFor",
    "TerminateWhen",
    "VectorTerminateWhen",
]

TERMINATION_KEY: Final = "termination_condition"
Outcome = Literal["terminated", "truncated"]


class Condition(ABC):
    """A reason to end an episode; one instance follows one (sub-)env."""

    outcome: Outcome

    def check_space(self, observation_space: spaces.Space[Any], path: str) -> None:  # noqa: B027
        """Raise :class:`WrapperConfigError` if the condition cannot read this space."""

    def reset(self) -> None:  # noqa: B027 - stateless conditions need nothing
        """Start of an episode."""

    @abstractmethod
    def check(self, observation: Any, reward: float, info: Mapping[str, Any]) -> str | None:
        """Why the episode ends after this step, or ``None``."""


@dataclass
class FieldBound(Condition):
    """End the episode when ``source[key]`` is below ``low`` or above ``high``.

    Attributes:
        source: ``"observation"`` (of ``s'``) or ``"info"`` (a step whose info lacks the
            key never fires).
        key: A Dict field name, an info key, or a flat index into a Box observation.
        low, high: The bounds (``None``: unbounded on that side).
        outcome: ``"truncated"`` (default) or ``"terminated"``.
    """

    source: Literal["observation", "info"]
    key: str | int
    low: float | None = None
    high: float | None = None
    outcome: Outcome = "truncated"

    def __post_init__(self) -> None:
        if self.low is None and self.high is None:
            raise WrapperConfigError("a field bound needs low, high or both", path="low")
        if self.low is not None and self.high is not None and not self.low <= self.high:
            raise WrapperConfigError(
                f"low must be <= high, got low={self.low}, high={self.high}", path="low"
            )

    def check_space(self, observation_space: spaces.Space[Any], path: str) -> None:
        if self.source != "observation":
            return
        check_scalar_field(observation_space, self.key, path)

    def check(self, observation: Any, reward: float, info: Mapping[str, Any]) -> str | None:
        if self.source == "info":
            if self.key not in info:
                return None
            value = float(read_field(info, self.key, "info"))
        else:
            value = float(read_field(observation, self.key, "the observation"))
        name = (
            f"{self.source}[{self.key!r}]"
            if isinstance(self.key, str)
            else (f"{self.source}[{self.key}]")
        )
        if self.low is not None and value < self.low:
            return f"{name} < {self.low}"
        if self.high is not None and value > self.high:
            return f"{name} > {self.high}"
        return None


@dataclass
class NoRewardFor(Condition):
    """End the episode after ``steps`` consecutive steps with ``reward <= threshold``."""

    steps: int
    threshold: float = 0.0
    outcome: Outcome = "truncated"

    def __post_init__(self) -> None:
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 1:
            raise WrapperConfigError(
                f"steps must be a positive int, got {self.steps!r}", path="steps"
            )
        if not math.isfinite(self.threshold):
            raise WrapperConfigError(f"threshold must be finite, got {self.threshold}")
        self._dry = 0

    def reset(self) -> None:
        self._dry = 0

    def check(self, observation: Any, reward: float, info: Mapping[str, Any]) -> str | None:
        self._dry = 0 if reward > self.threshold else self._dry + 1
        if self._dry >= self.steps:
            return f"no reward above {self.threshold} for {self.steps} steps"
        return None


def _checked(
    conditions: Sequence[Condition], observation_space: spaces.Space[Any]
) -> list[Condition]:
    out = check_instances(
        conditions, Condition, "conditions", "FieldBound, NoRewardFor or a subclass"
    )
    for index, condition in enumerate(out):
        if condition.outcome not in ("terminated", "truncated"):
            raise WrapperConfigError(
                f"conditions[{index}].outcome must be 'terminated' or 'truncated', got "
                f"{condition.outcome!r}",
                path=f"conditions[{index}].outcome",
            )
        condition.check_space(observation_space, f"conditions[{index}]")
    if not out:
        raise WrapperConfigError("give at least one condition", path="conditions")
    return out


def _evaluate(
    conditions: Sequence[Condition], observation: Any, reward: float, info: Mapping[str, Any]
) -> tuple[bool, bool, str | None]:
    """Every condition sees the step (their counters run); the first that fires is named."""
    terminated = truncated = False
    reason: str | None = None
    for index, condition in enumerate(conditions):
        why = condition.check(observation, reward, info)
        if why is None:
            continue
        if condition.outcome == "terminated":
            terminated = True
        else:
            truncated = True
        reason = reason or f"conditions[{index}]: {why}"
    return terminated, truncated, reason


class TerminateWhen(gym.Wrapper[Any, Any, Any, Any]):
    """End a single env's episodes on conditions (see the module docstring).

    Raises:
        WrapperConfigError: A condition reads a field the observation space lacks.
    """

    def __init__(self, env: gym.Env[Any, Any], conditions: Sequence[Condition]) -> None:
        super().__init__(env)
        self.conditions = _checked(conditions, env.observation_space)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        for condition in self.conditions:
            condition.reset()
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        ends, cuts, reason = _evaluate(self.conditions, observation, float(reward), info)
        if reason is not None and not (terminated or truncated):
            info = {**info, TERMINATION_KEY: reason}
        return observation, reward, bool(terminated or ends), bool(truncated or cuts), info


class VectorTerminateWhen(VectorWrapper):
    """End sub-env episodes of a ``SAME_STEP`` or ``DISABLED`` vector env on conditions.

    Raises:
        WrapperConfigError: The env autoresets in the ``NEXT_STEP`` mode, or a condition
            reads a field the observation space lacks.
    """

    def __init__(self, env: VectorEnv, conditions: Sequence[Condition]) -> None:
        super().__init__(env)
        self.mode = autoreset_mode_of(env.metadata)
        if self.mode == AutoresetMode.NEXT_STEP:
            raise WrapperConfigError(
                "VectorTerminateWhen cannot end one sub-env of a NEXT_STEP vector env (its "
                "reset would step the others); make the vector env with "
                "autoreset_mode=AutoresetMode.SAME_STEP, or wrap each sub-env in TerminateWhen",
                path="autoreset_mode",
            )
        first = _checked(conditions, env.single_observation_space)
        self.conditions = [copy.deepcopy(first) for _ in range(env.num_envs)]
        self._episodes = EpisodeTracker(env.num_envs, self.mode)

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observations, info = self.env.reset(seed=seed, options=options)  # type: ignore[arg-type]
        for i in map(int, np.flatnonzero(self._episodes.reset(observations, options))):
            for condition in self.conditions[i]:
                condition.reset()
        return observations, info

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        observations, rewards, terminations, truncations, info = self.env.step(actions)
        view = self._episodes.step(observations, terminations, truncations, info)
        terminations = np.array(terminations, dtype=bool)
        truncations = np.array(truncations, dtype=bool)
        forced = np.zeros(self.num_envs, dtype=bool)
        reasons = np.full(self.num_envs, None, dtype=object)
        for i in map(int, np.flatnonzero(view.live)):
            if view.ended[i]:
                for condition in self.conditions[i]:
                    condition.reset()
                continue
            ends, cuts, reason = _evaluate(
                self.conditions[i], view.next_observation(i), float(rewards[i]), view.info(i)
            )
            if reason is None:
                continue
            terminations[i] |= ends
            truncations[i] |= cuts
            forced[i] = True
            reasons[i] = reason
            for condition in self.conditions[i]:
                condition.reset()
        if not forced.any():
            return observations, rewards, terminations, truncations, info
        info = {**info, TERMINATION_KEY: reasons, f"_{TERMINATION_KEY}": forced}
        if self.mode == AutoresetMode.SAME_STEP:
            observations, info = self._reset_forced(observations, info, forced)
        else:
            self._episodes.end(forced)
        return observations, rewards, terminations, truncations, info

    def _reset_forced(
        self, observations: Any, info: dict[str, Any], forced: np.ndarray
    ) -> tuple[Any, dict[str, Any]]:
        """SAME_STEP: reset the sub-envs this wrapper ended; their final obs go to info."""
        final_obs = np.array(info.get("final_obs", np.full(self.num_envs, None)), dtype=object)
        mask = np.array(info.get("_final_obs", np.zeros(self.num_envs, bool)), dtype=bool)
        for i in map(int, np.flatnonzero(forced)):
            final_obs[i] = index_observation(observations, i)
        # final_info is a vector info dict (arrays + masks), as Gymnasium writes it.
        final_info = dict(info.get("final_info", {}))
        final_info[TERMINATION_KEY] = info[TERMINATION_KEY]
        final_info[f"_{TERMINATION_KEY}"] = forced
        fresh, _ = self.env.reset(options={"reset_mask": forced})
        self._episodes.reset(fresh, {"reset_mask": forced})
        observations = _merge(observations, fresh, forced)
        info = {
            **info,
            "final_obs": final_obs,
            "_final_obs": mask | forced,
            "final_info": final_info,
            "_final_info": mask | forced,
        }
        return observations, info


def _merge(old: Any, new: Any, mask: np.ndarray) -> Any:
    if isinstance(old, Mapping):
        return {key: _merge(old[key], new[key], mask) for key in old}
    if isinstance(old, tuple):
        return tuple(_merge(a, b, mask) for a, b in zip(old, new, strict=True))
    out = np.array(old, copy=True)
    out[mask] = np.asarray(new)[mask]
    return out


# ---------------------------------------------------------------- config of the conditions


class FieldBoundOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: Literal["observation", "info"] = "observation"
    key: FieldKey
    low: Number | None = None
    high: Number | None = None
    outcome: Literal["terminated", "truncated"] = "truncated"


class NoRewardOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    steps: PositiveInt
    threshold: Number = 0.0
    outcome: Literal["terminated", "truncated"] = "truncated"


class ConditionConfig(BaseModel):
    """``{field_bound: {...}}`` or ``{no_reward_for: {...}}``."""

    model_config = ConfigDict(extra="forbid")
    field_bound: FieldBoundOptions | None = None
    no_reward_for: NoRewardOptions | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> ConditionConfig:
        if (self.field_bound is None) == (self.no_reward_for is None):
            raise ValueError("a condition is a mapping with one key: field_bound or no_reward_for")
        return self

    def build(self) -> Condition:
        if self.field_bound is not None:
            return FieldBound(**self.field_bound.model_dump())
        assert self.no_reward_for is not None  # _exactly_one
        return NoRewardFor(**self.no_reward_for.model_dump())
