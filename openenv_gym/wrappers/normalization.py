"""Observation and reward normalization with running statistics, single and vector envs.

:class:`Normalize` (a ``gymnasium.Env`` wrapper) and :class:`VectorNormalize` (a Gymnasium
``VectorEnv`` wrapper) keep running means and variances (Chan et al.'s parallel algorithm,
in float64, exact from the first sample) of

* the observation: a ``Box``, or every ``Box`` entry of a ``Dict`` (or the ones in ``keys``);
  the normalized value is ``clip((x - mean) / sqrt(var + epsilon), -clip_obs, clip_obs)``;
* the discounted return, as in SB3's ``VecNormalize`` and Gymnasium's ``NormalizeReward``:
  the reward is divided by ``sqrt(var(return) + epsilon)`` and clipped to ``clip_reward``.
  The reward before scaling goes to ``info["raw_reward"]`` unless a wrapper below already
  put it there (e.g. :class:`~openenv_gym.wrappers.ShapeReward`).

``training=False`` freezes the statistics (evaluation); :meth:`save` writes them to an
``.npz`` file and :meth:`Normalize.from_file` re-attaches them to a new env.

What to reuse instead: on an SB3 ``VecEnv`` use SB3's ``VecNormalize`` (it works on our envs
unchanged); for a single ``Box`` env without saving, Gymnasium's ``NormalizeObservation`` /
``NormalizeReward`` do the same (their statistics start from a pseudo-count of 1e-4).

Example:
    >>> import gymnasium as gym
    >>> env = Normalize(gym.make("CartPole-v1"), reward=False)
    >>> obs, _ = env.reset(seed=0)
    >>> env.obs_stats[""].count
    1.0
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from collections.abc import Collection
from pathlib import Path
from typing import Any, Final, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv, VectorWrapper
from gymnasium.vector.utils import batch_space

from openenv_gym.errors import NormalizationStatsError, WrapperConfigError
from openenv_gym.wrappers.shaping import RAW_REWARD_KEY

_FORMAT: Final = "openenv_gym.normalize/1"


class RunningMeanStd:
    """Running mean and (population) variance of arrays of a fixed shape.

    Example:
        >>> stats = RunningMeanStd((2,))
        >>> stats.update(np.array([[0.0, 1.0], [2.0, 3.0]]))
        >>> stats.update(np.array([[4.0, 5.0]]))
        >>> stats.mean.tolist(), stats.var.tolist(), stats.count
        ([2.0, 3.0], [2.6666666666666665, 2.6666666666666665], 3.0)
    """

    def __init__(self, shape: tuple[int, ...] = ()) -> None:
        self.shape = tuple(shape)
        self.mean = np.zeros(self.shape, dtype=np.float64)
        self.var = np.ones(self.shape, dtype=np.float64)
        self.count = 0.0

    def update(self, batch: np.ndarray) -> None:
        """Add a batch of samples, shaped ``(n, *shape)``."""
        batch = np.asarray(batch, dtype=np.float64).reshape((-1, *self.shape))
        n = batch.shape[0]
        if n == 0:
            return
        batch_mean = batch.mean(axis=0)
        batch_var = batch.var(axis=0)
        total = self.count + n
        delta = batch_mean - self.mean
        m2 = self.var * self.count + batch_var * n + delta**2 * self.count * n / total
        self.mean = self.mean + delta * n / total
        self.var = m2 / total
        self.count = total

    def normalize(self, value: np.ndarray, epsilon: float, clip: float) -> np.ndarray:
        """``clip((value - mean) / sqrt(var + epsilon), -clip, clip)`` as float32."""
        out = (np.asarray(value, dtype=np.float64) - self.mean) / np.sqrt(self.var + epsilon)
        return np.clip(out, -clip, clip).astype(np.float32)


def _box_keys(space: spaces.Space[Any], keys: Collection[str] | None) -> list[str]:
    """The entries to normalize: ``[""]`` for a Box, Dict keys of Box entries otherwise."""
    if isinstance(space, spaces.Box):
        if keys is not None:
            raise WrapperConfigError(
                f"keys={sorted(keys)} only applies to Dict observation spaces, got {space}"
            )
        return [""]
    if isinstance(space, spaces.Dict):
        boxes = [k for k, sub in space.spaces.items() if isinstance(sub, spaces.Box)]
        if keys is None:
            if not boxes:
                raise WrapperConfigError(f"no Box entry to normalize in {space}")
            return boxes
        wrong = [k for k in keys if k not in boxes]
        if wrong:
            raise WrapperConfigError(
                f"keys {wrong} are not Box entries of the observation space; expected some "
                f"of {boxes}"
            )
        return [k for k in boxes if k in keys]
    raise WrapperConfigError(
        f"observation normalization needs a Box or Dict observation space, got {space}; "
        "pass observation=False to normalize only the reward"
    )


def _normalized_space(space: spaces.Space[Any], keys: list[str], clip: float) -> Any:
    def box(sub: spaces.Space[Any]) -> spaces.Box:
        return spaces.Box(-clip, clip, shape=sub.shape, dtype=np.float32)

    if keys == [""]:
        return box(space)
    entries = cast(spaces.Dict, space).spaces.items()  # a Dict: _box_keys checked it
    return spaces.Dict([(k, box(s) if k in keys else s) for k, s in entries])


def _entry_shape(space: spaces.Space[Any], key: str) -> tuple[int, ...]:
    entry = space if key == "" else cast(spaces.Dict, space).spaces[key]
    return tuple(entry.shape or ())


class _Normalizer:
    """The statistics and settings shared by :class:`Normalize` and :class:`VectorNormalize`."""

    def __init__(
        self,
        single_space: spaces.Space[Any],
        *,
        observation: bool,
        reward: bool,
        keys: Collection[str] | None,
        gamma: float,
        clip_obs: float,
        clip_reward: float,
        epsilon: float,
        training: bool,
    ) -> None:
        if not 0.0 <= gamma <= 1.0:
            raise WrapperConfigError(f"gamma must be in [0, 1], got {gamma}")
        if not (clip_obs > 0 and clip_reward > 0 and epsilon > 0):
            raise WrapperConfigError(
                "clip_obs, clip_reward and epsilon must be positive, got "
                f"{clip_obs}, {clip_reward}, {epsilon}"
            )
        self.observation, self.reward = observation, reward
        self.gamma, self.clip_obs, self.clip_reward = gamma, clip_obs, clip_reward
        self.epsilon, self.training = epsilon, training
        self.keys = _box_keys(single_space, keys) if observation else []
        self.obs_stats = {k: RunningMeanStd(_entry_shape(single_space, k)) for k in self.keys}
        self.return_stats = RunningMeanStd(())

    def observation_space(self, single_space: spaces.Space[Any]) -> Any:
        if not self.observation:
            return single_space
        return _normalized_space(single_space, self.keys, self.clip_obs)

    def observations(self, obs: Any, batched: bool) -> Any:
        if not self.observation:
            return obs
        if self.keys == [""]:
            if self.training:
                self.obs_stats[""].update(obs if batched else obs[None])
            return self.obs_stats[""].normalize(obs, self.epsilon, self.clip_obs)
        out = dict(obs)
        for key in self.keys:
            stats = self.obs_stats[key]
            if self.training:
                stats.update(obs[key] if batched else np.asarray(obs[key])[None])
            out[key] = stats.normalize(obs[key], self.epsilon, self.clip_obs)
        return out

    def rewards(self, rewards: np.ndarray, returns: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Scale ``rewards``; ``returns`` (the running discounted returns) is updated in place."""
        returns *= self.gamma
        returns += rewards
        if self.training:
            self.return_stats.update(returns)
        scaled = rewards / np.sqrt(self.return_stats.var + self.epsilon)
        returns[ends] = 0.0
        return np.clip(scaled, -self.clip_reward, self.clip_reward)

    # ------------------------------------------------------------------ files

    def save(self, path: str | Path) -> None:
        arrays: dict[str, np.ndarray] = {}
        for key, stats in [*self.obs_stats.items(), ("@return", self.return_stats)]:
            arrays[f"{key}|mean"], arrays[f"{key}|var"] = stats.mean, stats.var
            arrays[f"{key}|count"] = np.array(stats.count)
        settings = {
            "format": _FORMAT,
            "observation": self.observation,
            "reward": self.reward,
            "keys": self.keys,
            "gamma": self.gamma,
            "clip_obs": self.clip_obs,
            "clip_reward": self.clip_reward,
            "epsilon": self.epsilon,
        }
        arrays["@settings"] = np.array(json.dumps(settings))
        path = Path(path)
        fd, tmp = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as file:
                np.savez(file, **arrays)  # type: ignore[arg-type]
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def load_stats(self, path: str | Path) -> None:
        arrays = read_stats_file(path)
        settings = json.loads(str(arrays["@settings"]))
        if settings.get("keys") != self.keys:
            raise NormalizationStatsError(
                f"{str(path)!r} holds statistics for observation entries {settings.get('keys')}, "
                f"this env normalizes {self.keys}; load them on an env with the same spaces"
            )
        for key, stats in [*self.obs_stats.items(), ("@return", self.return_stats)]:
            mean, var = arrays[f"{key}|mean"], arrays[f"{key}|var"]
            if mean.shape != stats.shape or var.shape != stats.shape:
                raise NormalizationStatsError(
                    f"{str(path)!r}: statistics of {key or 'the observation'!r} have shape "
                    f"{mean.shape}, this env's is {stats.shape}"
                )
        for key, stats in [*self.obs_stats.items(), ("@return", self.return_stats)]:
            stats.mean = arrays[f"{key}|mean"].astype(np.float64)
            stats.var = arrays[f"{key}|var"].astype(np.float64)
            stats.count = float(arrays[f"{key}|count"])


def read_stats_file(path: str | Path) -> dict[str, np.ndarray]:
    """The arrays of a statistics file written by ``save`` (raises NormalizationStatsError)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise NormalizationStatsError(
            f"cannot read normalization statistics from {str(path)!r}: {exc}; expected a file "
            "written by Normalize.save() / VectorNormalize.save()"
        ) from exc
    try:
        settings = json.loads(str(arrays["@settings"]))
        if settings.get("format") != _FORMAT:
            raise ValueError(f"format {settings.get('format')!r}")
    except (KeyError, ValueError) as exc:
        raise NormalizationStatsError(
            f"{str(path)!r} is not a normalization statistics file ({exc}); expected one "
            "written by Normalize.save() / VectorNormalize.save()"
        ) from exc
    return arrays


def _settings_from_file(path: str | Path) -> dict[str, Any]:
    settings = json.loads(str(read_stats_file(path)["@settings"]))
    keys = settings["keys"]
    return {
        "observation": settings["observation"],
        "reward": settings["reward"],
        "keys": None if keys in ([""], []) else keys,
        "gamma": settings["gamma"],
        "clip_obs": settings["clip_obs"],
        "clip_reward": settings["clip_reward"],
        "epsilon": settings["epsilon"],
    }


class _StatsAccess:
    _norm: _Normalizer

    @property
    def training(self) -> bool:
        """Update the statistics while stepping (set ``False`` to freeze them)."""
        return self._norm.training

    @training.setter
    def training(self, value: bool) -> None:
        self._norm.training = bool(value)

    @property
    def obs_stats(self) -> dict[str, RunningMeanStd]:
        """Observation statistics by Dict key (``""`` for a Box observation)."""
        return self._norm.obs_stats

    @property
    def return_stats(self) -> RunningMeanStd:
        """Statistics of the discounted return."""
        return self._norm.return_stats

    def save(self, path: str | Path) -> None:
        """Write the statistics and settings to an ``.npz`` file (atomically)."""
        self._norm.save(path)

    def load_stats(self, path: str | Path) -> None:
        """Replace the statistics by those saved in ``path``.

        Raises:
            NormalizationStatsError: The file is unreadable or its shapes do not fit.
        """
        self._norm.load_stats(path)


class Normalize(_StatsAccess, gym.Wrapper[Any, Any, Any, Any]):
    """Normalize a single env's observations and rewards with running statistics.

    Args:
        env: The env (``Box`` or ``Dict`` observations).
        observation: Normalize observations.
        reward: Scale rewards by the running std of the discounted return.
        keys: For ``Dict`` observations, the ``Box`` entries to normalize (default: all).
        gamma: Discount of the return whose variance scales the reward.
        clip_obs: Normalized observations are clipped to ``[-clip_obs, clip_obs]``.
        clip_reward: Scaled rewards are clipped to ``[-clip_reward, clip_reward]``.
        epsilon: Added to variances.
        training: Update the statistics (``False`` freezes them).

    Raises:
        WrapperConfigError: The observation space cannot be normalized, or a bad setting.
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        *,
        observation: bool = True,
        reward: bool = True,
        keys: Collection[str] | None = None,
        gamma: float = 0.99,
        clip_obs: float = 10.0,
        clip_reward: float = 10.0,
        epsilon: float = 1e-8,
        training: bool = True,
    ) -> None:
        gym.Wrapper.__init__(self, env)
        self._norm = _Normalizer(
            env.observation_space,
            observation=observation,
            reward=reward,
            keys=keys,
            gamma=gamma,
            clip_obs=clip_obs,
            clip_reward=clip_reward,
            epsilon=epsilon,
            training=training,
        )
        self.observation_space = self._norm.observation_space(env.observation_space)
        self._return = np.zeros(1, dtype=np.float64)

    @classmethod
    def from_file(
        cls, path: str | Path, env: gym.Env[Any, Any], *, training: bool = False
    ) -> Normalize:
        """Wrap ``env`` with the settings and statistics saved in ``path`` (frozen by default)."""
        wrapper = cls(env, training=training, **_settings_from_file(path))
        wrapper.load_stats(path)
        return wrapper

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        self._return[:] = 0.0
        return self._norm.observations(observation, batched=False), info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        observation = self._norm.observations(observation, batched=False)
        if self._norm.reward:
            info = dict(info)
            info.setdefault(RAW_REWARD_KEY, float(reward))
            ends = np.array([bool(terminated) or bool(truncated)])
            scaled = self._norm.rewards(np.array([float(reward)]), self._return, ends)
            return observation, float(scaled[0]), terminated, truncated, info
        return observation, float(reward), terminated, truncated, info


class VectorNormalize(_StatsAccess, VectorWrapper):
    """:class:`Normalize` for a Gymnasium ``VectorEnv``: one set of statistics, batch updates.

    Takes the same arguments as :class:`Normalize`. ``info["raw_reward"]`` holds the rewards
    before scaling.
    """

    def __init__(
        self,
        env: VectorEnv,
        *,
        observation: bool = True,
        reward: bool = True,
        keys: Collection[str] | None = None,
        gamma: float = 0.99,
        clip_obs: float = 10.0,
        clip_reward: float = 10.0,
        epsilon: float = 1e-8,
        training: bool = True,
    ) -> None:
        VectorWrapper.__init__(self, env)
        self._norm = _Normalizer(
            env.single_observation_space,
            observation=observation,
            reward=reward,
            keys=keys,
            gamma=gamma,
            clip_obs=clip_obs,
            clip_reward=clip_reward,
            epsilon=epsilon,
            training=training,
        )
        self.single_observation_space = self._norm.observation_space(env.single_observation_space)
        self.observation_space = batch_space(self.single_observation_space, env.num_envs)
        self._returns = np.zeros(env.num_envs, dtype=np.float64)

    @classmethod
    def from_file(
        cls, path: str | Path, env: VectorEnv, *, training: bool = False
    ) -> VectorNormalize:
        """Wrap ``env`` with the settings and statistics saved in ``path`` (frozen by default)."""
        wrapper = cls(env, training=training, **_settings_from_file(path))
        wrapper.load_stats(path)
        return wrapper

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observations, info = self.env.reset(seed=seed, options=options)  # type: ignore[arg-type]
        mask = (options or {}).get("reset_mask")
        if mask is None:
            self._returns[:] = 0.0
        else:
            self._returns[np.asarray(mask, dtype=bool)] = 0.0
        return self._norm.observations(observations, batched=True), info

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        observations, rewards, terminations, truncations, info = self.env.step(actions)
        observations = self._norm.observations(observations, batched=True)
        if self._norm.reward:
            raw = np.asarray(rewards, dtype=np.float64)
            info = dict(info)
            if RAW_REWARD_KEY not in info:
                info[RAW_REWARD_KEY] = raw
                info[f"_{RAW_REWARD_KEY}"] = np.ones(self.num_envs, dtype=bool)
            ends = np.logical_or(terminations, truncations)
            rewards = self._norm.rewards(raw, self._returns, ends)
        return observations, rewards, terminations, truncations, info


__all__ = ["Normalize", "RunningMeanStd", "VectorNormalize", "read_stats_file"]
