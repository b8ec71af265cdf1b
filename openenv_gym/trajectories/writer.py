"""Buffer transitions and write them as Parquet chunks that load as Hugging Face datasets.

One row per transition ``(s, a, r, s', terminated, truncated)``:

================  ====================================================================
column            meaning
================  ====================================================================
episode_id        int64, unique within the recording
env_index         int64, the sub-env (0 for a single env)
step              int64, index of the step within its episode (0 = first action)
observation[.k]   ``s``, the observation the action was taken in (one column per Dict entry)
action[.k]        ``a``, the action the env executed (after any exploration noise)
policy_action[.k] the policy's action before the noise (only when recorded outside an
                  action-noise wrapper: ``policy_action=True``)
reward            float64, the reward the recorder received (shaped, if shaping is below)
raw_reward        float64, ``info["raw_reward"]`` when a wrapper below set it, else reward
terminated        bool, ``s'`` is terminal (do not bootstrap)
truncated         bool, the episode was cut after this step (bootstrap from ``s'``)
next_observation  ``s'`` (one column per Dict entry): the final observation on the last
                  step of an episode, never the reset observation that follows it
info.<key>        the selected info fields (``info_keys``), null when missing on a step
================  ====================================================================

Why a ``next_observation`` column rather than Minari's extra row per episode: every row is a
whole transition, so shuffling, filtering and batching rows (``datasets``, a replay buffer)
never break ``(s, a, r, s')``, and the last observation of every episode is kept. The price
is storing each observation twice; :func:`~openenv_gym.trajectories.to_minari` converts to
Minari's ``T + 1`` observations per episode.

Memory is bounded: a chunk is written when it holds ``chunk_size`` steps or
``max_chunk_bytes`` of arrays. Crash safety: a chunk is written to a hidden temporary file,
fsynced and renamed into place, so a finished chunk is never partial; a killed process loses
at most the open chunk, and its temporary file is removed on the next open. The spaces,
columns and run metadata go into every chunk's Parquet metadata and ``metadata.json``; a
dataset card ``README.md`` describes the recording (see :mod:`.layout` for the files).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from gymnasium import spaces

from openenv_gym.errors import TrajectoryFormatError, WrapperConfigError
from openenv_gym.extras import optional_imports
from openenv_gym.spaces.serialization import space_to_json
from openenv_gym.trajectories.card import dataset_card
from openenv_gym.trajectories.columns import (
    ArrayField,
    arrow_column,
    datasets_array_types,
    space_fields,
    split_value,
)
from openenv_gym.trajectories.layout import (
    CARD_FILE,
    METADATA_FILE,
    WriterLock,
    check_free,
    chunk_files,
    chunk_path,
    delete_temp_files,
    write_atomic,
)
from openenv_gym.version import __version__

if TYPE_CHECKING:
    import pyarrow as pa

#: The ``format`` of the metadata this version writes.
FORMAT: Final = "openenv_gym.trajectories/2"
SCHEMA_KEY: Final = b"openenv_gym"
DEFAULT_CHUNK_SIZE: Final = 10_000
DEFAULT_MAX_CHUNK_BYTES: Final = 64 * 1024 * 1024
INFO_TYPES: Final = ("float64", "int64", "bool", "string")
_SCALARS: Final = {
    "episode_id": "int64",
    "env_index": "int64",
    "step": "int64",
    "reward": "float64",
    "raw_reward": "float64",
    "terminated": "bool",
    "truncated": "bool",
}


def _info_types(info_keys: Sequence[str] | Mapping[str, str]) -> dict[str, str]:
    if isinstance(info_keys, str):
        raise WrapperConfigError(
            f"info_keys must be a list of names or a name->type mapping, got {info_keys!r}"
        )
    types = (
        dict(info_keys) if isinstance(info_keys, Mapping) else dict.fromkeys(info_keys, "float64")
    )
    for key, kind in types.items():
        if kind not in INFO_TYPES:
            raise WrapperConfigError(
                f"info field {key!r} has type {kind!r}; expected one of {list(INFO_TYPES)}"
            )
    return types


class TrajectoryWriter:
    """Buffers transitions and writes them as Parquet chunks (the engine of the recorders).

    Args:
        directory: Where the recording goes; created if needed. It must not hold one yet.
        observation_space: A single env's observation space.
        action_space: A single env's action space.
        info_keys: Info fields to record: names (stored as float64), or a mapping
            name -> one of ``"float64"``, ``"int64"``, ``"bool"``, ``"string"``.
        metadata: Run metadata stored with every chunk (env id, server URL, ...).
        chunk_size: Transitions per chunk.
        max_chunk_bytes: A chunk is also written when its arrays reach this many bytes.

    Raises:
        TrajectoryFormatError: A space cannot be recorded, the directory holds a recording,
            or another live writer holds it.
        WrapperConfigError: Bad ``info_keys``, ``chunk_size`` or ``max_chunk_bytes``.
    """

    def __init__(
        self,
        directory: str | Path,
        observation_space: spaces.Space[Any],
        action_space: spaces.Space[Any],
        *,
        info_keys: Sequence[str] | Mapping[str, str] = (),
        metadata: Mapping[str, Any] | None = None,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
        policy_action: bool = False,
    ) -> None:
        with optional_imports("recording trajectories (Parquet)"):
            import pyarrow  # noqa: F401
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise WrapperConfigError(f"chunk_size must be a positive int, got {chunk_size!r}")
        if not isinstance(max_chunk_bytes, int) or max_chunk_bytes < 1:
            raise WrapperConfigError(
                f"max_chunk_bytes must be a positive int, got {max_chunk_bytes!r}"
            )
        self.info_types = _info_types(info_keys)
        self.observation_space = observation_space
        self.action_space = action_space
        self.observation_fields = space_fields("observation", observation_space)
        self.action_fields = space_fields("action", action_space)
        self.policy_action_fields = (
            space_fields("policy_action", action_space) if policy_action else []
        )
        self.next_observation_fields = space_fields("next_observation", observation_space)
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock = WriterLock(self.directory)
        try:
            delete_temp_files(self.directory)
            if chunk_files(self.directory, missing_ok=True):
                raise TrajectoryFormatError(
                    f"{str(self.directory)!r} already holds a recording; choose a new directory"
                )
            check_free(self.directory)
        except BaseException:
            self._lock.release()
            raise
        self._array_types = datasets_array_types()
        self.chunk_size = chunk_size
        self.max_chunk_bytes = max_chunk_bytes
        self.metadata: dict[str, Any] = {
            "package": "openenv-gym",
            "package_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **dict(metadata or {}),
        }
        self.chunks_written = 0
        self.steps_written = 0
        self.episodes_ended = 0
        self._next_episode = 0
        self._closed = False
        self._clear()
        self._write_summary()

    # ------------------------------------------------------------------ state

    @property
    def fields(self) -> list[ArrayField]:
        """Every array column: observations, actions, next observations."""
        return [
            *self.observation_fields,
            *self.action_fields,
            *self.policy_action_fields,
            *self.next_observation_fields,
        ]

    def _clear(self) -> None:
        self._arrays: dict[str, list[np.ndarray]] = {f.name: [] for f in self.fields}
        self._scalars: dict[str, list[Any]] = {name: [] for name in _SCALARS}
        self._info: dict[str, list[Any]] = {key: [] for key in self.info_types}
        self.buffered_steps = 0
        self.buffer_bytes = 0

    def new_episode(self) -> int:
        """A fresh episode id."""
        episode = self._next_episode
        self._next_episode += 1
        return episode

    # ------------------------------------------------------------------ writing

    def add(
        self,
        *,
        episode_id: int,
        env_index: int,
        step: int,
        observation: Any,
        action: Any,
        reward: float,
        raw_reward: float,
        terminated: bool,
        truncated: bool,
        next_observation: Any,
        info: Mapping[str, Any],
        policy_action: Any = None,
    ) -> None:
        """Buffer one transition; writes a chunk when the buffer is full. ``action`` is the
        executed action; ``policy_action`` the policy's (with ``policy_action=True``)."""
        if self._closed:
            raise TrajectoryFormatError("this trajectory writer is closed")
        if self.policy_action_fields and policy_action is None:
            raise TrajectoryFormatError(
                "this writer records a policy_action column, got policy_action=None; pass the "
                "policy's action (or make the writer with policy_action=False)"
            )
        parts = {
            **split_value("observation", observation, self.observation_fields),
            **split_value("action", action, self.action_fields),
            **split_value("policy_action", policy_action, self.policy_action_fields),
            **split_value("next_observation", next_observation, self.next_observation_fields),
        }
        for name, array in parts.items():
            self._arrays[name].append(array)
            self.buffer_bytes += array.nbytes
        row = (episode_id, env_index, step, reward, raw_reward, terminated, truncated)
        for name, value in zip(self._scalars, row, strict=True):
            self._scalars[name].append(value)
        self.buffer_bytes += 8 * len(row)
        for key, kind in self.info_types.items():
            item: Any = info.get(key)
            if isinstance(item, np.generic):
                item = item.item()
            if item is not None and kind == "string":
                item = str(item)
            self._info[key].append(item)
        self.buffered_steps += 1
        if self.buffered_steps >= self.chunk_size or self.buffer_bytes >= self.max_chunk_bytes:
            self.flush()

    def description(self) -> dict[str, Any]:
        """What a reader needs: format, spaces, columns and run metadata (JSON-able)."""
        return {
            "format": FORMAT,
            "metadata": self.metadata,
            "observation_space": space_to_json(self.observation_space),
            "action_space": space_to_json(self.action_space),
            "fields": {f.name: {"shape": list(f.shape), "dtype": f.dtype} for f in self.fields},
            "info_types": self.info_types,
        }

    def _features(self) -> dict[str, Any]:
        features: dict[str, Any] = {}
        for name in ("episode_id", "env_index", "step"):
            features[name] = {"dtype": _SCALARS[name], "_type": "Value"}
        for field in (*self.observation_fields, *self.action_fields, *self.policy_action_fields):
            features[field.name] = field.feature()
        for name in ("reward", "raw_reward", "terminated", "truncated"):
            features[name] = {"dtype": _SCALARS[name], "_type": "Value"}
        for field in self.next_observation_fields:
            features[field.name] = field.feature()
        for key, kind in self.info_types.items():
            features[f"info.{key}"] = {"dtype": kind, "_type": "Value"}
        return features

    def _table(self) -> pa.Table:
        import pyarrow as pa

        arrow_types = {
            "float64": pa.float64(),
            "int64": pa.int64(),
            "bool": pa.bool_(),
            "string": pa.string(),
        }
        columns: dict[str, pa.Array] = {}
        for name in self._features():
            if name in _SCALARS:
                columns[name] = pa.array(self._scalars[name], arrow_types[_SCALARS[name]])
            elif name in self._arrays:
                field = next(f for f in self.fields if f.name == name)
                batch = np.stack(self._arrays[name])
                columns[name] = arrow_column(batch, field, self._array_types)
        for key, kind in self.info_types.items():
            try:
                columns[f"info.{key}"] = pa.array(self._info[key], arrow_types[kind])
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
                raise TrajectoryFormatError(
                    f"info field {key!r} is recorded as {kind} but holds values like "
                    f"{self._info[key][:3]!r}; pass info_keys={{{key!r}: <type>}}"
                ) from exc
        table = pa.table(columns)
        schema_metadata = {
            SCHEMA_KEY: json.dumps(self.description(), default=str).encode(),
            b"huggingface": json.dumps({"info": {"features": self._features()}}).encode(),
        }
        return table.replace_schema_metadata(schema_metadata)

    def flush(self) -> Path | None:
        """Write the open chunk (if it holds steps); return its path."""
        if self.buffered_steps == 0:
            return None
        import pyarrow.parquet as pq

        table = self._table()
        path = chunk_path(self.directory, self.chunks_written)
        # Array columns (images) skip dictionary encoding and statistics: on nested lists of
        # pixels they cost most of the write time; zstd then compresses them well.
        arrays = {field.name for field in self.fields}
        plain = [name for name in table.column_names if name not in arrays]
        write_atomic(
            path,
            lambda tmp: pq.write_table(
                table, tmp, compression="zstd", use_dictionary=plain, write_statistics=plain
            ),
        )
        self.chunks_written += 1
        self.steps_written += self.buffered_steps
        ends = np.logical_or(self._scalars["terminated"], self._scalars["truncated"])
        self.episodes_ended += int(ends.sum())
        self._clear()
        self._write_summary()
        return path

    def _write_summary(self) -> None:
        summary = {
            **self.description(),
            "chunks": self.chunks_written,
            "steps": self.steps_written,
            "episodes_ended": self.episodes_ended,
        }
        text = json.dumps(summary, indent=2, default=str)
        write_atomic(self.directory / METADATA_FILE, lambda tmp: tmp.write_text(text))
        card = dataset_card(summary)
        write_atomic(self.directory / CARD_FILE, lambda tmp: tmp.write_text(card))

    def write_file(self, name: str, text: str) -> Path:
        """Write a file beside the data (atomically), e.g. the experiment config."""
        path = self.directory / name
        write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        return path

    def close(self) -> None:
        """Write the open chunk and release the directory. Idempotent."""
        if self._closed:
            return
        try:
            self.flush()
        finally:
            self._closed = True
            self._lock.release()
