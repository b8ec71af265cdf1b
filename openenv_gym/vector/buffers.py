"""Where a vector env's replies land: the batch buffers and each sub-env's episode flags.

:class:`BatchBuffers` holds the observation batch (preallocated; Box-like spaces are one
array whose rows are written in place), rewards, terminations, truncations, the sub-envs
to reset on the next step, the steps of each episode (a client-side time limit), and the
legal actions of each sub-env's last observation (for action masks). It turns one
connection's :class:`~openenv_gym.wire.batch.BatchResult` into those, with the wire ->
Gymnasium mapping of :class:`~openenv_gym.env.OpenEnvEnv`: ``done`` -> ``terminated``
unless the server's truncation field is set (exact with ``x-terminated-key``). Every
observation is decoded by the observation codec (its batch method for stacked fields), so
the vector env treats a reply exactly as the single env does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from copy import deepcopy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import concatenate, create_empty_array

from openenv_gym.env_mapping import reply_info
from openenv_gym.errors import ActionMaskUnavailableError, OpenEnvGymError
from openenv_gym.spaces import ActionCodec, ObservationCodec
from openenv_gym.vector.infos import (
    AddInfo,
    ResultRows,
    merge_result_infos,
    merge_results_infos,
    row_index,
)
from openenv_gym.wire.batch import BatchResult


class BatchBuffers:
    """The batch buffers of ``num_envs`` sub-envs and how replies are written into them.

    Args:
        codec: The observation codec (space, field names, decoding).
        num_envs: The number of sub-envs.
        autoreset_mode: The vector env's autoreset mode.
        max_episode_steps: A client-side time limit, or ``None``.
        add_info: ``VectorEnv._add_info`` of the vector env.
        where: The URL of a sub-env (for error notes).
    """

    def __init__(
        self,
        codec: ObservationCodec,
        num_envs: int,
        *,
        autoreset_mode: AutoresetMode,
        max_episode_steps: int | None,
        add_info: AddInfo,
        where: Callable[[int], str],
    ) -> None:
        self.codec = codec
        self.num_envs = num_envs
        self.same_step = autoreset_mode == AutoresetMode.SAME_STEP
        self.max_episode_steps = max_episode_steps
        self.add_info = add_info
        self._where = where
        space = codec.space
        self.observations: Any = create_empty_array(space, num_envs, fn=np.zeros)
        #: Box-like spaces batch into one array: rows are written in place.
        self.stacked = isinstance(self.observations, np.ndarray)
        self._env_obs: list[Any] = [None] * num_envs
        self.rewards = np.zeros(num_envs, dtype=np.float64)
        self.terminations = np.zeros(num_envs, dtype=np.bool_)
        self.truncations = np.zeros(num_envs, dtype=np.bool_)
        #: Sub-envs whose episode ended at the last step (NEXT_STEP: reset on the next).
        self.autoreset = np.zeros(num_envs, dtype=np.bool_)
        #: The same, as a list (no numpy reduction per step to find them).
        self.pending_resets: list[int] = []
        # Whether a sub-env's episode ended in the step being written.
        self._ended_now = False
        self.elapsed = np.zeros(num_envs, dtype=np.int64)
        #: The legal actions of each sub-env's last observation (``None``: not reset yet).
        self.legal: list[Any] = [None] * num_envs
        self.truncated_key = codec.truncated_key
        self.terminated_key = codec.terminated_key
        #: The fields of a reply that carry no info (the observation, flags, metadata).
        self.quiet_fields = frozenset(
            k for k in (codec.key, codec.truncated_key, codec.terminated_key, "metadata") if k
        )

    # ------------------------------------------------------------------ writing replies

    def write_rows(self, channel_indices: Sequence[int], result: BatchResult) -> list[int]:
        """Decode one connection's observations into the batch; returns their sub-envs."""
        indices = [channel_indices[k] for k in result.indices]
        legal_key = self.codec.legal_key
        if legal_key is not None and legal_key in result.fields:  # for action_masks()
            column = result.fields[legal_key]
            for k, i in enumerate(indices):
                self.legal[i] = column[k]
        try:
            decoded = self.codec.decode_batch(result.fields, len(indices))
        except OpenEnvGymError as exc:
            exc.add_note(
                f"(from sub-envs {indices} of the vector env, at {self._where(indices[0])})"
            )
            raise
        if self.stacked:
            self.observations[row_index(indices)] = decoded
        else:
            for k, i in enumerate(indices):
                self._env_obs[i] = decoded[k]
        fields = result.fields
        for name, value in fields.items():
            if (
                type(value) is not list  # the usual column of a field outside the space
                and isinstance(value, np.ndarray)
                and not value.flags.writeable
                and name != self.codec.key
            ):
                # A borrowed view (valid until the next request on its connection): a
                # field that may reach an info keeps a copy (the observation is in the buffer).
                fields[name] = value.copy()
        return indices

    def take_steps(
        self,
        channel_indices: Sequence[int],
        result: BatchResult,
        was_resetting: frozenset[int] | None,
        infos: dict[str, Any],
        ended: dict[int, dict[str, Any]],
        deferred: list[ResultRows] | None = None,
    ) -> dict[str, Any]:
        """Write one connection's step results; collect SAME_STEP episodes still to reset
        (``ended``: sub-env -> its final info). ``was_resetting``: the sub-envs whose op was
        the NEXT_STEP reset. ``deferred``: the infos of the rows are left there, for
        :meth:`merge_deferred` to merge with those of the other connections at once."""
        indices = self.write_rows(channel_indices, result)
        if deferred and result.final:  # the infos merged so far come first, as they came
            infos = self.merge_deferred(infos, deferred)
        noisy = bool(result.metadata) or not self.quiet_fields.issuperset(result.fields)
        if len(indices) > 1 and not result.final and not noisy:
            plain_ended = self._take_plain_steps(indices, result, was_resetting)
            if plain_ended is not None:
                if self.same_step:  # each its own (empty) final info
                    ended.update({i: {} for i in plain_ended})
                return infos
        rewards, terminations, truncations = self.rewards, self.terminations, self.truncations
        elapsed, limit = self.elapsed, self.max_episode_steps
        truncated_key, terminated_key = self.truncated_key, self.terminated_key
        truncated_column = result.fields.get(truncated_key) if truncated_key else None
        # Our servers send the exact terminated flag too (both may be true on the last step).
        terminated_column = result.fields.get(terminated_key) if terminated_key else None
        rows: list[tuple[int, int]] = []  # (position, sub-env) whose info is merged at the end
        for k, i in enumerate(indices):
            if was_resetting is not None and i in was_resetting:
                rewards[i] = 0.0
                terminations[i] = False
                truncations[i] = False
                elapsed[i] = 0
                if noisy:
                    rows.append((k, i))
                continue
            final = result.final.get(k)
            if final is not None:  # ended and reset by the server in this round trip
                truncated = bool(final.observation.get(truncated_key or "", False))
                exact = final.observation.get(terminated_key) if terminated_key else None
                reward, done = final.reward, final.done
            else:
                truncated = bool(truncated_column[k]) if truncated_column is not None else False
                exact = terminated_column[k] if terminated_column is not None else None
                reward, done = result.reward[k], result.done[k]
            elapsed[i] += 1
            if limit is not None and elapsed[i] >= limit:
                truncated = True
            if done and not truncated and exact is None and self.codec.truncation_rule:
                row = final if final is not None else result.reply(k)
                truncated = self.codec.truncates(row.observation)
            terminated = bool(exact) if exact is not None else bool(done) and not truncated
            rewards[i] = 0.0 if reward is None else reward
            terminations[i] = terminated
            truncations[i] = truncated
            if terminated or truncated:
                self._ended_now = True
            if final is not None:
                final_info = reply_info(self.codec, final)
                final_obs = self.decode_one(i, final.observation)
                infos = self.add_info(infos, {"final_obs": final_obs, "final_info": final_info}, i)
                elapsed[i] = 0
                if noisy:
                    rows.append((k, i))
            elif self.same_step and (terminated or truncated):
                ended[i] = self.row_info(result, k) if noisy else {}
            elif noisy:
                rows.append((k, i))
        if deferred is not None:
            deferred.append((result, rows))
            return infos
        return merge_result_infos(self.add_info, self.num_envs, infos, self.codec, result, rows)

    def merge_deferred(self, infos: dict[str, Any], deferred: list[ResultRows]) -> dict[str, Any]:
        """``infos`` with the infos :meth:`take_steps` left in ``deferred`` merged (which
        is emptied)."""
        infos = merge_results_infos(self.add_info, self.num_envs, infos, self.codec, deferred)
        deferred.clear()
        return infos

    def _take_plain_steps(
        self, indices: list[int], result: BatchResult, was_resetting: frozenset[int] | None
    ) -> list[int] | None:
        """:meth:`take_steps` for rows without a final reply or an info, written as whole
        columns: the sub-envs whose episode ended; ``None`` (nothing written) when the flag
        columns are not boolean."""
        if self.codec.truncation_rule:  # the rule reads each row's observation
            return None
        truncated_column = _flags(result.fields, self.truncated_key)
        terminated_column = _flags(result.fields, self.terminated_key)
        if isinstance(truncated_column, bool) or isinstance(terminated_column, bool):
            return None
        count = len(indices)
        rows = row_index(indices)
        reward = result.reward
        rewards = np.array([0.0 if r is None else r for r in reward] if None in reward else reward)
        elapsed = self.elapsed[rows] + 1
        truncated = np.zeros(count, np.bool_) if truncated_column is None else truncated_column
        if terminated_column is not None:
            terminated = terminated_column
        else:
            terminated = np.array(result.done, dtype=np.bool_) & ~truncated
        if was_resetting is not None and not was_resetting.isdisjoint(indices):
            # NEXT_STEP resets: a new episode, reward 0, neither flag
            reset = np.fromiter((i in was_resetting for i in indices), np.bool_, count)
            rewards[reset] = 0.0
            elapsed[reset] = 0
            terminated[reset] = False
            truncated[reset] = False
        if self.max_episode_steps is not None:
            truncated |= elapsed >= self.max_episode_steps
            if terminated_column is None:
                terminated &= ~truncated
        self.rewards[rows] = rewards
        self.elapsed[rows] = elapsed
        self.terminations[rows] = terminated
        self.truncations[rows] = truncated
        done = terminated | truncated
        if not done.any():
            return []
        self._ended_now = True
        return [indices[k] for k in np.flatnonzero(done).tolist()]

    def take_resets(
        self, channel_indices: Sequence[int], result: BatchResult, infos: dict[str, Any]
    ) -> dict[str, Any]:
        """Write one connection's reset results (and their infos)."""
        indices = self.write_rows(channel_indices, result)
        if result.metadata or not self.quiet_fields.issuperset(result.fields):
            rows = list(enumerate(indices))
            return merge_result_infos(self.add_info, self.num_envs, infos, self.codec, result, rows)
        return infos

    def mark_reset(self, indices: Sequence[int]) -> None:
        """The sub-envs ``indices`` start a new episode."""
        self.terminations[indices] = False
        self.truncations[indices] = False
        self.autoreset[indices] = False
        self.elapsed[indices] = 0
        if self.pending_resets:
            self.pending_resets = np.flatnonzero(self.autoreset).tolist()

    def mark_reconnected(self, index: int) -> None:
        """Sub-env ``index``'s episode ends here, truncated (its session was reopened)."""
        self.rewards[index] = 0.0
        self.terminations[index] = False
        self.truncations[index] = True
        self._ended_now = True

    def end_episodes(self, indices: Sequence[int]) -> None:
        """The sub-envs ``indices`` go on by a reset (NEXT_STEP), whatever their flags: a
        reply lost to a fault, or a reopened session."""
        if len(indices):
            self.autoreset[indices] = True
            self.pending_resets = np.flatnonzero(self.autoreset).tolist()

    def settle(self, indices: Sequence[int]) -> None:
        """The sub-envs ``indices`` were stepped on their own (the asynchronous pool): those
        whose episode ended are reset by their next step."""
        ended = self.terminations[indices] | self.truncations[indices]
        self.autoreset[indices] = ended
        if ended.any() or self.pending_resets:
            self.pending_resets = np.flatnonzero(self.autoreset).tolist()

    def note_ended(self) -> None:
        """An episode ended in the step being written (:meth:`end_step` then works out
        which sub-envs the next step resets)."""
        self._ended_now = True

    def end_step(self) -> None:
        """After a step: which sub-envs the next step resets (none with SAME_STEP).

        A step in which no episode ended leaves every flag false: no numpy work then.
        """
        if self._ended_now and not self.same_step:
            np.logical_or(self.terminations, self.truncations, out=self.autoreset)
            self.pending_resets = np.flatnonzero(self.autoreset).tolist()
        elif self.pending_resets:
            self.autoreset[:] = False
            self.pending_resets = []
        self._ended_now = False

    # ------------------------------------------------------------------ observations

    def decode_one(self, index: int, observation: Mapping[str, Any]) -> Any:
        """One observation of sub-env ``index``, decoded by the codec."""
        try:
            return self.codec.decode(observation)
        except OpenEnvGymError as exc:
            exc.add_note(f"(from sub-env {index} of the vector env, at {self._where(index)})")
            raise

    def finish(self) -> None:
        """Batch the per-sub-env observations of non-Box spaces (once every one is known)."""
        if not self.stacked and all(o is not None for o in self._env_obs):
            self.observations = concatenate(self.codec.space, self._env_obs, self.observations)

    def batch_observations(self, *, copy: bool) -> Any:
        """The batched observations to return: a copy (``copy``), else the buffer itself."""
        observations = self.observations
        if not copy:
            return observations
        if isinstance(observations, np.ndarray):
            return observations.copy()  # the usual Box batch: no deepcopy machinery
        return deepcopy(observations)

    def action_masks(
        self, action_codec: ActionCodec, indices: Sequence[int] | None = None
    ) -> np.ndarray:
        """The legal actions of each sub-env's last observation as ``action_codec`` masks
        them: ``(num_envs, n)`` ``bool`` (``(len(indices), n)`` for the sub-envs ``indices``).

        Raises:
            ActionMaskUnavailableError: No observation field lists the legal actions, the
                action space is not discrete, or a sub-env has not been reset yet.
        """
        legal_key = self.codec.legal_key
        if legal_key is None or not action_codec.maskable:
            raise ActionMaskUnavailableError(
                "this vector env has no action masks: they need a Discrete action space (or an "
                "enum) and an observation field listing the legal actions; action space "
                f"{action_codec.space}, legal field {legal_key!r}"
            )
        chosen = self.legal if indices is None else [self.legal[i] for i in indices]
        if any(legal is None for legal in chosen):
            raise ActionMaskUnavailableError("call reset() before action_masks()")
        return np.stack([action_codec.mask(legal, legal_key) for legal in chosen])

    def batch_of(self, indices: np.ndarray) -> Any:
        """A new batch of the observations of sub-envs ``indices``, in that order (a pool's
        ``recv``); nothing in it is shared with the buffers."""
        if self.stacked:
            return self.observations[indices]
        space = self.codec.space
        rows = [self._env_obs[i] for i in indices.tolist()]
        batch = concatenate(space, rows, create_empty_array(space, len(rows)))
        # Box-like leaves are copied into the new arrays; others (Text, Graph, ...) are not.
        return batch if _array_leaves(space) else deepcopy(batch)

    def observation_of(self, index: int) -> Any:
        """A copy of sub-env ``index``'s current observation."""
        if self.stacked:
            return np.array(self.observations[index])
        return deepcopy(self._env_obs[index])

    # ------------------------------------------------------------------ infos

    def row_info(self, result: BatchResult, position: int) -> dict[str, Any]:
        """The info of one position of a result (as the single env makes it)."""
        return reply_info(self.codec, result.reply(position))


def _array_leaves(space: gym.Space[Any]) -> bool:
    """Whether every leaf of ``space`` batches into a numpy array of its own.

    Example:
        >>> from gymnasium import spaces
        >>> _array_leaves(spaces.Dict({"a": spaces.Discrete(2), "b": spaces.Text(4)}))
        False
    """
    if isinstance(space, gym.spaces.Dict):
        return all(_array_leaves(s) for s in space.spaces.values())
    if isinstance(space, gym.spaces.Tuple):
        return all(_array_leaves(s) for s in space.spaces)
    return isinstance(
        space,
        gym.spaces.Box | gym.spaces.Discrete | gym.spaces.MultiBinary | gym.spaces.MultiDiscrete,
    )


def _flags(fields: Mapping[str, Any], key: str | None) -> np.ndarray | bool | None:
    """The boolean column ``key`` of a result as a new array; ``None`` when there is no such
    field, ``False`` when it holds anything but booleans (the row-by-row path decides)."""
    column = fields.get(key) if key else None
    if column is None:
        return None
    if isinstance(column, np.ndarray):
        return column.copy() if column.dtype == np.bool_ else False
    if isinstance(column, list) and _BOOL_ONLY.issuperset(map(type, column)):
        return np.array(column, dtype=np.bool_)
    return False


_BOOL_ONLY = frozenset({bool})

__all__ = ["BatchBuffers"]
