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
import json
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper

from openenv_gym.errors import WrapperConfigError
from openenv_gym.extras import optional_imports

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


def _read_field(value: Any, key: str | int, where: str) -> Any:
    if isinstance(key, str):
        if not isinstance(value, Mapping) or key not in value:
            raise KeyError(f"{where} has no field {key!r}")
        return value[key]
    return np.asarray(value).reshape(-1)[key]


def _check_field(space: spaces.Space[Any], key: str | int, path: str) -> None:
    if isinstance(key, str):
        if not isinstance(space, spaces.Dict) or key not in space.spaces:
            names = list(space.spaces) if isinstance(space, spaces.Dict) else []
            raise WrapperConfigError(
                f"{path}: observation field {key!r} does not exist; expected one of {names} "
                f"(the observation space is {space})",
                path=path,
            )
        sub = space.spaces[key]
        if not isinstance(sub, spaces.Discrete | spaces.Box) or (
            isinstance(sub, spaces.Box) and sub.shape not in ((), (1,))
        ):
            raise WrapperConfigError(
                f"{path}: observation field {key!r} is {sub}, expected a scalar "
                "(Discrete, or a Box of shape () or (1,))",
                path=path,
            )
        return
    if not isinstance(space, spaces.Box | spaces.Discrete):
        raise WrapperConfigError(
            f"{path}: an integer index needs a Box or Discrete observation space, got {space}; "
            "use a field name for Dict observations",
            path=path,
        )
    size = int(np.prod(space.shape)) if isinstance(space, spaces.Box) else 1
    if not -size <= key < size:
        raise WrapperConfigError(
            f"{path}: index {key} is out of range for an observation of {size} value(s)",
            path=path,
        )


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
        return self.weight * float(_read_field(observation, self.key, "the observation"))


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
            value = _read_field(transition.next_observation, self.key, "the observation")
        return reward + self.weight * float(value)

    def check_space(self, observation_space: spaces.Space[Any], path: str) -> None:
        if self.source == "observation":
            _check_field(observation_space, self.key, path)


class RewardShaper:
    """An ordered list of :class:`RewardTerm` applied one after another.

    Example:
        >>> shaper = RewardShaper([Scale(2.0), Clip(-1.0, 1.0)])
        >>> shaper(3.0, Transition(None, None, False, False, {}))
        1.0
    """

    def __init__(self, terms: Sequence[RewardTerm]) -> None:
        for index, term in enumerate(terms):
            if not isinstance(term, RewardTerm):
                raise WrapperConfigError(
                    f"terms[{index}] is {term!r}, expected a RewardTerm "
                    "(Scale, Clip, Offset, PotentialShaping, FieldBonus, or a subclass)",
                    path=f"terms[{index}]",
                )
        self.terms = tuple(terms)

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
        if not isinstance(data, Mapping):
            raise WrapperConfigError(
                f"a shaping config must be a mapping with a 'terms' list, got {type(data).__name__}"
            )
        unknown = set(data) - {"terms"}
        if unknown:
            raise WrapperConfigError(
                f"unknown top-level key(s) {sorted(unknown)} in the shaping config; "
                "expected only 'terms'",
                path=str(sorted(unknown)[0]),
            )
        terms = data.get("terms")
        if not isinstance(terms, list) or not terms:
            raise WrapperConfigError(
                f"'terms' must be a non-empty list of terms, got {terms!r}", path="terms"
            )
        return cls([_term_from_config(entry, f"terms[{i}]") for i, entry in enumerate(terms)])


def load_config(path: str | Path) -> Any:
    """Read a YAML or JSON config file (YAML needs ``pyyaml``: the ``[yaml]`` extra)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise WrapperConfigError(f"cannot read the config file {str(path)!r}: {exc}") from exc
    suffix = path.suffix.lower()
    if suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise WrapperConfigError(f"{str(path)!r} is not valid JSON: {exc}") from exc
    if suffix in (".yaml", ".yml"):
        with optional_imports(f"reading {str(path)!r}"):
            import yaml
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise WrapperConfigError(f"{str(path)!r} is not valid YAML: {exc}") from exc
    raise WrapperConfigError(
        f"unknown config file type {suffix!r} for {str(path)!r}; expected .yaml, .yml or .json"
    )


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise WrapperConfigError(f"{path} must be a finite number, got {value!r}", path=path)
    return float(value)


def _key(value: Any, path: str) -> str | int:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise WrapperConfigError(
            f"{path} must be a field name (str) or a flat index (int), got {value!r}", path=path
        )
    return value


def _options(value: Any, path: str, allowed: set[str], required: set[str]) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise WrapperConfigError(f"{path} must be a mapping, got {value!r}", path=path)
    unknown = set(value) - allowed
    if unknown:
        raise WrapperConfigError(
            f"{path} has unknown key(s) {sorted(unknown)}; expected some of {sorted(allowed)}",
            path=path,
        )
    missing = required - set(value)
    if missing:
        raise WrapperConfigError(f"{path} needs the key(s) {sorted(missing)}", path=path)
    return dict(value)


def import_callable(spec: str, path: str = "") -> Callable[..., Any]:
    """``"package.module:name"`` -> the object it names (must be callable)."""
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


def _term_from_config(entry: Any, path: str) -> RewardTerm:
    if not isinstance(entry, Mapping) or len(entry) != 1:
        raise WrapperConfigError(
            f"{path} must be a mapping with exactly one of 'scale', 'clip', 'offset', "
            f"'potential', 'bonus', got {entry!r}",
            path=path,
        )
    ((kind, value),) = entry.items()
    sub = f"{path}.{kind}"
    if kind == "scale":
        return Scale(_number(value, sub))
    if kind == "offset":
        return Offset(_number(value, sub))
    if kind == "clip":
        if isinstance(value, Mapping):
            value = _options(value, sub, {"low", "high"}, {"low", "high"})
            value = [value["low"], value["high"]]
        if not isinstance(value, list | tuple) or len(value) != 2:
            raise WrapperConfigError(
                f"{sub} must be [low, high] or {{low: .., high: ..}}, got {value!r}", path=sub
            )
        low, high = _number(value[0], f"{sub}[0]"), _number(value[1], f"{sub}[1]")
        try:
            return Clip(low, high)
        except WrapperConfigError as exc:
            raise WrapperConfigError(f"{sub}: {exc}", path=sub) from None
    if kind == "potential":
        opts = _options(value, sub, {"function", "field", "weight", "gamma"}, set())
        gamma = _number(opts.get("gamma", 0.99), f"{sub}.gamma")
        if not 0.0 <= gamma <= 1.0:
            raise WrapperConfigError(f"{sub}.gamma must be in [0, 1], got {gamma}", path=sub)
        if ("function" in opts) == ("field" in opts):
            raise WrapperConfigError(
                f"{sub} needs exactly one of 'function' (package.module:callable) or 'field'",
                path=sub,
            )
        potential: Potential
        if "function" in opts:
            if not isinstance(opts["function"], str):
                raise WrapperConfigError(f"{sub}.function must be a string", path=sub)
            potential = import_callable(opts["function"], f"{sub}.function")
            if "weight" in opts:
                raise WrapperConfigError(f"{sub}.weight only goes with 'field'", path=sub)
        else:
            potential = FieldPotential(
                _key(opts["field"], f"{sub}.field"),
                _number(opts.get("weight", 1.0), f"{sub}.weight"),
            )
        return PotentialShaping(potential, gamma)
    if kind == "bonus":
        opts = _options(value, sub, {"source", "key", "weight", "default"}, {"source", "key"})
        source = opts["source"]
        if source not in ("observation", "info"):
            raise WrapperConfigError(
                f"{sub}.source must be 'observation' or 'info', got {source!r}", path=sub
            )
        default = opts.get("default", 0.0)
        return FieldBonus(
            source,
            _key(opts["key"], f"{sub}.key"),
            _number(opts.get("weight", 1.0), f"{sub}.weight"),
            None if default is None else _number(default, f"{sub}.default"),
        )
    raise WrapperConfigError(
        f"{path}: unknown term {kind!r}; expected one of 'scale', 'clip', 'offset', "
        "'potential', 'bonus'",
        path=path,
    )


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
        self._last_observation: Any = None

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
        self._last_observation = observation
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self._last_observation is None:
            raise gym.error.ResetNeeded("call reset() before step() on a ShapeReward env")
        observation, reward, terminated, truncated, info = self.env.step(action)
        transition = Transition(
            self._last_observation, observation, bool(terminated), bool(truncated), info
        )
        shaped = self.shaper(float(reward), transition)
        self._last_observation = observation
        info = dict(info)
        info[RAW_REWARD_KEY] = float(reward)
        return observation, shaped, terminated, truncated, info


def _index(observation: Any, i: int) -> Any:
    if isinstance(observation, Mapping):
        return {key: _index(value, i) for key, value in observation.items()}
    if isinstance(observation, tuple):
        return tuple(_index(value, i) for value in observation)
    return observation[i]


def _info_at(info: Mapping[str, Any], i: int) -> dict[str, Any]:
    """Env ``i``'s entries of a vector info dict (keys whose ``_key`` mask is set)."""
    out: dict[str, Any] = {}
    for key, value in info.items():
        if key.startswith("_"):
            continue
        mask = info.get(f"_{key}")
        if mask is not None and not bool(mask[i]):
            continue
        if isinstance(value, Mapping):
            out[key] = _info_at(value, i)
        elif mask is not None and isinstance(value, np.ndarray) and len(value) == len(mask):
            out[key] = value[i]
        else:
            out[key] = value
    return out


class VectorShapeReward(VectorWrapper):
    """Shape each sub-env's reward of a Gymnasium ``VectorEnv``.

    Handles the ``NEXT_STEP`` autoreset mode (the step after an episode end is a reset:
    its reward is passed through unshaped) and ``SAME_STEP`` (the final observation is read
    from ``info["final_obs"]``). ``info["raw_reward"]`` holds the env rewards (all set in
    ``info["_raw_reward"]``).

    Raises:
        WrapperConfigError: A term reads a missing field, or the autoreset mode is unknown.
    """

    def __init__(self, env: VectorEnv, terms: RewardShaper | Sequence[RewardTerm]) -> None:
        super().__init__(env)
        self.shaper = _shaper(terms)
        self.shaper.check_space(env.single_observation_space)
        self._mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        if self._mode not in (
            AutoresetMode.NEXT_STEP,
            AutoresetMode.SAME_STEP,
            AutoresetMode.DISABLED,
        ):
            raise WrapperConfigError(f"unknown autoreset mode {self._mode!r}")
        self._last: list[Any] = [None] * env.num_envs
        self._autoreset = np.zeros(env.num_envs, dtype=bool)

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
        mask = (options or {}).get("reset_mask")
        for i in range(self.num_envs):
            if mask is None or bool(mask[i]):
                self._last[i] = _index(observations, i)
                self._autoreset[i] = False
        return observations, info

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        observations, rewards, terminations, truncations, info = self.env.step(actions)
        raw = np.asarray(rewards, dtype=np.float64)
        shaped = raw.copy()
        for i in range(self.num_envs):
            next_obs = _index(observations, i)
            if self._autoreset[i] or self._last[i] is None:
                # NEXT_STEP autoreset: this "step" was a reset; nothing to shape.
                self._last[i] = next_obs
                continue
            done = bool(terminations[i]) or bool(truncations[i])
            final_obs = next_obs
            if done and self._mode == AutoresetMode.SAME_STEP:
                final_obs = info["final_obs"][i]
            env_info = _info_at(info, i)
            transition = Transition(
                self._last[i], final_obs, bool(terminations[i]), bool(truncations[i]), env_info
            )
            shaped[i] = self.shaper(float(raw[i]), transition)
            self._last[i] = next_obs
        ends = np.logical_or(terminations, truncations)
        if self._mode == AutoresetMode.NEXT_STEP:
            self._autoreset = ends
        elif self._mode == AutoresetMode.DISABLED:
            for index in np.flatnonzero(ends):
                self._last[int(index)] = None
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
