"""Export a recording to a Minari dataset (the Farama standard for offline RL).

:func:`to_minari` writes the recording's episodes (``T + 1`` observations each: the row
observations plus the last row's ``next_observation``) with the recorded spaces into Minari's
local store (``MINARI_DATASETS_PATH``, default ``~/.minari/datasets``), where
``minari.load_dataset(dataset_id)`` opens it. Images are stored losslessly (no JPEG).
Needs the ``[minari]`` extra (``minari`` with pyarrow).

Example (not run here: it writes to the Minari store)::

    from openenv_gym.trajectories import to_minari
    dataset = to_minari("runs/cartpole", "openenv/cartpole-expert-v0")
    for episode in dataset.iterate_episodes():
        episode.observations, episode.actions, episode.terminations
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openenv_gym.errors import TrajectoryFormatError
from openenv_gym.extras import optional_imports
from openenv_gym.trajectories.reader import iter_episodes, trajectory_metadata, trajectory_spaces

if TYPE_CHECKING:
    from minari import MinariDataset

__all__ = ["to_minari"]


def _listify(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _listify(sub) for key, sub in value.items()}
    return list(value)


def to_minari(
    directory: str | Path,
    dataset_id: str,
    *,
    include_unfinished: bool = True,
    data_format: str = "arrow",
    author: str | None = None,
    description: str | None = None,
    algorithm_name: str | None = None,
) -> MinariDataset:
    """Write the recording in ``directory`` as the Minari dataset ``dataset_id``.

    Args:
        directory: A recording (see :class:`~openenv_gym.wrappers.RecordTrajectories`).
        dataset_id: Minari's ``(namespace/)name-v<version>``, e.g. ``"openenv/cartpole-v0"``.
        include_unfinished: Keep episodes the recording cut off (neither terminated nor
            truncated on their last step); ``False`` drops them.
        data_format: Minari's storage format: ``"arrow"`` (default) or ``"hdf5"`` (h5py).
        author, description, algorithm_name: Minari metadata.

    Returns:
        The new ``minari.MinariDataset``.

    Raises:
        MissingExtraError: ``minari`` is missing (the ``[minari]`` extra).
        TrajectoryFormatError: The id is malformed or taken, or the recording holds no
            episode to export.
    """
    with optional_imports("exporting to Minari"):
        import minari
        from minari.data_collector import EpisodeBuffer
        from minari.dataset.minari_dataset import parse_dataset_id
        from minari.storage import get_dataset_path
    try:
        parse_dataset_id(dataset_id)
    except ValueError as exc:
        raise TrajectoryFormatError(
            f"{dataset_id!r} is not a Minari dataset id ({exc}); use e.g. 'openenv/cartpole-v0'"
        ) from None
    if Path(get_dataset_path(dataset_id)).exists():
        raise TrajectoryFormatError(
            f"the Minari dataset {dataset_id!r} already exists at {get_dataset_path(dataset_id)}; "
            "pick a new version (-v1) or minari.delete_dataset(id) first"
        )
    observation_space, action_space = trajectory_spaces(directory)
    meta = trajectory_metadata(directory)["metadata"]
    buffers: list[Any] = []
    for episode in iter_episodes(directory):
        if not include_unfinished and not episode.finished:
            continue
        buffers.append(
            EpisodeBuffer(
                id=len(buffers),
                observations=_listify(episode.observations),
                actions=_listify(episode.actions),
                rewards=episode.rewards.tolist(),
                terminations=episode.terminations.tolist(),
                truncations=episode.truncations.tolist(),
            )
        )
    if not buffers:
        raise TrajectoryFormatError(f"{str(directory)!r} holds no episode to export to Minari")
    text = description or (
        f"{meta.get('env_id') or 'OpenEnv'} trajectories recorded with openenv-gym "
        f"{meta.get('package_version')} from {meta.get('server_url') or 'an embedded server'}"
    )
    with warnings.catch_warnings():
        # Minari nags about every optional field left empty (author, eval_env, env_spec).
        warnings.filterwarnings("ignore", message=".*(is set to None|env_spec is None)")
        return minari.create_dataset_from_buffers(
            dataset_id,
            buffers,
            observation_space=observation_space,
            action_space=action_space,
            author=author,
            description=text,
            algorithm_name=algorithm_name or str(meta.get("policy") or "unknown"),
            data_format=data_format,
            requirements=[f"openenv-gym=={meta.get('package_version')}"],
            jpeg_encoding=False,
        )
