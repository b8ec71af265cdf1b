"""Trajectory logging to Parquet chunks that load as Hugging Face datasets.

:class:`RecordTrajectories` (single env) and :class:`VectorRecordTrajectories` (Gymnasium
``VectorEnv``) write one row per step into ``directory/chunk-000000.parquet``, ... :

================  ====================================================================
column            meaning
================  ====================================================================
episode_id        int64, unique within the recording
env_index         int64, the sub-env (0 for a single env)
step              int64, index of the step within its episode (0 = first action)
observation[.k]   the observation the action was taken in (one column per Dict entry)
action[.k]        the action
reward            float64, the reward this wrapper received (shaped, if shaping is below)
raw_reward        float64, ``info["raw_reward"]`` when a wrapper below set it, else reward
terminated        bool
truncated         bool
info.<key>        the selected info fields (``info_keys``), null when missing on a step
================  ====================================================================

Arrays keep their shape and dtype: in the Parquet schema metadata (``openenv_gym``) for
:func:`trajectory_arrays`, and as ``datasets`` features (``huggingface``), so
``datasets.Dataset.from_parquet(files)`` / ``load_dataset("parquet", data_files=...)`` give
``Array2D``-``Array5D`` / fixed-length ``List`` columns with the original dtype.

Memory is bounded: a chunk is written when it holds ``chunk_size`` steps or
``max_chunk_bytes`` of arrays, then the buffer is dropped. Crash safety: each chunk is written
to a hidden temporary file, fsynced and renamed into place, so a finished chunk is never
partial; a killed process loses at most the open chunk. Run metadata (env id, server URL,
seed, package version) goes to every chunk and to ``metadata.json``.

Example:
    >>> import gymnasium as gym, tempfile
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

import contextlib
import json
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper

from openenv_gym.errors import HubPushError, TrajectoryFormatError, WrapperConfigError
from openenv_gym.wrappers.shaping import RAW_REWARD_KEY, _index, _info_at

if TYPE_CHECKING:
    import pyarrow as pa
    from datasets import Dataset

CHUNK_PREFIX: Final = "chunk-"
CHUNK_SUFFIX: Final = ".parquet"
METADATA_FILE: Final = "metadata.json"
SCHEMA_KEY: Final = b"openenv_gym"
DEFAULT_CHUNK_SIZE: Final = 10_000
DEFAULT_MAX_CHUNK_BYTES: Final = 64 * 1024 * 1024
INFO_TYPES: Final = ("float64", "int64", "bool", "string")
_SCALAR_COLUMNS: Final = (
    "episode_id",
    "env_index",
    "step",
    "reward",
    "raw_reward",
    "terminated",
    "truncated",
)


@dataclass(frozen=True)
class ArrayField:
    """One recorded column holding arrays of a fixed shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    def feature(self) -> dict[str, Any]:
        """The ``datasets`` feature (as ``Features.to_dict()`` writes it)."""
        value = {"dtype": self.dtype, "_type": "Value"}
        if not self.shape:
            return value
        if len(self.shape) == 1:
            return {"feature": value, "length": self.shape[0], "_type": "List"}
        if len(self.shape) <= 5:
            return {
                "shape": list(self.shape),
                "dtype": self.dtype,
                "_type": f"Array{len(self.shape)}D",
            }
        return {"feature": value, "_type": "List"}  # stored flat; trajectory_arrays reshapes


def space_fields(prefix: str, space: spaces.Space[Any]) -> list[ArrayField]:
    """The columns a space is recorded in (``Dict`` entries become ``prefix.key``).

    Raises:
        TrajectoryFormatError: The space is not Box, Discrete, MultiDiscrete, MultiBinary
            or a Dict of those.
    """
    if isinstance(space, spaces.Box):
        return [ArrayField(prefix, tuple(space.shape), np.dtype(space.dtype).name)]
    if isinstance(space, spaces.Discrete):
        return [ArrayField(prefix, (), "int64")]
    if isinstance(space, spaces.MultiDiscrete):
        return [ArrayField(prefix, tuple(space.nvec.shape), "int64")]
    if isinstance(space, spaces.MultiBinary):
        return [ArrayField(prefix, tuple(np.atleast_1d(space.n).tolist()), "int8")]
    if isinstance(space, spaces.Dict):
        return [f for k, sub in space.spaces.items() for f in space_fields(f"{prefix}.{k}", sub)]
    raise TrajectoryFormatError(
        f"cannot record {prefix} of space {space}: expected Box, Discrete, MultiDiscrete, "
        "MultiBinary or a Dict of those; record a flattened view "
        "(gymnasium.wrappers.FlattenObservation) instead"
    )


def _split(prefix: str, value: Any, fields: Sequence[ArrayField]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for field in fields:
        item = value
        for key in field.name[len(prefix) :].split(".")[1:]:
            item = item[key]
        out[field.name] = np.asarray(item, dtype=field.dtype).reshape(field.shape)
    return out


def _datasets_array_types() -> dict[int, Any]:
    """``datasets``' Array2D..Array5D Arrow extension types by rank, or ``{}`` without it.

    Writing array columns with these types lets ``datasets`` restore ``ArrayND`` features
    (shape and dtype) from the Parquet files; without ``datasets`` the columns are plain
    nested lists, which :func:`trajectory_arrays` reshapes the same way.
    """
    try:
        from datasets.features import features as hf
    except ImportError:
        return {}
    return {
        2: hf.Array2DExtensionType,
        3: hf.Array3DExtensionType,
        4: hf.Array4DExtensionType,
        5: hf.Array5DExtensionType,
    }


def _nested_array(batch: np.ndarray, field: ArrayField, array_types: Mapping[int, Any]) -> Any:
    import pyarrow as pa

    flat = pa.array(batch.reshape(-1))
    if not field.shape:
        return flat
    if len(field.shape) == 1:
        return pa.FixedSizeListArray.from_arrays(flat, field.shape[0])
    if len(field.shape) > 5:
        size = int(np.prod(field.shape))
        offsets = np.arange(0, len(batch) * size + 1, size, dtype=np.int32)
        return pa.ListArray.from_arrays(pa.array(offsets), flat)
    array: Any = flat
    count = batch.shape[0] * int(np.prod(field.shape))
    for dim in reversed(field.shape):
        count //= dim
        offsets = np.arange(0, (count + 1) * dim, dim, dtype=np.int32)
        array = pa.ListArray.from_arrays(pa.array(offsets), array)
    array_type = array_types.get(len(field.shape))
    if array_type is not None:
        array = pa.ExtensionArray.from_storage(array_type(field.shape, field.dtype), array)
    return array


def _package_version() -> str:
    from openenv_gym import __version__

    return __version__


def _write_atomic(path: Path, write: Any) -> None:
    """Write via a hidden temp file in the same directory, fsync, rename, fsync the dir."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        write(tmp)
        with open(tmp, "rb") as file:
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class TrajectoryWriter:
    """Buffers steps and writes them as Parquet chunks (the engine of the wrappers).

    Args:
        directory: Where the chunks go; created if needed. It must not hold a recording yet.
        observation_space: A single env's observation space.
        action_space: A single env's action space.
        info_keys: Info fields to record: names (stored as float64), or a mapping
            name -> one of ``"float64"``, ``"int64"``, ``"bool"``, ``"string"``.
        metadata: Run metadata stored with every chunk (env id, server URL, ...).
        chunk_size: Steps per chunk.
        max_chunk_bytes: A chunk is also written when its arrays reach this many bytes.

    Raises:
        TrajectoryFormatError: A space cannot be recorded, or the directory holds a recording.
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
    ) -> None:
        try:
            import pyarrow  # noqa: F401
        except ImportError as exc:
            raise TrajectoryFormatError(
                "trajectory logging needs pyarrow: pip install 'openenv-gym[datasets]'"
            ) from exc
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise WrapperConfigError(f"chunk_size must be a positive int, got {chunk_size!r}")
        if not isinstance(max_chunk_bytes, int) or max_chunk_bytes < 1:
            raise WrapperConfigError(
                f"max_chunk_bytes must be a positive int, got {max_chunk_bytes!r}"
            )
        if isinstance(info_keys, str):
            raise WrapperConfigError(
                f"info_keys must be a list of names or a name->type mapping, got {info_keys!r}"
            )
        types = (
            dict(info_keys)
            if isinstance(info_keys, Mapping)
            else dict.fromkeys(info_keys, "float64")
        )
        for key, kind in types.items():
            if kind not in INFO_TYPES:
                raise WrapperConfigError(
                    f"info field {key!r} has type {kind!r}; expected one of {list(INFO_TYPES)}"
                )
        self.info_types = types
        self.observation_fields = space_fields("observation", observation_space)
        self.action_fields = space_fields("action", action_space)
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        if trajectory_files(self.directory, missing_ok=True):
            raise TrajectoryFormatError(
                f"{str(self.directory)!r} already holds a recording; choose a new directory"
            )
        self._array_types = _datasets_array_types()
        self.chunk_size = chunk_size
        self.max_chunk_bytes = max_chunk_bytes
        self.metadata: dict[str, Any] = {
            "package": "openenv-gym",
            "package_version": _package_version(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **dict(metadata or {}),
        }
        self.chunks_written = 0
        self.steps_written = 0
        self._next_episode = 0
        self._closed = False
        self._clear()
        self._write_metadata()

    # ------------------------------------------------------------------ state

    def _clear(self) -> None:
        self._arrays: dict[str, list[np.ndarray]] = {
            f.name: [] for f in (*self.observation_fields, *self.action_fields)
        }
        self._scalars: dict[str, list[Any]] = {
            name: []
            for name in (
                "episode_id",
                "env_index",
                "step",
                "reward",
                "raw_reward",
                "terminated",
                "truncated",
            )
        }
        self._info: dict[str, list[Any]] = {key: [] for key in self.info_types}
        self.buffered_steps = 0
        self.buffer_bytes = 0

    def new_episode(self) -> int:
        """A fresh episode id."""
        episode = self._next_episode
        self._next_episode += 1
        return episode

    @property
    def fields(self) -> list[ArrayField]:
        """Every array column, observations then actions."""
        return [*self.observation_fields, *self.action_fields]

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
        info: Mapping[str, Any],
    ) -> None:
        """Buffer one step; writes a chunk when the buffer is full."""
        if self._closed:
            raise TrajectoryFormatError("this trajectory writer is closed")
        parts = {
            **_split("observation", observation, self.observation_fields),
            **_split("action", action, self.action_fields),
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

    def _schema_metadata(self) -> dict[bytes, bytes]:
        fields = {f.name: {"shape": list(f.shape), "dtype": f.dtype} for f in self.fields}
        features: dict[str, Any] = {
            "episode_id": {"dtype": "int64", "_type": "Value"},
            "env_index": {"dtype": "int64", "_type": "Value"},
            "step": {"dtype": "int64", "_type": "Value"},
        }
        features.update({f.name: f.feature() for f in self.observation_fields})
        features.update({f.name: f.feature() for f in self.action_fields})
        features.update(
            {
                "reward": {"dtype": "float64", "_type": "Value"},
                "raw_reward": {"dtype": "float64", "_type": "Value"},
                "terminated": {"dtype": "bool", "_type": "Value"},
                "truncated": {"dtype": "bool", "_type": "Value"},
            }
        )
        for key, kind in self.info_types.items():
            features[f"info.{key}"] = {"dtype": kind, "_type": "Value"}
        ours = {"metadata": self.metadata, "fields": fields, "info_types": self.info_types}
        return {
            SCHEMA_KEY: json.dumps(ours, default=str).encode(),
            b"huggingface": json.dumps({"info": {"features": features}}).encode(),
        }

    def _table(self) -> pa.Table:
        import pyarrow as pa

        columns: dict[str, pa.Array] = {
            "episode_id": pa.array(self._scalars["episode_id"], pa.int64()),
            "env_index": pa.array(self._scalars["env_index"], pa.int64()),
            "step": pa.array(self._scalars["step"], pa.int64()),
        }
        for field in self.fields:
            batch = np.stack(self._arrays[field.name])
            columns[field.name] = _nested_array(batch, field, self._array_types)
        columns["reward"] = pa.array(self._scalars["reward"], pa.float64())
        columns["raw_reward"] = pa.array(self._scalars["raw_reward"], pa.float64())
        columns["terminated"] = pa.array(self._scalars["terminated"], pa.bool_())
        columns["truncated"] = pa.array(self._scalars["truncated"], pa.bool_())
        arrow_types = {
            "float64": pa.float64(),
            "int64": pa.int64(),
            "bool": pa.bool_(),
            "string": pa.string(),
        }
        for key, kind in self.info_types.items():
            try:
                columns[f"info.{key}"] = pa.array(self._info[key], arrow_types[kind])
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
                raise TrajectoryFormatError(
                    f"info field {key!r} is recorded as {kind} but holds values like "
                    f"{self._info[key][:3]!r}; pass info_keys={{{key!r}: <type>}}"
                ) from exc
        table = pa.table(columns)
        return table.replace_schema_metadata(self._schema_metadata())

    def flush(self) -> Path | None:
        """Write the open chunk (if it holds steps); return its path."""
        if self.buffered_steps == 0:
            return None
        import pyarrow.parquet as pq

        table = self._table()
        path = self.directory / f"{CHUNK_PREFIX}{self.chunks_written:06d}{CHUNK_SUFFIX}"
        _write_atomic(path, lambda tmp: pq.write_table(table, tmp))
        self.chunks_written += 1
        self.steps_written += self.buffered_steps
        self._clear()
        self._write_metadata()
        return path

    def _write_metadata(self) -> None:
        body = {
            "metadata": self.metadata,
            "fields": {f.name: {"shape": list(f.shape), "dtype": f.dtype} for f in self.fields},
            "info_types": self.info_types,
            "chunks": self.chunks_written,
            "steps": self.steps_written,
        }
        text = json.dumps(body, indent=2, default=str)
        _write_atomic(self.directory / METADATA_FILE, lambda tmp: tmp.write_text(text))

    def close(self) -> None:
        """Write the open chunk. Idempotent."""
        if self._closed:
            return
        self.flush()
        self._closed = True


def _run_metadata(env: Any, env_id: str | None, extra: Mapping[str, Any] | None) -> dict[str, Any]:
    spec = getattr(env, "spec", None)
    unwrapped = getattr(env, "unwrapped", env)
    return {
        "env_id": env_id or (spec.id if spec is not None else None),
        "server_url": getattr(unwrapped, "base_url", None),
        "seed": None,
        **dict(extra or {}),
    }


class RecordTrajectories(gym.Wrapper[Any, Any, Any, Any]):
    """Record every step of a single env to Parquet chunks (see the module docstring).

    Args:
        env: The env.
        directory: Output directory (must not hold a recording yet).
        info_keys: Info fields to record (names, or name -> type).
        chunk_size: Steps per chunk.
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
        super().__init__(env)
        self.writer = TrajectoryWriter(
            directory,
            env.observation_space,
            env.action_space,
            info_keys=info_keys,
            metadata=_run_metadata(env, env_id, metadata),
            chunk_size=chunk_size,
            max_chunk_bytes=max_chunk_bytes,
        )
        self._observation: Any = None
        self._episode = -1
        self._step = 0
        self._seeded = False

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        if seed is not None and not self._seeded:
            self.writer.metadata["seed"] = seed
            self._seeded = True
        self._observation = observation
        self._episode = self.writer.new_episode()
        self._step = 0
        return observation, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        if self._observation is None:
            raise gym.error.ResetNeeded("call reset() before step() on a RecordTrajectories env")
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.writer.add(
            episode_id=self._episode,
            env_index=0,
            step=self._step,
            observation=self._observation,
            action=action,
            reward=float(reward),
            raw_reward=float(info.get(RAW_REWARD_KEY, reward)),
            terminated=bool(terminated),
            truncated=bool(truncated),
            info=info,
        )
        self._observation = observation
        self._step += 1
        return observation, reward, terminated, truncated, info

    def close(self) -> None:
        try:
            self.writer.close()
        finally:
            super().close()

    def push_to_hub(self, repo_id: str, **kwargs: Any) -> str:
        """Write the open chunk, then :func:`push_to_hub` the directory."""
        self.writer.flush()
        return push_to_hub(self.writer.directory, repo_id, **kwargs)


class VectorRecordTrajectories(VectorWrapper):
    """Record every sub-env step of a Gymnasium ``VectorEnv`` (``env_index`` tells them apart).

    Takes the arguments of :class:`RecordTrajectories`. Supports the ``NEXT_STEP`` autoreset
    mode (the reset step after an episode end is not a transition and is not recorded),
    ``SAME_STEP`` and ``DISABLED``.
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
        super().__init__(env)
        first = getattr(env, "envs", [None])[0]
        self.writer = TrajectoryWriter(
            directory,
            env.single_observation_space,
            env.single_action_space,
            info_keys=info_keys,
            metadata=_run_metadata(first if first is not None else env, env_id, metadata),
            chunk_size=chunk_size,
            max_chunk_bytes=max_chunk_bytes,
        )
        self._mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        n = env.num_envs
        self._observations: list[Any] = [None] * n
        self._episodes = [-1] * n
        self._steps = [0] * n
        self._autoreset = np.zeros(n, dtype=bool)
        self._seeded = False

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observations, info = self.env.reset(seed=seed, options=options)  # type: ignore[arg-type]
        if seed is not None and not self._seeded:
            self.writer.metadata["seed"] = seed
            self._seeded = True
        mask = (options or {}).get("reset_mask")
        for i in range(self.num_envs):
            if mask is None or bool(mask[i]):
                self._begin(i, _index(observations, i))
        return observations, info

    def _begin(self, i: int, observation: Any) -> None:
        self._observations[i] = observation
        self._episodes[i] = self.writer.new_episode()
        self._steps[i] = 0
        self._autoreset[i] = False

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        observations, rewards, terminations, truncations, info = self.env.step(actions)
        raw = info.get(RAW_REWARD_KEY) if isinstance(info, Mapping) else None
        for i in range(self.num_envs):
            next_obs = _index(observations, i)
            if self._autoreset[i] or self._observations[i] is None:
                self._begin(i, next_obs)
                continue
            self.writer.add(
                episode_id=self._episodes[i],
                env_index=i,
                step=self._steps[i],
                observation=self._observations[i],
                action=_index(actions, i),
                reward=float(rewards[i]),
                raw_reward=float(raw[i] if raw is not None else rewards[i]),
                terminated=bool(terminations[i]),
                truncated=bool(truncations[i]),
                info=_info_at(info, i),
            )
            self._observations[i] = next_obs
            self._steps[i] += 1
            if bool(terminations[i]) or bool(truncations[i]):
                if self._mode == AutoresetMode.NEXT_STEP:
                    self._autoreset[i] = True
                elif self._mode == AutoresetMode.SAME_STEP:
                    self._begin(i, next_obs)
                else:
                    self._observations[i] = None
        return observations, rewards, terminations, truncations, info

    def close(self, **kwargs: Any) -> None:
        try:
            self.writer.close()
        finally:
            super().close(**kwargs)

    def push_to_hub(self, repo_id: str, **kwargs: Any) -> str:
        """Write the open chunk, then :func:`push_to_hub` the directory."""
        self.writer.flush()
        return push_to_hub(self.writer.directory, repo_id, **kwargs)


# --------------------------------------------------------------------------- reading


def trajectory_files(directory: str | Path, *, missing_ok: bool = False) -> list[Path]:
    """The finished chunks of a recording, in order (temporary files are never listed).

    Raises:
        TrajectoryFormatError: ``directory`` does not exist (unless ``missing_ok``).
    """
    directory = Path(directory)
    if not directory.is_dir():
        if missing_ok:
            return []
        raise TrajectoryFormatError(f"{str(directory)!r} is not a directory of trajectories")
    return sorted(directory.glob(f"{CHUNK_PREFIX}*{CHUNK_SUFFIX}"))


def trajectory_metadata(directory: str | Path) -> dict[str, Any]:
    """The run metadata and array fields of a recording (from its first chunk)."""
    files = trajectory_files(directory)
    if not files:
        raise TrajectoryFormatError(f"{str(directory)!r} holds no finished chunk")
    return _chunk_metadata(files[0])


def _chunk_metadata(path: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (OSError, ValueError) as exc:
        raise TrajectoryFormatError(f"{str(path)!r} is not a readable Parquet file: {exc}") from exc
    raw = (schema.metadata or {}).get(SCHEMA_KEY)
    if raw is None:
        raise TrajectoryFormatError(
            f"{str(path)!r} was not written by openenv-gym (no {SCHEMA_KEY.decode()} metadata)"
        )
    return dict(json.loads(raw))


def _to_numpy(column: Any, shape: Sequence[int], dtype: str) -> np.ndarray:
    import pyarrow as pa

    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if isinstance(array.type, pa.ExtensionType):
        array = array.storage
    while pa.types.is_list(array.type) or pa.types.is_fixed_size_list(array.type):
        array = array.flatten()
    values = array.to_numpy(zero_copy_only=False).astype(dtype, copy=False)
    return values.reshape((-1, *shape))


def trajectory_arrays(
    directory: str | Path, columns: Iterable[str] | None = None
) -> dict[str, np.ndarray]:
    """Every column of a recording as numpy arrays, array fields with shape and dtype restored.

    Raises:
        TrajectoryFormatError: No finished chunk, or a file not written by openenv-gym.
    """
    import pyarrow.parquet as pq

    files = trajectory_files(directory)
    if not files:
        raise TrajectoryFormatError(f"{str(directory)!r} holds no finished chunk")
    fields = _chunk_metadata(files[0])["fields"]
    try:
        table = pq.read_table(files, columns=list(columns) if columns is not None else None)
    except (OSError, ValueError) as exc:
        raise TrajectoryFormatError(f"cannot read the chunks of {str(directory)!r}: {exc}") from exc
    out: dict[str, np.ndarray] = {}
    for name in table.column_names:
        column = table.column(name)
        if name in fields:
            out[name] = _to_numpy(column, fields[name]["shape"], fields[name]["dtype"])
        else:
            out[name] = column.to_numpy()
    return out


def load_trajectories(directory: str | Path) -> Dataset:
    """A recording as a ``datasets.Dataset`` (arrays as ``Array2D``... / fixed-length lists)."""
    try:
        from datasets import Dataset
    except ImportError as exc:
        raise TrajectoryFormatError(
            "loading as a dataset needs datasets: pip install 'openenv-gym[datasets]'"
        ) from exc
    files = trajectory_files(directory)
    if not files:
        raise TrajectoryFormatError(f"{str(directory)!r} holds no finished chunk")
    return Dataset.from_parquet([str(f) for f in files])


# --------------------------------------------------------------------------- hub


def push_to_hub(
    directory: str | Path,
    repo_id: str,
    *,
    token: str | None = None,
    private: bool | None = None,
    endpoint: str | None = None,
    timeout: float = 10.0,
) -> str:
    """Upload a recording's chunks and ``metadata.json`` to a Hugging Face dataset repo.

    Fails fast (no hang) when offline: ``HF_HUB_OFFLINE`` is honoured, and the endpoint is
    probed with ``timeout`` seconds before anything else.

    Returns:
        The dataset URL.

    Raises:
        HubPushError: Offline, unreachable, not logged in, or the upload failed.
        TrajectoryFormatError: ``directory`` holds no finished chunk.
    """
    import httpx

    files = trajectory_files(directory)
    if not files:
        raise TrajectoryFormatError(f"{str(directory)!r} holds no finished chunk to push")
    try:
        from huggingface_hub import HfApi, constants
    except ImportError as exc:
        raise HubPushError(
            "pushing needs huggingface_hub: pip install 'openenv-gym[datasets]'"
        ) from exc
    # The live environment decides (huggingface_hub reads HF_HUB_OFFLINE once, at import).
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}:
        raise HubPushError(
            f"cannot push {repo_id!r}: HF_HUB_OFFLINE is set; unset it on a machine with "
            f"network access, or copy {str(directory)!r} there and push from it"
        )
    endpoint = (endpoint or constants.ENDPOINT).rstrip("/")
    try:
        httpx.head(endpoint, timeout=timeout)
    except httpx.HTTPError as exc:
        raise HubPushError(
            f"cannot push {repo_id!r}: the Hub at {endpoint} is not reachable within "
            f"{timeout}s ({type(exc).__name__}: {exc}); check the network or set "
            "HF_ENDPOINT, then retry"
        ) from exc
    api = HfApi(endpoint=endpoint, token=token)
    try:
        url = api.create_repo(repo_id, repo_type="dataset", exist_ok=True, private=private)
        api.upload_folder(
            folder_path=str(directory),
            repo_id=repo_id,
            repo_type="dataset",
            allow_patterns=[f"{CHUNK_PREFIX}*{CHUNK_SUFFIX}", METADATA_FILE],
        )
    except Exception as exc:
        raise HubPushError(
            f"pushing {str(directory)!r} to the dataset repo {repo_id!r} at {endpoint} failed "
            f"({type(exc).__name__}: {exc}); log in with `hf auth login` or pass token=..."
        ) from exc
    return str(url)
