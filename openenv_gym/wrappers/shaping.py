"""Reward shaping from composable terms, for single envs and Gymnasium vector envs.

A :class:`RewardShaper` is an ordered list of terms, each mapping the running reward to a
new one: :class:`Scale`, :class:`Clip`, :class:`Offset`, :class:`PotentialShaping`
(``F = gamma * Phi(s') - Phi(s)``, with ``Phi(terminal) = 0``) and :class:`FieldBonus`
(``weight * value`` of an observation or info field). :class:`ShapeReward` applies it to a
``gymnasium.Env``, :class:`VectorShapeReward` to a ``gymnasium.vector.VectorEnv``. Both keep
the env's own reward in ``info["raw_reward"]``.

Episode statistics: put Gymnasium's ``RecordEpisodeStatistics`` (or SB3's ``Monitor``)
*inside* the shaping wrapper to report the true return, outside it to report the shaped one.

Potential-based shaping (Ng, Harada & Russell, 1999) leaves the optimal policy unchanged
when the potential of terminal states is zero: on a ``terminated`` step this module uses
``Phi(s') = 0``. A ``truncated`` step is a cut, not a terminal state, so ``Phi(s')`` is kept.

The config form (a dict, or a YAML / JSON file) makes experiments reproducible::

    terms:
      - scale: 0.1
      - clip: [-1.0, 1.0]
      - offset: 0.01
      - potential: {field: 0, weight: -1.0, gamma: 0.99}   # or {function: "pkg.mod:phi"}
      - bonus: {source: info, key: lives, weight: 0.5, default: 0.0}

Example:
    >>> import gymnasium as gym
    >>> env = ShapeReward.from_config(gym.make("CartPole-v1"), {"terms": [{"scale": 0.5}]})
    >>> _ = env.reset(seed=0)
    >>> _, reward, _, _, info = env.step(0)
    >>> reward, info["raw_reward"]
    (0.5, 1.0)
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv, VectorWrapper
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictStr,
    model_validator,
)

from openenv_gym.config_files import load_config, validate
from openenv_gym.errors import WrapperConfigError
from openenv_gym.wrappers.episodes import EpisodeTracker
from openenv_gym.wrappers.fields import check_instances, check_scalar_field, read_field

RAW_REWARD_KEY: Final = "raw_reward"

Potential = Callable[[Any], float]


@dataclass(frozen=True)
class Transition:
    """One step as a shaping term sees it (a single env's view, also in vector envs)."""

    observation: Any
    next_observation: Any
    terminated: bool
    truncated: bool
    info: Mapping[str, Any]


class RewardTerm(ABC):
    """One shaping step: ``new_reward = term(reward, transition)``."""

    @abstractmethod
    def __call__(self, reward: float, transition: Transition) -> float:
        """The reward after this term."""

    def check_space(self, observation_space: spaces.Space[Any], path: str) -> None:  # noqa: B027
        """Raise :class:`WrapperConfigError` if this term cannot read ``observation_space``."""


@dataclass(frozen=True)
class Scale(RewardTerm):
    """``reward * factor``."""

    factor: float

    def __call__(self, reward: float, transition: Transition) -> float:
        return reward * self.factor


@dataclass(frozen=True)
class Offset(RewardTerm):
    """``reward + value`` (e.g. a living bonus or step cost)."""

    value: float

    def __call__(self, reward: float, transition: Transition) -> float:
        return reward + self.value


@dataclass(frozen=True)
class Clip(RewardTerm):
    """``clip(reward, low, high)``."""

    low: float
    high: float

    def __post_init__(self) -> None:
        if not self.low <= self.high:
            raise WrapperConfigError(
                f"clip needs low <= high, got low={self.low}, high={self.high}"
            )

    def __call__(self, reward: float, transition: Transition) -> float:
        return min(max(reward, self.low), self.high)


@dataclass(frozen=True)
class PotentialShaping(RewardTerm):
    """``reward + gamma * Phi(s') - Phi(s)``, with ``Phi(s') = 0`` when ``s'`` is terminal.

    Attributes:
        potential: ``Phi``, a function of one (single-env) observation.
        gamma: The discount of the learner (use the same one for the invariance to hold).
    """

    potential: Potential
    gamma: float = 0.99

    def __post_init__(self) -> None:
        if not 0.0 <= self.gamma <= 1.0:
            raise WrapperConfigError(f"potential gamma must be in [0, 1], got {self.gamma}")

    def __call__(self, reward: float, transition: Transition) -> float:
        before = float(self.potential(transition.observation))
        after = 0.0 if transition.terminated else float(self.potential(transition.next_observation))
        return reward + self.gamma * after - before


@dataclass(frozen=True)
class FieldPotential:
    """``Phi(s) = weight * s[key]`` for a scalar observation field or flat index."""

    key: str | int
    weight: float = 1.0

    def __call__(self, observation: Any) -> float:
        return self.weight * float(read_field(observation, self.key, "the observation"))


@dataclass(frozen=True)
class FieldBonus(RewardTerm):
    """``reward + weight * value`` of an observation field or an info key.

    Attributes:
        source: ``"observation"`` (of ``s'``) or ``"info"``.
        key: A field name (Dict observations, info) or a flat index (Box observations).
        weight: The multiplier.
        default: Used when the info key is missing on a step; ``None`` raises ``KeyError``.
    """

    source: Literal["observation", "info"]
    key: str | int
    weight: float = 1.0
    default: float | None = 0.0

    def __call__(self, reward: float, transition: Transition) -> float:
        if self.source == "info":
            if self.key not in transition.info:
                if self.default is None:
                    raise KeyError(
                        f"info has no key {self.key!r} on this step (keys: "
                        f"{sorted(map(str, transition.info))}); set a default in the bonus"
                    )
                return reward + self.weight * self.default
            value = transition.info[self.key]  # type: ignore[index]
        else:
            value = read_field(transition.next_observation, self.key, "the observation")
        return reward + self.weight * float(value)

    def check_space(self, observation_space: spaces.Space[Any], path: str) -> None:
        if self.source == "observation":
            check_scalar_field(observation_space, self.key, path)


class RewardShaper:
    """An ordered list of :class:`RewardTerm` applied one after another.

    Example:
        >>> shaper = RewardShaper([Scale(2.0), Clip(-1.0, 1.0)])
        >>> shaper(3.0, Transition(None, None, False, False, {}))
        1.0
    """

    def __init__(self, terms: Sequence[RewardTerm]) -> None:
        expected = "Scale, Clip, Offset, PotentialShaping, FieldBonus, or a subclass"
        self.terms = tuple(check_instances(terms, RewardTerm, "terms", expected))

    def __call__(self, reward: float, transition: Transition) -> float:
        for term in self.terms:
            reward = term(reward, transition)
        return float(reward)

    def check_space(self, observation_space: spaces.Space[Any]) -> None:
        """Check every term can read this observation space (raises WrapperConfigError)."""
        for index, term in enumerate(self.terms):
            term.check_space(observation_space, f"terms[{index}]")

    def __repr__(self) -> str:
        return f"RewardShaper({list(self.terms)!r})"

    # ------------------------------------------------------------------ config

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | str | Path) -> RewardShaper:
        """Build from a dict, or from a ``.yaml``/``.yml``/``.json`` file.

        Raises:
            WrapperConfigError: The file is missing or unreadable, or the config is invalid;
                the message and ``path`` attribute name the offending entry.
        """
        data = load_config(config) if isinstance(config, str | Path) else config
        return validate(ShapingConfig, data).build()


def import_callable(spec: str, path: str = "") -> Callable[..., Any]:
    """``"package.module:name"`` -> the object it names (must be callable).

    Raises:
        WrapperConfigError: Malformed, not importable, or not callable (``path`` names it).
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise WrapperConfigError(
            f"{path or 'function'} must look like 'package.module:function', got {spec!r}",
            path=path,
        )
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise WrapperConfigError(f"{path}: cannot import {spec!r}: {exc}", path=path) from exc
    if not callable(target):
        raise WrapperConfigError(f"{path}: {spec!r} is not callable", path=path)
    return target


# --------------------------------------------------------------------------- config models

_Strict = ConfigDict(extra="forbid")
Number = Annotated[float, Field(allow_inf_nan=False), BeforeValidator(lambda v: _not_bool(v))]
FieldKey = Annotated[str | int, PlainValidator(lambda v: _field_key(v))]


def _field_key(value: Any) -> str | int:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError("expected a field name (str) or a flat index (int)")
    return value


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("expected a number, not a boolean")
    return value


class ClipBounds(BaseModel):
    """``clip: {low: .., high: ..}`` (``clip: [low, high]`` works too)."""

    model_config = _Strict
    low: Number
    high: Number

    @model_validator(mode="before")
    @classmethod
    def _from_pair(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            if len(value) != 2:
                raise ValueError(f"expected [low, high], got {len(value)} value(s)")
            return {"low": value[0], "high": value[1]}
        return value

    @model_validator(mode="after")
    def _ordered(self) -> ClipBounds:
        if not self.low <= self.high:
            raise ValueError(f"clip needs low <= high, got low={self.low}, high={self.high}")
        return self


class PotentialOptions(BaseModel):
    """``potential: {field: 0, weight: -1.0, gamma: 0.99}`` or ``{function: "pkg.mod:phi"}``."""

    model_config = _Strict
    function: StrictStr | None = None
    field: FieldKey | None = None
    weight: Number | None = None
    gamma: Annotated[Number, Field(ge=0.0, le=1.0)] = 0.99

    @model_validator(mode="after")
    def _one_source(self) -> PotentialOptions:
        if (self.function is None) == (self.field is None):
            raise ValueError("needs exactly one of 'function' (package.module:callable) or 'field'")
        if self.function is not None and self.weight is not None:
            raise ValueError("'weight' only goes with 'field'")
        return self


class BonusOptions(BaseModel):
    """``bonus: {source: info, key: lives, weight: 0.5, default: 0.0}``."""

    model_config = _Strict
    source: Literal["observation", "info"]
    key: FieldKey
    weight: Number = 1.0
    default: Number | None = 0.0


class TermConfig(BaseModel):
    """One shaping term: a mapping with exactly one of the keys below."""

    model_config = _Strict
    scale: Number | None = None
    clip: ClipBounds | None = None
    offset: Number | None = None
    potential: PotentialOptions | None = None
    bonus: BonusOptions | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> TermConfig:
        given = [name for name in type(self).model_fields if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(
                "a term is a mapping with exactly one of 'scale', 'clip', 'offset', "
                f"'potential', 'bonus'; got {given or 'none'}"
            )
        return self

    def build(self, path: str) -> RewardTerm:
        """The :class:`RewardTerm` this entry declares."""
        if self.scale is not None:
            return Scale(self.scale)
        if self.offset is not None:
            return Offset(self.offset)
        if self.clip is not None:
            return Clip(self.clip.low, self.clip.high)
        if self.bonus is not None:
            bonus = self.bonus
            return FieldBonus(bonus.source, bonus.key, bonus.weight, bonus.default)
        options = self.potential
        assert options is not None  # _exactly_one
        potential: Potential
        if options.function is not None:
            potential = import_callable(options.function, f"{path}.potential.function")
        else:
            assert options.field is not None  # _one_source
            potential = FieldPotential(
                options.field, 1.0 if options.weight is None else options.weight
            )
        return PotentialShaping(potential, options.gamma)


class ShapingConfig(BaseModel):
    """A reward-shaping config: ``{terms: [...]}`` (see the module docstring)."""

    model_config = _Strict
    terms: Annotated[list[TermConfig], Field(min_length=1)]

    def build(self) -> RewardShaper:
        """The :class:`RewardShaper` of these terms."""
        return RewardShaper([term.build(f"terms[{i}]") for i, term in enumerate(self.terms)])


def _shaper(terms: RewardShaper | Sequence[RewardTerm]) -> RewardShaper:
    return terms if isinstance(terms, RewardShaper) else RewardShaper(terms)


class ShapeReward(gym.Wrapper[Any, Any, Any, Any]):
    """Shape a single env's reward; the env's own reward goes to ``info["raw_reward"]``.

    Args:
        env: The env.
        terms: A :class:`RewardShaper` or a list of terms.

    Raises:
        WrapperConfigError: A term reads a field the observation space does not have.
    """

    def __init__(self, env: gym.Env[Any, Any], terms: RewardShaper | Sequence[RewardTerm]) -> None:
        super().__init__(env)
        self.shaper = _shaper(terms)
        self.shaper.check_space(env.observation_space)
        self._episodes = EpisodeTracker(1, None)

    @classmethod
    def from_config(
        cls, env: gym.Env[Any, Any], config: Mapping[str, Any] | str | Path
    ) -> ShapeReward:
        """Wrap ``env`` with the terms of a config dict or YAML/JSON file."""
        return cls(env, RewardShaper.from_config(config))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        self._episodes.reset(observation)
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if not self._episodes.is_ready():
            raise gym.error.ResetNeeded("call reset() before step() on a ShapeReward env")
        observation, reward, terminated, truncated, info = self.env.step(action)
        view = self._episodes.step(observation, terminated, truncated, info)
        transition = Transition(
            view.observations[0], observation, bool(terminated), bool(truncated), info
        )
        shaped = self.shaper(float(reward), transition)
        info = dict(info)
        info[RAW_REWARD_KEY] = float(reward)
        return observation, shaped, terminated, truncated, info


class VectorShapeReward(VectorWrapper):
    """Shape each sub-env's reward of a Gymnasium ``VectorEnv``.

    Handles the ``NEXT_STEP`` autoreset mode (the step after an episode end is a reset:
    its reward is passed through unshaped), ``SAME_STEP`` (the final observation is read
    from ``info["final_obs"]``) and ``DISABLED``. ``info["raw_reward"]`` holds the env
    rewards (all set in ``info["_raw_reward"]``).

    Raises:
        WrapperConfigError: A term reads a missing field, or the autoreset mode is unknown.
    """

    def __init__(self, env: VectorEnv, terms: RewardShaper | Sequence[RewardTerm]) -> None:
        super().__init__(env)
        self.shaper = _shaper(terms)
        self.shaper.check_space(env.single_observation_space)
        self._episodes = EpisodeTracker.for_vector_env(env.metadata, env.num_envs)

    @classmethod
    def from_config(
        cls, env: VectorEnv, config: Mapping[str, Any] | str | Path
    ) -> VectorShapeReward:
        """Wrap ``env`` with the terms of a config dict or YAML/JSON file."""
        return cls(env, RewardShaper.from_config(config))

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observations, info = self.env.reset(seed=seed, options=options)  # type: ignore[arg-type]
        self._episodes.reset(observations, options)
        return observations, info

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        observations, rewards, terminations, truncations, info = self.env.step(actions)
        view = self._episodes.step(observations, terminations, truncations, info)
        raw = np.asarray(rewards, dtype=np.float64)
        shaped = raw.copy()
        for i in map(int, np.flatnonzero(view.live)):
            transition = Transition(
                view.observations[i],
                view.next_observation(i),
                bool(terminations[i]),
                bool(truncations[i]),
                view.info(i),
            )
            shaped[i] = self.shaper(float(raw[i]), transition)
        info = dict(info)
        info[RAW_REWARD_KEY] = raw
        info[f"_{RAW_REWARD_KEY}"] = np.ones(self.num_envs, dtype=bool)
        return (
            observations,
            shaped.astype(np.asarray(rewards).dtype),
            terminations,
            truncations,
            info,
        )
