"""Record every transition of a single env or a Gymnasium vector env to Parquet chunks.

:class:`RecordTrajectories` and :class:`VectorRecordTrajectories` feed a
:class:`~openenv_gym.trajectories.TrajectoryWriter`: one row per transition
``(s, a, r, s', terminated, truncated)``, where ``a`` is the action the env executed: outside
an :class:`~openenv_gym.wrappers.ActionNoise` wrapper, the noisy one it reports in
``info["executed_action"]``, and the policy's goes to the ``policy_action`` column (see
:mod:`openenv_gym.trajectories.writer` for the columns and
:mod:`openenv_gym.trajectories.layout` for the files). Read the result with
``datasets.load_dataset("parquet", data_dir=out)`` or
:func:`~openenv_gym.trajectories.trajectory_arrays`, or export it with
:func:`~openenv_gym.trajectories.to_minari`.

Example:
    >>> import gymnasium as gym, tempfile
    >>> from openenv_gym.trajectories import trajectory_arrays
    >>> out = tempfile.mkdtemp()
    >>> env = RecordTrajectories(gym.make("CartPole-v1"), out, chunk_size=100)
    >>> _ = env.reset(seed=0)
    >>> for _ in range(150):
    ...     _, _, terminated, truncated, _ = env.step(env.action_space.sample())
    ...     if terminated or truncated:
    ...         _ = env.reset()
    >>> env.close()
    >>> arrays = trajectory_arrays(out)
    >>> arrays["observation"].shape, arrays["observation"].dtype
    ((150, 4), dtype('float32'))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper

from openenv_gym.trajectories.hub import push_to_hub
from openenv_gym.trajectories.writer import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_CHUNK_BYTES,
    TrajectoryWriter,
)
from openenv_gym.wrappers.episodes import EpisodeTracker, StepView, index_observation
from openenv_gym.wrappers.noise import EXECUTED_ACTION_KEY, ActionNoise, VectorActionNoise
from openenv_gym.wrappers.shaping import RAW_REWARD_KEY

__all__ = ["RecordTrajectories", "VectorRecordTrajectories"]


def _run_metadata(env: Any, env_id: str | None, extra: Mapping[str, Any] | None) -> dict[str, Any]:
    spec = getattr(env, "spec", None)
    unwrapped = getattr(env, "unwrapped", env)
    return {
        "env_id": env_id or (spec.id if spec is not None else None),
        "server_url": getattr(unwrapped, "base_url", None),
        "seed": None,
        **dict(extra or {}),
    }


def _adds_action_noise(env: Any) -> bool:
    """Whether an action-noise wrapper sits below the recorder (then the env executes other
    actions than the policy's, and both are recorded)."""
    while env is not None:
        if isinstance(env, ActionNoise | VectorActionNoise):
            return True
        env = getattr(env, "env", None)
    return False


class _Recorder:
    """The writer side shared by the single-env and the vector recorder."""

    writer: TrajectoryWriter
    _episodes: EpisodeTracker
    _ids: list[int]
    _seeded: bool

    def _start(self, started: np.ndarray, seed: Any) -> None:
        if seed is not None and not self._seeded:
            self.writer.metadata["seed"] = seed
            self._seeded = True
        for i in np.flatnonzero(started):
            self._ids[i] = self.writer.new_episode()

    def _record(self, view: StepView, actions: Any, rewards: Any, raw: Any) -> None:
        for i in map(int, np.flatnonzero(view.live)):
            info = view.info(i)
            action = index_observation(actions, i)
            executed = info.get(EXECUTED_ACTION_KEY)
            self.writer.add(
                episode_id=self._ids[i],
                env_index=i,
                step=int(view.steps[i]),
                observation=view.observations[i],
                action=action if executed is None else executed,
                policy_action=action,
                reward=float(rewards[i]),
                raw_reward=float(raw[i] if raw is not None else rewards[i]),
                terminated=bool(view.terminated[i]),
                truncated=bool(view.truncated[i]),
                next_observation=view.next_observation(i),
                info=info,
            )
        for i in map(int, np.flatnonzero(view.started)):
            self._ids[i] = self.writer.new_episode()

    def push_to_hub(self, repo_id: str, **kwargs: Any) -> str:
        """Write the open chunk, then :func:`~openenv_gym.trajectories.push_to_hub`."""
        self.writer.flush()
        return push_to_hub(self.writer.directory, repo_id, **kwargs)


class RecordTrajectories(_Recorder, gym.Wrapper[Any, Any, Any, Any]):
    """Record every transition of a single env (see the module docstring).

    Args:
        env: The env.
        directory: Output directory (must not hold a recording yet).
        info_keys: Info fields to record (names, or name -> type).
        chunk_size: Transitions per chunk.
        max_chunk_bytes: Array bytes per chunk at most.
        env_id: The env id for the metadata (default: ``env.spec.id``).
        metadata: More run metadata.

    The first ``reset`` seed is stored as the run's ``seed``. ``close()`` writes the open chunk.
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        directory: str | Path,
        *,
        info_keys: Sequence[str] | Mapping[str, str] = (),
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
        env_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        gym.Wrapper.__init__(self, env)
        self.writer = TrajectoryWriter(
            directory,
            env.observation_space,
            env.action_space,
            info_keys=info_keys,
            metadata=_run_metadata(env, env_id, metadata),
            chunk_size=chunk_size,
            max_chunk_bytes=max_chunk_bytes,
            policy_action=_adds_action_noise(env),
        )
        self._episodes = EpisodeTracker(1, None)
        self._ids = [-1]
        self._seeded = False

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        self._start(self._episodes.reset(observation), seed)
        return observation, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        if not self._episodes.is_ready():
            raise gym.error.ResetNeeded("call reset() before step() on a RecordTrajectories env")
        observation, reward, terminated, truncated, info = self.env.step(action)
        view = self._episodes.step(observation, terminated, truncated, info)
        raw = [info.get(RAW_REWARD_KEY, reward)]
        self._record(view, [action], [reward], raw)
        return observation, reward, terminated, truncated, info

    def close(self) -> None:
        try:
            self.writer.close()
        finally:
            super().close()


class VectorRecordTrajectories(_Recorder, VectorWrapper):
    """Record every sub-env transition of a Gymnasium ``VectorEnv`` (``env_index`` tells them
    apart). Takes the arguments of :class:`RecordTrajectories`; supports the three autoreset
    modes (a ``NEXT_STEP`` reset step is not a transition and is not recorded).
    """

    def __init__(
        self,
        env: VectorEnv,
        directory: str | Path,
        *,
        info_keys: Sequence[str] | Mapping[str, str] = (),
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
        env_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        VectorWrapper.__init__(self, env)
        first = getattr(env, "envs", [None])[0]
        self.writer = TrajectoryWriter(
            directory,
            env.single_observation_space,
            env.single_action_space,
            info_keys=info_keys,
            metadata=_run_metadata(first if first is not None else env, env_id, metadata),
            chunk_size=chunk_size,
            max_chunk_bytes=max_chunk_bytes,
            policy_action=_adds_action_noise(env),
        )
        self._episodes = EpisodeTracker.for_vector_env(env.metadata, env.num_envs)
        self._ids = [-1] * env.num_envs
        self._seeded = False

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observations, info = self.env.reset(seed=seed, options=options)  # type: ignore[arg-type]
        self._start(self._episodes.reset(observations, options), seed)
        return observations, info

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        observations, rewards, terminations, truncations, info = self.env.step(actions)
        view = self._episodes.step(observations, terminations, truncations, info)
        raw = info.get(RAW_REWARD_KEY) if isinstance(info, Mapping) else None
        self._record(view, actions, rewards, raw)
        return observations, rewards, terminations, truncations, info

    def close(self, **kwargs: Any) -> None:
        try:
            self.writer.close()
        finally:
            super().close(**kwargs)
