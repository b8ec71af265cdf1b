"""The pydantic base models of an OpenEnv environment: Action, Observation, State, metadata.

They mirror the official ``openenv`` package (0.10.0, ``openenv.core.env_server.types``)
field for field and setting for setting, so a subclass produces the same JSON Schema under
``GET /schema`` as the same subclass of the official base, and official clients read our
servers unchanged. They are defined here, not imported, because the official package is
never a runtime dependency of openenv-gym.

Example:
    >>> from pydantic import Field
    >>> class MoveAction(Action):
    ...     direction: int = Field(ge=0, le=3)
    >>> MoveAction(direction=2).model_dump()
    {'metadata': {}, 'direction': 2}
    >>> sorted(Observation.model_fields)
    ['done', 'metadata', 'reward']
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

#: The official models' settings: unknown fields refused, assignments validated.
_STRICT = ConfigDict(extra="forbid", validate_assignment=True, arbitrary_types_allowed=True)


class Action(BaseModel):
    """Base class for all environment actions.

    All action subclasses should inherit from this base class.
    Uses Pydantic for automatic validation and serialization.
    """

    model_config = _STRICT

    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Additional metadata for the action"
    )


class Observation(BaseModel):
    """Base class for all environment observations.

    All observation subclasses should inherit from this base class.
    Uses Pydantic for automatic validation and serialization.
    """

    model_config = _STRICT

    done: bool = Field(default=False, description="Whether the episode has terminated")
    reward: bool | int | float | None = Field(
        default=None, description="Reward signal from the last action"
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Additional metadata for the observation"
    )


class State(BaseModel):
    """Base class for environment state.

    Represents internal environment state, separate from observations.
    """

    model_config = ConfigDict(
        extra="allow",
        validate_assignment=True,
        arbitrary_types_allowed=True,
    )

    episode_id: str | None = Field(
        default=None, description="Unique identifier for the current episode"
    )
    step_count: int = Field(
        default=0,
        ge=0,
        description="Number of steps taken in the current episode",
    )


class EnvironmentMetadata(BaseModel):
    """Metadata about an environment for documentation and UI purposes."""

    model_config = ConfigDict(
        extra="forbid",
        validate_assignment=True,
    )

    name: str = Field(description="Name of the environment")
    description: str = Field(description="Description of what the environment does")
    readme_content: str | None = Field(
        default=None, description="Content of the README file for the environment"
    )
    version: str | None = Field(default=None, description="Version of the environment")
    author: str | None = Field(default=None, description="Author of the environment")
    documentation_url: str | None = Field(
        default=None, description="URL to the environment's documentation"
    )


__all__ = ["Action", "EnvironmentMetadata", "Observation", "State"]
