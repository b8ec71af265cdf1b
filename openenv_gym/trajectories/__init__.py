"""Recorded trajectories: the Parquet writer, readers, the Hub push and the Minari export.

* :mod:`~openenv_gym.trajectories.writer`: :class:`TrajectoryWriter` (the recorders'
  engine; the wrappers are :class:`~openenv_gym.wrappers.RecordTrajectories` and
  :class:`~openenv_gym.wrappers.VectorRecordTrajectories`).
* :mod:`~openenv_gym.trajectories.reader`: :func:`trajectory_arrays` (numpy),
  :func:`load_trajectories` (``datasets``), :func:`trajectory_spaces`,
  :func:`iter_episodes` (Minari's layout), :func:`to_d4rl` (D4RL's),
  :func:`trajectory_metadata`, :func:`trajectory_files`.
* :mod:`~openenv_gym.trajectories.hub`: :func:`push_to_hub`.
* :mod:`~openenv_gym.trajectories.minari_export`: :func:`to_minari`.
* :mod:`~openenv_gym.trajectories.layout`: the files of a recording directory.

A recording also loads with plain ``datasets``: ``load_dataset("parquet", data_dir=out)``
or ``load_dataset(out)``.
"""

from openenv_gym.trajectories.hub import push_to_hub
from openenv_gym.trajectories.layout import remove_stale_temp_files
from openenv_gym.trajectories.minari_export import to_minari
from openenv_gym.trajectories.reader import (
    Episode,
    iter_episodes,
    load_trajectories,
    to_d4rl,
    trajectory_arrays,
    trajectory_files,
    trajectory_metadata,
    trajectory_spaces,
)
from openenv_gym.trajectories.writer import TrajectoryWriter

__all__ = [
    "Episode",
    "TrajectoryWriter",
    "iter_episodes",
    "load_trajectories",
    "push_to_hub",
    "remove_stale_temp_files",
    "to_d4rl",
    "to_minari",
    "trajectory_arrays",
    "trajectory_files",
    "trajectory_metadata",
    "trajectory_spaces",
]
