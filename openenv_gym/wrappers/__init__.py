"""Wrappers for training on OpenEnv envs: reward shaping, normalization, trajectory logging.

Each concern has its own module and a single-env and a Gymnasium-vector form:

* :mod:`~openenv_gym.wrappers.shaping`: :class:`ShapeReward`, :class:`VectorShapeReward`.
* :mod:`~openenv_gym.wrappers.normalization`: :class:`Normalize`, :class:`VectorNormalize`.
* :mod:`~openenv_gym.wrappers.recording`: :class:`RecordTrajectories`,
  :class:`VectorRecordTrajectories` (reading, the Hub and Minari: :mod:`openenv_gym.trajectories`).
* :mod:`~openenv_gym.wrappers.episodes`: :class:`EpisodeTracker`, the autoreset bookkeeping
  every single-env and vector wrapper here shares.

Use Gymnasium's and SB3's own wrappers for what they already do: frame stacking
(``gymnasium.wrappers.FrameStackObservation``, SB3 ``VecFrameStack``), episode statistics
(``RecordEpisodeStatistics``, SB3 ``Monitor``), time limits (``TimeLimit``), Atari
preprocessing (``AtariPreprocessing``, SB3 ``AtariWrapper``) and, on SB3 ``VecEnv``\\s,
normalization (SB3 ``VecNormalize``). They all work on our envs unchanged.
"""

from openenv_gym.wrappers.normalization import Normalize, RunningMeanStd, VectorNormalize
from openenv_gym.wrappers.recording import RecordTrajectories, VectorRecordTrajectories
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
    "Transition",
    "VectorNormalize",
    "VectorRecordTrajectories",
    "VectorShapeReward",
]
