"""Exploration noise on actions, for single envs and Gymnasium vector envs.

Three processes, as in SB3 / DDPG / DQN practice:

* :class:`GaussianNoise`: ``a + N(mean, sigma)`` for ``Box`` actions;
* :class:`OrnsteinUhlenbeckNoise`: temporally correlated noise for ``Box`` actions,
  ``x += theta * (mean - x) * dt + sigma * sqrt(dt) * N(0, 1)``, reset to ``x0`` at every
  episode start;
* :class:`EpsilonRandom`: with probability ``epsilon`` a uniformly random action, for
  ``Discrete`` and ``MultiDiscrete`` actions.

:class:`ActionNoise` (single env) and :class:`VectorActionNoise` (one process per sub-env)
apply them. Noisy ``Box`` actions are clipped to the space's bounds (``clip=True``). The
action the policy chose goes to ``info["noise_free_action"]``; the env receives the noisy one,
which also goes to ``info["executed_action"]``.
The random stream is seeded by ``reset(seed=...)`` (a stream independent of the env's own),
so a seeded run is reproducible; without a seed it comes from the OS.

:class:`~openenv_gym.wrappers.RecordTrajectories` records the executed action as ``action``
wherever it sits; outside the noise wrapper it also records the policy's as ``policy_action``.

Example:
    >>> import gymnasium as gym
    >>> env = ActionNoise(gym.make("Pendulum-v1"), GaussianNoise(sigma=0.1))
    >>> _ = env.reset(seed=0)
    >>> _, _, _, _, info = env.step(np.array([0.5], dtype=np.float32))
    >>> info["noise_free_action"]
    array([0.5], dtype=float32)
    >>> bool(np.all(np.abs(info["executed_action"] - 0.5) < 1))
    True
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv, VectorWrapper

from openenv_gym.errors import WrapperConfigError
from openenv_gym.wrappers.episodes import EpisodeTracker, index_observation

__all__ = [
    "EXECUTED_ACTION_KEY",
    "NOISE_FREE_ACTION_KEY",
    "ActionNoise",
    "EpsilonRandom",
    "GaussianNoise",
    "NoiseProcess",
    "OrnsteinUhlenbeckNoise",
    "VectorActionNoise",
]

NOISE_FREE_ACTION_KEY: Final = "noise_free_action"
#: The info key of the action the env received (after the noise).
EXECUTED_ACTION_KEY: Final = "executed_action"
#: Mixed into the reset seed so the noise stream differs from the env's own.
_NOISE_STREAM: Final = 0x6E6F697365


def _seeded(seed: int | None, index: int = 0) -> np.random.Generator:
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng([_NOISE_STREAM, int(seed), index])


def _scale(value: float | Sequence[float], name: str) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise WrapperConfigError(f"{name} must be finite, got {value!r}", path=name)
    return array


class NoiseProcess(ABC):
    """One sub-env's noise: ``reset`` at each episode start, ``apply`` at each step."""

    @abstractmethod
    def check_space(self, space: spaces.Space[Any]) -> None:
        """Raise :class:`WrapperConfigError` if this noise cannot act on ``space``."""

    def reset(self) -> None:  # noqa: B027 - stateless processes need nothing
        """Start of an episode."""

    @abstractmethod
    def apply(self, action: Any, space: spaces.Space[Any], rng: np.random.Generator) -> Any:
        """The noisy action (an element of ``space``)."""


def _check_box(noise: NoiseProcess, space: spaces.Space[Any], sigma: np.ndarray) -> None:
    if not isinstance(space, spaces.Box):
        raise WrapperConfigError(
            f"{type(noise).__name__} needs a Box action space, got {space}; use "
            "EpsilonRandom for Discrete actions"
        )
    try:
        np.broadcast_to(sigma, space.shape)
    except ValueError:
        raise WrapperConfigError(
            f"{type(noise).__name__}.sigma has shape {sigma.shape}, which does not fit the "
            f"action shape {space.shape}; give one number or one per action dimension"
        ) from None


def _add(action: Any, noise: np.ndarray, space: spaces.Box, clip: bool) -> np.ndarray:
    noisy = np.asarray(action, dtype=np.float64) + noise
    if clip:
        noisy = np.clip(noisy, space.low, space.high)
    return noisy.astype(space.dtype)


@dataclass
class GaussianNoise(NoiseProcess):
    """``a + N(mean, sigma)`` (per dimension when given lists), clipped to the bounds."""

    sigma: float | Sequence[float]
    mean: float | Sequence[float] = 0.0
    clip: bool = True

    def __post_init__(self) -> None:
        self._sigma = _scale(self.sigma, "sigma")
        self._mean = _scale(self.mean, "mean")
        if np.any(self._sigma < 0):
            raise WrapperConfigError(f"sigma must be >= 0, got {self.sigma!r}", path="sigma")

    def check_space(self, space: spaces.Space[Any]) -> None:
        _check_box(self, space, self._sigma)

    def apply(self, action: Any, space: spaces.Space[Any], rng: np.random.Generator) -> Any:
        box = cast(spaces.Box, space)  # check_space ran
        noise = self._mean + self._sigma * rng.standard_normal(box.shape)
        return _add(action, noise, box, self.clip)


@dataclass
class OrnsteinUhlenbeckNoise(NoiseProcess):
    """Ornstein-Uhlenbeck noise (DDPG): mean-reverting, correlated in time."""

    sigma: float | Sequence[float]
    theta: float = 0.15
    dt: float = 1e-2
    mean: float | Sequence[float] = 0.0
    x0: float | Sequence[float] = 0.0
    clip: bool = True
    _state: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._sigma = _scale(self.sigma, "sigma")
        self._mean = _scale(self.mean, "mean")
        if np.any(self._sigma < 0):
            raise WrapperConfigError(f"sigma must be >= 0, got {self.sigma!r}", path="sigma")
        if not (self.theta > 0 and self.dt > 0):
            raise WrapperConfigError(
                f"theta and dt must be > 0, got theta={self.theta}, dt={self.dt}", path="theta"
            )
        self.reset()

    def check_space(self, space: spaces.Space[Any]) -> None:
        _check_box(self, space, self._sigma)

    def reset(self) -> None:
        self._state = np.asarray(self.x0, dtype=np.float64)

    def apply(self, action: Any, space: spaces.Space[Any], rng: np.random.Generator) -> Any:
        box = cast(spaces.Box, space)  # check_space ran
        drift = self.theta * (self._mean - self._state) * self.dt
        shock = self._sigma * math.sqrt(self.dt) * rng.standard_normal(box.shape)
        self._state = self._state + drift + shock
        return _add(action, self._state, box, self.clip)


@dataclass
class EpsilonRandom(NoiseProcess):
    """With probability ``epsilon`` a uniformly random action instead of the policy's."""

    epsilon: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.epsilon <= 1.0:
            raise WrapperConfigError(
                f"epsilon must be in [0, 1], got {self.epsilon!r}", path="epsilon"
            )

    def check_space(self, space: spaces.Space[Any]) -> None:
        if not isinstance(space, spaces.Discrete | spaces.MultiDiscrete):
            raise WrapperConfigError(
                f"EpsilonRandom needs a Discrete or MultiDiscrete action space, got {space}; "
                "use GaussianNoise or OrnsteinUhlenbeckNoise for Box actions"
            )

    def apply(self, action: Any, space: spaces.Space[Any], rng: np.random.Generator) -> Any:
        if rng.random() >= self.epsilon:
            return action
        if isinstance(space, spaces.Discrete):
            return np.int64(int(space.start) + int(rng.integers(int(space.n))))
        multi = cast(spaces.MultiDiscrete, space)  # check_space ran
        return (multi.start + rng.integers(multi.nvec)).astype(multi.dtype)


class ActionNoise(gym.ActionWrapper[Any, Any, Any]):
    """Add exploration noise to a single env's actions (see the module docstring).

    Raises:
        WrapperConfigError: The noise does not fit the action space.
    """

    def __init__(self, env: gym.Env[Any, Any], noise: NoiseProcess) -> None:
        super().__init__(env)
        noise.check_space(env.action_space)
        self.noise = noise
        self._rng = _seeded(None)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        if seed is not None:
            self._rng = _seeded(seed)
        self.noise.reset()
        return self.env.reset(seed=seed, options=options)

    def action(self, action: Any) -> Any:
        return self.noise.apply(action, self.action_space, self._rng)

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        executed = self.action(action)
        observation, reward, terminated, truncated, info = self.env.step(executed)
        info = {**info, NOISE_FREE_ACTION_KEY: action, EXECUTED_ACTION_KEY: executed}
        return observation, reward, terminated, truncated, info


class VectorActionNoise(VectorWrapper):
    """Add exploration noise to each sub-env's actions, one noise process per sub-env.

    ``reset(seed=s)`` seeds sub-env ``i``'s stream from ``(s, i)`` (or from ``s[i]`` for a
    list); each process is reset when its sub-env starts an episode, in every autoreset mode.
    ``info["noise_free_action"]`` holds the batch of actions the policy chose,
    ``info["executed_action"]`` the batch the env received.
    """

    def __init__(self, env: VectorEnv, noise: NoiseProcess) -> None:
        super().__init__(env)
        noise.check_space(env.single_action_space)
        self.noises = [copy.deepcopy(noise) for _ in range(env.num_envs)]
        self._rngs = [_seeded(None) for _ in range(env.num_envs)]
        self._episodes = EpisodeTracker.for_vector_env(env.metadata, env.num_envs)

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observations, info = self.env.reset(seed=seed, options=options)  # type: ignore[arg-type]
        started = self._episodes.reset(observations, options)
        for i in map(int, np.flatnonzero(started)):
            if isinstance(seed, int):
                self._rngs[i] = _seeded(seed, i)
            elif seed is not None and seed[i] is not None:
                self._rngs[i] = _seeded(seed[i])
            self.noises[i].reset()
        return observations, info

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        space = self.single_action_space
        noisy = [
            self.noises[i].apply(index_observation(actions, i), space, self._rngs[i])
            for i in range(self.num_envs)
        ]
        batch = np.asarray(noisy, dtype=np.asarray(actions).dtype)
        observations, rewards, terminations, truncations, info = self.env.step(batch)
        view = self._episodes.step(observations, terminations, truncations, info)
        for i in map(int, np.flatnonzero(view.started)):
            self.noises[i].reset()
        info = {
            **info,
            NOISE_FREE_ACTION_KEY: actions,
            f"_{NOISE_FREE_ACTION_KEY}": np.ones(self.num_envs, dtype=bool),
            EXECUTED_ACTION_KEY: batch,
            f"_{EXECUTED_ACTION_KEY}": np.ones(self.num_envs, dtype=bool),
        }
        return observations, rewards, terminations, truncations, info
