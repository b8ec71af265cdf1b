"""Wrappers for training on OpenEnv envs: reward shaping, normalization, trajectory logging.

Each concern has its own module and a single-env and a Gymnasium-vector form:

* :mod:`~openenv_gym.wrappers.shaping`: :class:`ShapeReward`, :class:`VectorShapeReward`.
* :mod:`~openenv_gym.wrappers.normalization`: :class:`Normalize`, :class:`VectorNormalize`.
* :mod:`~openenv_gym.wrappers.trajectory`: :class:`RecordTrajectories`,
  :class:`VectorRecordTrajectories`, :func:`trajectory_arrays`, :func:`push_to_hub`.

Use Gymnasium's and SB3's own wrappers for what they already do: frame stacking
(``gymnasium.wrappers.FrameStackObservation``, SB3 ``VecFrameStack``), episode statistics
(``RecordEpisodeStatistics``, SB3 ``Monitor``), time limits (``TimeLimit``), Atari
preprocessing (``AtariPreprocessing``, SB3 ``AtariWrapper``) and, on SB3 ``VecEnv``\\s,
normalization (SB3 ``VecNormalize``). They all work on our envs unchanged.
"""

from openenv_gym.wrappers.normalization import Normalize, RunningMeanStd, VectorNormalize
from openenv_gym.wrappers.shaping import (
    RAW_REWARD_KEY,
    Clip,
    FieldBonus,
    FieldPotential,
    Offset,
    PotentialShaping,
    RewardShaper,
    RewardTerm,
    Scale,
    ShapeReward,
    Transition,
    VectorShapeReward,
)
from openenv_gym.wrappers.trajectory import (
    RecordTrajectories,
    TrajectoryWriter,
    VectorRecordTrajectories,
    load_trajectories,
    push_to_hub,
    trajectory_arrays,
    trajectory_files,
    trajectory_metadata,
)

__all__ = [
    "RAW_REWARD_KEY",
    "Clip",
    "FieldBonus",
    "FieldPotential",
    "Normalize",
    "Offset",
    "PotentialShaping",
    "RecordTrajectories",
    "RewardShaper",
    "RewardTerm",
    "RunningMeanStd",
    "Scale",
    "ShapeReward",
    "TrajectoryWriter",
    "Transition",
    "VectorNormalize",
    "VectorRecordTrajectories",
    "VectorShapeReward",
    "load_trajectories",
    "push_to_hub",
    "trajectory_arrays",
    "trajectory_files",
    "trajectory_metadata",
]
