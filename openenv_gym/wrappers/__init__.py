"""Wrappers for training on OpenEnv envs: reward shaping, normalization, trajectory logging.

Each concern has its own module and a single-env and a Gymnasium-vector form:

* :mod:`~openenv_gym.wrappers.shaping`: :class:`ShapeReward`, :class:`VectorShapeReward`.
* :mod:`~openenv_gym.wrappers.normalization`: :class:`Normalize`, :class:`VectorNormalize`.
* :mod:`~openenv_gym.wrappers.noise`: :class:`ActionNoise`, :class:`VectorActionNoise`
  (:class:`GaussianNoise`, :class:`OrnsteinUhlenbeckNoise`, :class:`EpsilonRandom`).
* :mod:`~openenv_gym.wrappers.termination`: :class:`TerminateWhen`,
  :class:`VectorTerminateWhen` (:class:`FieldBound`, :class:`NoRewardFor`).
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

from openenv_gym.wrappers.episodes import EpisodeTracker
from openenv_gym.wrappers.noise import (
    NOISE_FREE_ACTION_KEY,
    ActionNoise,
    EpsilonRandom,
    GaussianNoise,
    NoiseProcess,
    OrnsteinUhlenbeckNoise,
    VectorActionNoise,
)
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
from openenv_gym.wrappers.termination import (
    TERMINATION_KEY,
    Condition,
    FieldBound,
    NoRewardFor,
    TerminateWhen,
    VectorTerminateWhen,
)

__all__ = [
    "NOISE_FREE_ACTION_KEY",
    "RAW_REWARD_KEY",
    "TERMINATION_KEY",
    "ActionNoise",
    "Clip",
    "Condition",
    "EpisodeTracker",
    "EpsilonRandom",
    "FieldBonus",
    "FieldBound",
    "FieldPotential",
    "GaussianNoise",
    "NoRewardFor",
    "NoiseProcess",
    "Normalize",
    "Offset",
    "OrnsteinUhlenbeckNoise",
    "PotentialShaping",
    "RecordTrajectories",
    "RewardShaper",
    "RewardTerm",
    "RunningMeanStd",
    "Scale",
    "ShapeReward",
    "TerminateWhen",
    "Transition",
    "VectorActionNoise",
    "VectorNormalize",
    "VectorRecordTrajectories",
    "VectorShapeReward",
    "VectorTerminateWhen",
]
