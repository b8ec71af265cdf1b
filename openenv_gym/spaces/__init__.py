"""Gymnasium spaces and codecs for OpenEnv actions and observations.

The spaces come from a JSON Schema (``GET /schema``) or the Pydantic classes; see
:mod:`openenv_gym.spaces.schema` for the mapping rules and defaults, and
:mod:`openenv_gym.spaces.serialization` for the ``x-space`` format a server can publish.

Example:
    >>> from openenv_gym.spaces import action_codec
    >>> codec = action_codec({"properties": {"move": {"type": "string"}}, "required": ["move"]})
    >>> codec.encode("e2e4")
    {'move': 'e2e4'}
"""

from openenv_gym.spaces.charset import DEFAULT_TEXT_CHARSET, DefaultCharsetText
from openenv_gym.spaces.codec import (
    ActionCodec,
    ObservationCodec,
    action_codec,
    action_codec_for_model,
    observation_codec,
    observation_codec_for_model,
)
from openenv_gym.spaces.field_rules import (
    DEFAULT_ACTION_TEXT_MAX_LENGTH,
    DEFAULT_OBSERVATION_TEXT_MAX_LENGTH,
    X_DTYPE,
    X_SHAPE,
)
from openenv_gym.spaces.schema import ACTION_ENVELOPE_FIELDS, OBSERVATION_ENVELOPE_FIELDS
from openenv_gym.spaces.serialization import (
    X_ACTION_KEY,
    X_OBSERVATION_KEY,
    X_SPACE,
    X_TERMINATED_KEY,
    X_TRUNCATED_KEY,
    from_wire,
    space_from_json,
    space_to_json,
    to_wire,
)

__all__ = [
    "ACTION_ENVELOPE_FIELDS",
    "DEFAULT_ACTION_TEXT_MAX_LENGTH",
    "DEFAULT_OBSERVATION_TEXT_MAX_LENGTH",
    "DEFAULT_TEXT_CHARSET",
    "OBSERVATION_ENVELOPE_FIELDS",
    "X_ACTION_KEY",
    "X_DTYPE",
    "X_OBSERVATION_KEY",
    "X_SHAPE",
    "X_SPACE",
    "X_TERMINATED_KEY",
    "X_TRUNCATED_KEY",
    "ActionCodec",
    "DefaultCharsetText",
    "ObservationCodec",
    "action_codec",
    "action_codec_for_model",
    "from_wire",
    "observation_codec",
    "observation_codec_for_model",
    "space_from_json",
    "space_to_json",
    "to_wire",
]
