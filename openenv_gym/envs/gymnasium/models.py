"""Pydantic Action/Observation models for a Gymnasium env id, built from its spaces.

The action model has one field, ``action``; the observation model has ``observation``,
``truncated`` and ``terminated`` beside the base ``done``/``reward``/``metadata``
(``done`` is ``terminated or truncated``; both flags are exact, as Gymnasium returns them).
Each space field's JSON Schema has the accurate JSON type (``integer`` for Discrete,
arrays of numbers for Box, ...) and carries ``"x-space"``: the exact Gymnasium space (see
:mod:`openenv_gym.spaces.serialization`). The models' top-level schemas carry
``"x-action-key": "action"``, ``"x-observation-key": "observation"``,
``"x-truncated-key": "truncated"``, ``"x-terminated-key": "terminated"`` and, when the env
renders, ``"x-render-modes": ["rgb_array"]`` (the state can carry the ``frame``), so our
client rebuilds the exact spaces and flags; official clients ignore the ``x-`` keys.

Supported spaces: Box, Discrete, MultiDiscrete, MultiBinary.

Example:
    >>> import numpy as np
    >>> from gymnasium import spaces
    >>> action_model, observation_model = gymnasium_models(
    ...     "CartPole-v1", spaces.Discrete(2), spaces.Box(-1.0, 1.0, (4,), np.float32)
    ... )
    >>> schema = action_model.model_json_schema()
    >>> schema["x-action-key"], schema["properties"]["action"]["type"]
    ('action', 'integer')
    >>> observation_model.model_json_schema()["properties"]["observation"]["items"]
    {'type': 'number'}
"""

from __future__ import annotations

import functools
import json
import re
from typing import Annotated, Any

import numpy as np
from gymnasium import spaces
from pydantic import ConfigDict, Field, create_model

from openenv_gym.errors import SpaceMappingError
from openenv_gym.server.models import Action, Observation, State
from openenv_gym.spaces.frames import X_RENDER_MODES
from openenv_gym.spaces.serialization import (
    X_ACTION_KEY,
    X_OBSERVATION_KEY,
    X_SPACE,
    X_TERMINATED_KEY,
    X_TRUNCATED_KEY,
    space_from_json,
    space_to_json,
)

#: The field names used by the gymnasium server's models.
ACTION_FIELD = "action"
OBSERVATION_FIELD = "observation"
TRUNCATED_FIELD = "truncated"
TERMINATED_FIELD = "terminated"

SUPPORTED_SPACES: tuple[type[spaces.Space[Any]], ...] = (
    spaces.Box,
    spaces.Discrete,
    spaces.MultiDiscrete,
    spaces.MultiBinary,
)


class GymnasiumAction(Action):
    """Base of the per-env-id action models: the Gymnasium action is the ``action`` field."""

    model_config = ConfigDict(json_schema_extra={X_ACTION_KEY: ACTION_FIELD})


class GymnasiumObservation(Observation):
    """Base of the per-env-id observation models.

    ``observation`` holds the Gymnasium observation, ``truncated`` the truncation flag;
    ``done`` is ``terminated or truncated`` and ``metadata`` the JSON-safe ``info`` dict.
    """

    model_config = ConfigDict(
        json_schema_extra={
            X_OBSERVATION_KEY: OBSERVATION_FIELD,
            X_TRUNCATED_KEY: TRUNCATED_FIELD,
            X_TERMINATED_KEY: TERMINATED_FIELD,
        }
    )


class GymnasiumState(State):
    """The state of a served Gymnasium env: episode id, step count and the env id.

    A session whose reset asked for frames (``openenv_gym_render: true``, see
    :mod:`openenv_gym.spaces.frames`) also gets ``frame``: the rendered RGB image.
    """

    env_id: str = Field(description="The Gymnasium id of the environment")


def check_supported(space: spaces.Space[Any], *, env_id: str, role: str) -> None:
    """Raise :class:`SpaceMappingError` unless the gymnasium server can serve ``space``."""
    if not isinstance(space, SUPPORTED_SPACES):
        raise SpaceMappingError(
            f"Gymnasium env {env_id!r} has a {type(space).__name__} {role} space ({space}); "
            "the gymnasium server supports Box, Discrete, MultiDiscrete and MultiBinary "
            f"spaces. Wrap the env so its {role} space is one of those (e.g. "
            "gymnasium.wrappers.FlattenObservation) and serve it with OpenEnvServer.",
            field=ACTION_FIELD if role == "action" else OBSERVATION_FIELD,
            schema=repr(space),
        )


def _nested_list(item: Any, shape: tuple[int, ...]) -> Any:
    """``list[list[item]]`` with exact lengths, outermost dimension first."""
    annotated = item
    for size in reversed(shape):
        annotated = Annotated[
            list[annotated],  # type: ignore[valid-type]
            Field(min_length=size, max_length=size),
        ]
    return annotated


def field_type(space: spaces.Space[Any]) -> Any:
    """The python/pydantic type whose JSON Schema describes values of ``space`` on the wire.

    Raises:
        SpaceMappingError: ``space`` is not Box, Discrete, MultiDiscrete or MultiBinary.
    """
    if isinstance(space, spaces.Discrete):
        start = int(space.start)
        return Annotated[int, Field(ge=start, le=start + int(space.n) - 1)]
    if isinstance(space, spaces.Box):
        item: Any = float if np.issubdtype(space.dtype, np.floating) else int
        if np.issubdtype(space.dtype, np.bool_):
            item = bool
        return _nested_list(item, space.shape)
    if isinstance(space, spaces.MultiDiscrete):
        return _nested_list(int, space.shape)
    if isinstance(space, spaces.MultiBinary):
        return _nested_list(Annotated[int, Field(ge=0, le=1)], space.shape)
    raise SpaceMappingError(
        f"no wire type for a {type(space).__name__} space ({space}); supported: Box, "
        "Discrete, MultiDiscrete, MultiBinary",
        field="",
        schema=repr(space),
    )


def describe_space(space: spaces.Space[Any]) -> str:
    """A short description: ``"Discrete(2)"``, ``"Box float32 (4,)"`` (exact space in x-space)."""
    if isinstance(space, spaces.Box):
        return f"Box {np.dtype(space.dtype).name} {space.shape}"
    if isinstance(space, spaces.MultiDiscrete | spaces.MultiBinary):
        return f"{type(space).__name__} {space.shape}"
    return str(space)


def model_name(env_id: str) -> str:
    """A class-name prefix for an env id: ``"ALE/Pong-v5"`` -> ``"ALEPongV5"``."""
    parts = [p for p in re.split(r"[^0-9A-Za-z]+", env_id) if p]
    name = "".join(p[0].upper() + p[1:] for p in parts) or "Gymnasium"
    return name if name[0].isalpha() else f"Env{name}"


def _observation_base(render_modes: tuple[str, ...]) -> type[GymnasiumObservation]:
    """:class:`GymnasiumObservation`, or a subclass whose schema lists the render modes."""
    if not render_modes:
        return GymnasiumObservation
    extra = dict(GymnasiumObservation.model_config.get("json_schema_extra") or {})  # type: ignore[arg-type]
    extra[X_RENDER_MODES] = list(render_modes)
    return type(
        "RenderedGymnasiumObservation",
        (GymnasiumObservation,),
        {"model_config": ConfigDict(json_schema_extra=extra), "__module__": __name__},
    )


@functools.lru_cache(maxsize=256)
def _cached_models(
    env_id: str, action_json: str, observation_json: str, render_modes: tuple[str, ...] = ()
) -> tuple[type[GymnasiumAction], type[GymnasiumObservation]]:
    action_space = space_from_json(json.loads(action_json))
    observation_space = space_from_json(json.loads(observation_json))
    prefix = model_name(env_id)
    action_model = create_model(
        f"{prefix}Action",
        __base__=GymnasiumAction,
        __doc__=f"An action of the Gymnasium env {env_id}.",
        action=(
            field_type(action_space),
            Field(
                description=f"The Gymnasium action: {describe_space(action_space)}",
                json_schema_extra={X_SPACE: json.loads(action_json)},
            ),
        ),
    )
    observation_model = create_model(
        f"{prefix}Observation",
        __base__=_observation_base(render_modes),
        __doc__=f"An observation of the Gymnasium env {env_id}.",
        observation=(
            field_type(observation_space),
            Field(
                description=(f"The Gymnasium observation: {describe_space(observation_space)}"),
                json_schema_extra={X_SPACE: json.loads(observation_json)},
            ),
        ),
        truncated=(
            bool,
            Field(
                default=False,
                description="The episode was truncated (e.g. by a time limit)",
            ),
        ),
        terminated=(
            bool,
            Field(
                default=False,
                description="The episode reached a terminal state (may come with truncated)",
            ),
        ),
    )
    return action_model, observation_model


def gymnasium_models(
    env_id: str,
    action_space: spaces.Space[Any],
    observation_space: spaces.Space[Any],
    render_modes: tuple[str, ...] = (),
) -> tuple[type[GymnasiumAction], type[GymnasiumObservation]]:
    """The action and observation models for an env id with these spaces (cached).

    ``render_modes`` the server serves (``("rgb_array",)``) are listed in the observation
    schema under ``x-render-modes``.

    Raises:
        SpaceMappingError: A space is not Box, Discrete, MultiDiscrete or MultiBinary.
    """
    check_supported(action_space, env_id=env_id, role="action")
    check_supported(observation_space, env_id=env_id, role="observation")
    return _cached_models(
        env_id,
        json.dumps(space_to_json(action_space)),
        json.dumps(space_to_json(observation_space)),
        tuple(render_modes),
    )


__all__ = [
    "ACTION_FIELD",
    "OBSERVATION_FIELD",
    "SUPPORTED_SPACES",
    "TERMINATED_FIELD",
    "TRUNCATED_FIELD",
    "GymnasiumAction",
    "GymnasiumObservation",
    "GymnasiumState",
    "check_supported",
    "describe_space",
    "field_type",
    "gymnasium_models",
    "model_name",
]
