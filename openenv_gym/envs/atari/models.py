"""The official OpenEnv Atari models, plus per-configuration subclasses with exact spaces.

:class:`AtariAction`, :class:`AtariObservation` and :class:`AtariState` have the fields,
types and defaults of the official ``atari_env`` models, so official clients read our
server unchanged. :func:`atari_models` derives subclasses for one configuration whose
JSON Schema also carries ``x-space`` (the exact ``Discrete(n)`` action space and the
``uint8`` screen Box), ``x-action-meanings`` and ``x-observation-key: "screen"``; official
clients ignore the ``x-`` keys, ours rebuild the exact spaces from them.

Example:
    >>> action_model, observation_model = atari_models((210, 160, 3), ["NOOP", "FIRE"])
    >>> action_model.model_json_schema()["properties"]["action_id"]["x-space"]
    {'n': 2, 'start': 0, 'type': 'Discrete'}
    >>> observation_model.model_json_schema()["x-observation-key"]
    'screen'
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Final, Literal

import numpy as np
from gymnasium import spaces
from pydantic import ConfigDict, Field, create_model

from openenv_gym.envs.atari.options import OBS_TYPES
from openenv_gym.envs.atari.preprocessing import PREPROCESSING_NAMES
from openenv_gym.server.models import Action, Observation, State
from openenv_gym.spaces.serialization import X_OBSERVATION_KEY, X_SPACE, space_to_json

ObsType = Literal["rgb", "grayscale", "ram"]
#: Schema key of ``action_id`` listing the action meanings (``"NOOP"``, ``"FIRE"``, ...).
X_ACTION_MEANINGS: Final = "x-action-meanings"
#: The observation field that is the Gymnasium observation.
SCREEN_FIELD: Final = "screen"
#: Screen dimensions of every ALE game, and the RAM size.
SCREEN_HEIGHT: Final = 210
SCREEN_WIDTH: Final = 160
RAM_SIZE: Final = 128


class AtariAction(Action):
    """Action for Atari environments (the official schema).

    Attributes:
        action_id: Index into the action set (``legal_actions``).
        game_name: Informational; the server's game is fixed when it starts.
        obs_type: Informational; the server's observation type is fixed when it starts.
        full_action_space: Informational; fixed when the server starts.
    """

    action_id: int
    game_name: str = "pong"
    obs_type: ObsType = "rgb"
    full_action_space: bool = False


class AtariObservation(Observation):
    """Observation from an Atari environment (the official schema).

    Attributes:
        screen: The screen (or RAM) as a flattened list of ``uint8`` values.
        screen_shape: Its shape before flattening: ``[210, 160, 3]``, ``[210, 160]`` or ``[128]``.
        legal_actions: The valid ``action_id`` values.
        lives: Lives left.
        episode_frame_number: Frames since the episode started.
        frame_number: Frames since the emulator started.
    """

    screen: list[int]
    screen_shape: list[int]
    legal_actions: list[int]
    lives: int = 0
    episode_frame_number: int = 0
    frame_number: int = 0


#: The observation schema's key for the server's preprocessing options (``{}``: raw frames).
X_PREPROCESSING: Final = "x-preprocessing"
#: The observation schema's key listing the preprocessing options a session may choose for
#: itself (reset key :data:`PREPROCESSING_RESET_KEY`); official and older servers lack it.
X_SESSION_PREPROCESSING: Final = "x-session-preprocessing"
#: The reset key carrying a session's own preprocessing options (official servers drop it).
PREPROCESSING_RESET_KEY: Final = "preprocessing"


class AtariState(State):
    """The configuration of an Atari session (the official schema)."""

    game_name: str = "pong"
    obs_type: ObsType = "rgb"
    full_action_space: bool = False
    mode: int | None = None
    difficulty: int | None = None
    repeat_action_probability: float = 0.0
    frameskip: int = 4


class _KeyedAtariObservation(AtariObservation):
    """:class:`AtariObservation` whose schema names ``screen`` as the Gymnasium observation."""

    model_config = ConfigDict(json_schema_extra={X_OBSERVATION_KEY: SCREEN_FIELD})


def screen_shape(obs_type: str) -> tuple[int, ...]:
    """The observation shape for ``obs_type``: ``(210, 160, 3)``, ``(210, 160)`` or ``(128,)``.

    Raises:
        ValueError: ``obs_type`` is not ``"rgb"``, ``"grayscale"`` or ``"ram"``.
    """
    if obs_type == "rgb":
        return (SCREEN_HEIGHT, SCREEN_WIDTH, 3)
    if obs_type == "grayscale":
        return (SCREEN_HEIGHT, SCREEN_WIDTH)
    if obs_type == "ram":
        return (RAM_SIZE,)
    raise ValueError(f"expected obs_type 'rgb', 'grayscale' or 'ram', got {obs_type!r}")


def screen_space(shape: Sequence[int]) -> spaces.Box:
    """The ``uint8`` Box of a screen (or RAM) of this shape."""
    return spaces.Box(0, 255, tuple(shape), np.uint8)


def normalize_meaning(meaning: str) -> str:
    """``"Action.NOOP"`` (the official server's ``str(Action)``) -> ``"NOOP"``."""
    return meaning.rsplit(".", 1)[-1]


class _PreprocessedAtariObservation(_KeyedAtariObservation):
    """:class:`AtariObservation` of a preprocessing server: also the raw reward and game over.

    Attributes:
        raw_reward: The reward before ``reward_clip``.
        game_over: The real end of the game (``done`` is also set by a life loss with
            ``episodic_life``).
    """

    raw_reward: float = 0.0
    game_over: bool = False


@functools.lru_cache(maxsize=64)
def _cached_models(
    shape: tuple[int, ...],
    meanings: tuple[str, ...],
    preprocessed: bool,
    preprocessing: tuple[tuple[str, int | bool], ...],
) -> tuple[type[AtariAction], type[AtariObservation]]:
    base = _PreprocessedAtariObservation if preprocessed else _KeyedAtariObservation
    extra = {
        X_OBSERVATION_KEY: SCREEN_FIELD,
        X_PREPROCESSING: dict(preprocessing),
        X_SESSION_PREPROCESSING: list(PREPROCESSING_NAMES),
    }
    published = type(
        base.__name__,
        (base,),
        {
            "__doc__": base.__doc__,
            "__module__": __name__,
            "model_config": ConfigDict(json_schema_extra=extra),  # type: ignore[typeddict-item]
        },
    )
    action_model = create_model(
        "AtariAction",
        __base__=AtariAction,
        __doc__=AtariAction.__doc__,
        action_id=(
            int,
            Field(
                description="Index into the action set (legal_actions)",
                json_schema_extra={
                    X_SPACE: space_to_json(spaces.Discrete(len(meanings))),
                    X_ACTION_MEANINGS: list(meanings),
                },
            ),
        ),
    )
    observation_model: type[AtariObservation] = create_model(
        "AtariObservation",
        __base__=published,
        __doc__=AtariObservation.__doc__,
        screen=(
            list[int],
            Field(
                description=f"The screen, flattened from shape {list(shape)}",
                json_schema_extra={X_SPACE: space_to_json(screen_space(shape))},
            ),
        ),
    )
    return action_model, observation_model


def atari_models(
    shape: Sequence[int],
    meanings: Sequence[str],
    *,
    preprocessed: bool = False,
    preprocessing: Mapping[str, int | bool] | None = None,
) -> tuple[type[AtariAction], type[AtariObservation]]:
    """The action and observation models for one configuration (cached).

    Args:
        shape: The observation shape (see :func:`screen_shape`).
        meanings: The action meanings of the action set, in ``action_id`` order.
        preprocessed: The server preprocesses: the observation also has ``raw_reward`` and
            ``game_over``.
        preprocessing: The preprocessing options, published in the observation schema under
            :data:`X_PREPROCESSING` (``{}``: raw frames) so a client can check them.
    """
    return _cached_models(
        tuple(int(n) for n in shape),
        tuple(str(m) for m in meanings),
        preprocessed,
        tuple((preprocessing or {}).items()),
    )


__all__ = [
    "OBS_TYPES",
    "PREPROCESSING_RESET_KEY",
    "RAM_SIZE",
    "SCREEN_FIELD",
    "SCREEN_HEIGHT",
    "SCREEN_WIDTH",
    "X_ACTION_MEANINGS",
    "X_PREPROCESSING",
    "X_SESSION_PREPROCESSING",
    "AtariAction",
    "AtariObservation",
    "AtariState",
    "ObsType",
    "atari_models",
    "normalize_meaning",
    "screen_shape",
    "screen_space",
]
