"""Read a recording back: numpy arrays, a ``datasets.Dataset``, the spaces, whole episodes.

Every reader first removes the temporary files a killed writer left (never those of a live
writer, see :mod:`.layout`), then reads the finished chunks only.

Example:
    >>> import gymnasium as gym, tempfile
    >>> from openenv_gym.wrappers import RecordTrajectories
    >>> out = tempfile.mkdtemp()
    >>> env = RecordTrajectories(gym.make("CartPole-v1"), out)
    >>> _ = env.reset(seed=0)
    >>> for _ in range(30):
    ...     _, _, terminated, truncated, _ = env.step(1)
    ...     if terminated or truncated:
    ...         break
    >>> env.close()
    >>> arrays = trajectory_arrays(out)
    >>> arrays["observation"].shape == arrays["next_observation"].shape
    True
    >>> bool(arrays["terminated"][-1]), trajectory_spaces(out)[1]
    (True, Discrete(2))
    >>> sorted(to_d4rl(out))
    ['actions', 'next_observations', 'observations', 'rewards', 'terminals', 'timeouts']
    >>> episode = next(iter_episodes(out))
    >>> len(episode.observations) == len(episode.actions) + 1
    True
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from openenv_gym.errors import SpaceMappingError, TrajectoryFormatError
from openenv_gym.extras import optional_imports
from openenv_gym.spaces.serialization import space_from_json
from openenv_gym.trajectories.columns import column_to_numpy, join_fields
from openenv_gym.trajectories.layout import chunk_files, remove_stale_temp_files
from openenv_gym.trajectories.writer import SCHEMA_KEY

if TYPE_CHECKING:
    from datasets import Dataset

__all__ = [
    "Episode",
    "iter_episodes",
    "load_trajectories",
    "to_d4rl",
    "trajectory_arrays",
    "trajectory_files",
    "trajectory_metadata",
    "trajectory_spaces",
]


#: What the readers tell a user who lacks pyarrow (the ``[datasets]`` extra).
READING = "reading a recording (Parquet)"


def trajectory_files(directory: str | Path, *, missing_ok: bool = False) -> list[Path]:
    """The finished chunks of a recording, in order; stale temporary files are removed.

    Raises:
        TrajectoryFormatError: ``directory`` does not exist (unless ``missing_ok``).
    """
    remove_stale_temp_files(directory)
    return chunk_files(directory, missing_ok=missing_ok)


def _first_chunk(directory: str | Path) -> Path:
    files = trajectory_files(directory)
    if not files:
        raise TrajectoryFormatError(
            f"{str(directory)!r} holds no finished chunk (nothing recorded, or the writer was "
            "killed before its first chunk)"
        )
    return files[0]


def _chunk_metadata(path: Path) -> dict[str, Any]:
    with optional_imports(READING):
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


def trajectory_metadata(directory: str | Path) -> dict[str, Any]:
    """Format, run metadata, spaces (as JSON) and columns of a recording (from its chunks).

    Raises:
        TrajectoryFormatError: No finished chunk, or one not written by openenv-gym.
    """
    return _chunk_metadata(_first_chunk(directory))


def trajectory_spaces(directory: str | Path) -> tuple[spaces.Space[Any], spaces.Space[Any]]:
    """The single-env ``(observation_space, action_space)`` the recording was made with.

    Raises:
        TrajectoryFormatError: No finished chunk, or spaces that cannot be rebuilt.
    """
    meta = trajectory_metadata(directory)
    try:
        return space_from_json(meta["observation_space"]), space_from_json(meta["action_space"])
    except (KeyError, SpaceMappingError) as exc:
        raise TrajectoryFormatError(
            f"the spaces of {str(directory)!r} cannot be rebuilt ({exc}); it was written by "
            f"openenv-gym {meta.get('metadata', {}).get('package_version')}"
        ) from exc


def trajectory_arrays(
    directory: str | Path, columns: Iterable[str] | None = None
) -> dict[str, np.ndarray]:
    """Every column (or ``columns``) as numpy arrays, array fields with shape and dtype restored.

    Raises:
        TrajectoryFormatError: No finished chunk, or a file not written by openenv-gym.
        MissingExtraError: pyarrow is not installed (``pip install 'openenv-gym[datasets]'``).
    """
    with optional_imports(READING):
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
            out[name] = column_to_numpy(column, fields[name]["shape"], fields[name]["dtype"])
        else:
            out[name] = column.to_numpy()
    return out


def load_trajectories(directory: str | Path) -> Dataset:
    """A recording as a ``datasets.Dataset`` (arrays as ``Array2D``... / fixed-length lists).

    The same as ``datasets.load_dataset("parquet", data_dir=directory, split="train")``
    without the cache copy.
    """
    with optional_imports("loading a recording as a datasets.Dataset"):
        from datasets import Dataset
    files = trajectory_files(directory)
    if not files:
        raise TrajectoryFormatError(f"{str(directory)!r} holds no finished chunk")
    return Dataset.from_parquet([str(f) for f in files])


def to_d4rl(directory: str | Path) -> dict[str, np.ndarray]:
    """The recording as D4RL's ``get_dataset()`` dict (Box observations and actions).

    Keys: ``observations``, ``actions``, ``rewards``, ``next_observations``, ``terminals``
    (``terminated``) and ``timeouts`` (``truncated``).

    Raises:
        TrajectoryFormatError: Dict observations or actions (D4RL has one array each).
    """
    arrays = trajectory_arrays(directory)
    if "observation" not in arrays or "action" not in arrays:
        raise TrajectoryFormatError(
            f"{str(directory)!r} has Dict observations or actions; D4RL's layout has one array "
            "each: use trajectory_arrays() or iter_episodes() instead"
        )
    return {
        "observations": arrays["observation"],
        "actions": arrays["action"],
        "rewards": arrays["reward"],
        "next_observations": arrays["next_observation"],
        "terminals": arrays["terminated"],
        "timeouts": arrays["truncated"],
    }


@dataclass(frozen=True)
class Episode:
    """One episode in Minari's layout: ``T + 1`` observations, ``T`` of everything else.

    Attributes:
        id: The recording's ``episode_id``.
        env_index: The sub-env that played it.
        observations: ``s_0 .. s_T`` (a dict of arrays for ``Dict`` spaces).
        actions: ``a_0 .. a_{T-1}``.
        rewards, raw_rewards, terminations, truncations: per transition.
    """

    id: int
    env_index: int
    observations: Any
    actions: Any
    rewards: np.ndarray
    raw_rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray

    @property
    def finished(self) -> bool:
        """Whether the last transition ended the episode (not cut by the end of recording)."""
        return bool(self.terminations[-1] or self.truncations[-1])

    def __len__(self) -> int:
        return len(self.rewards)


def _rows(value: Any, rows: np.ndarray) -> Any:
    if isinstance(value, dict):
        return {key: _rows(sub, rows) for key, sub in value.items()}
    return value[rows]


def _append(first: Any, last: Any) -> Any:
    if isinstance(first, dict):
        return {key: _append(first[key], last[key]) for key in first}
    return np.concatenate([first, last[-1:]])


def iter_episodes(directory: str | Path) -> Iterator[Episode]:
    """The recording's episodes in ``episode_id`` order, rows in step order.

    Raises:
        TrajectoryFormatError: An episode's steps are not ``0..T-1`` (a damaged recording).
    """
    observation_space, action_space = trajectory_spaces(directory)
    arrays = trajectory_arrays(directory)
    observations = join_fields("observation", observation_space, arrays)
    next_observations = join_fields("next_observation", observation_space, arrays)
    actions = join_fields("action", action_space, arrays)
    order = np.lexsort((arrays["step"], arrays["episode_id"]))
    ids = arrays["episode_id"][order]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    for start, stop in zip(starts, [*starts[1:], len(order)], strict=True):
        rows = order[start:stop]
        if not np.array_equal(arrays["step"][rows], np.arange(len(rows))):
            raise TrajectoryFormatError(
                f"episode {int(ids[start])} of {str(directory)!r} has steps "
                f"{arrays['step'][rows][:10].tolist()}..., expected 0, 1, 2, ..."
            )
        yield Episode(
            id=int(ids[start]),
            env_index=int(arrays["env_index"][rows[0]]),
            observations=_append(_rows(observations, rows), _rows(next_observations, rows)),
            actions=_rows(actions, rows),
            rewards=arrays["reward"][rows],
            raw_rewards=arrays["raw_reward"][rows],
            terminations=arrays["terminated"][rows],
            truncations=arrays["truncated"][rows],
        )
