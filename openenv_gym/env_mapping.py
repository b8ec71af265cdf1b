"""How an :class:`~openenv_gym.env.OpenEnvEnv` gets its codecs from a server.

* The JSON Schemas: the Pydantic models when given, else ``GET /schema``.
* An MCP tool env (a tool-call action schema and a tool list): the codecs of
  :mod:`openenv_gym.spaces.tools`.
* Anything else: :func:`~openenv_gym.spaces.action_codec` and
  :func:`~openenv_gym.spaces.observation_codec` with the env's mapping options; where the
  schema leaves a shape open, one reset (and a ``state`` request) supplies it
  (:mod:`openenv_gym.spaces.inference`), and what still has no space is reported in ONE
  :class:`~openenv_gym.errors.SpaceMappingError` with the ``gym.make`` call to paste.
  The probe's result is kept per server, schema, options and reset keys for the process, so
  a second ``make`` of the same server and options opens no session at ``make`` (a
  one-session server takes Gymnasium's ``check_env``); :func:`forget_probes` drops it (a
  server restarted at the same URL with other settings).
* The RGB image of the observation space, if any (``render_mode="rgb_array"`` shows it):
  :func:`find_rgb_image`.

Example:
    >>> mapper = SpaceMapper("http://127.0.0.1:8000", token=None, timeout=10.0, options={})
    >>> mapper.base_url
    'http://127.0.0.1:8000'
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from gymnasium import spaces
from pydantic import BaseModel

from openenv_gym.client import Session, fetch_schema
from openenv_gym.client.mcp_tools import fetch_tools
from openenv_gym.errors import SpaceMappingError
from openenv_gym.spaces import ActionCodec, ObservationCodec, action_codec, observation_codec
from openenv_gym.spaces.inference import (
    ActionHints,
    Inference,
    declared_count,
    is_legal_actions_name,
    space_source,
)
from openenv_gym.spaces.problems import ENV_KEYWORDS, MappingProblem, format_problems
from openenv_gym.spaces.tool_list import ToolSpec, is_bare_action_schema, is_tool_call_schema
from openenv_gym.spaces.tools import tool_codecs
from openenv_gym.wire.messages import StateReply, reset_message, state_message

logger = logging.getLogger("openenv_gym")
_Codec = TypeVar("_Codec", ActionCodec, ObservationCodec)
_LOGGED_INFERENCES: set[tuple[str, str]] = set()

#: One reset for open shapes: the schemas -> the sample observation and the action hints.
Probe = Callable[[Mapping[str, Any]], tuple[dict[str, Any], ActionHints]]
#: The probes made in this process: (server, schema, options, reset keys) -> their result.
_PROBED: dict[tuple[str, str, str, str], tuple[dict[str, Any], ActionHints]] = {}


def forget_probes() -> None:
    """Drop every kept probe result: the next ``make`` of each server probes again."""
    _PROBED.clear()


def log_inferences(base_url: str, inferred: Sequence[Inference]) -> None:
    """Log each space taken from the data once per process and server."""
    for inference in inferred:
        key = (base_url, inference.describe())
        if key in _LOGGED_INFERENCES:
            continue
        _LOGGED_INFERENCES.add(key)
        keyword = ENV_KEYWORDS[(inference.role, inference.option)]  # type: ignore[index]
        logger.info(
            "%s: the %s field %r has no fixed space in the schema; took %s from %s "
            "(pin it with %s={%r: ...})",
            base_url,
            inference.role,
            inference.path,
            inference.value,
            inference.source,
            keyword,
            inference.path,
        )


def probe_session(
    session: Session, schema: Mapping[str, Any], reset_kwargs: Mapping[str, Any]
) -> tuple[dict[str, Any], ActionHints]:
    """One reset (and a state request) on ``session`` to take open shapes from."""
    reply = session.request_observation(reset_message(**reset_kwargs))
    sample = dict(reply.observation)
    legal = None
    for name in schema["observation"].get("properties") or {}:
        if is_legal_actions_name(name) and isinstance(sample.get(name), list):
            legal = sample[name]
            break
    spec = None
    state = session.request(state_message())
    fields = state.state if isinstance(state, StateReply) else {}
    if isinstance(fields.get("action_spec"), dict):
        spec = fields["action_spec"]
    count = declared_count(fields, sample.get("metadata"), reply.metadata)
    return sample, ActionHints(legal=legal, spec=spec, count=count)


def options_source(options: Mapping[str, Any]) -> dict[str, list[str]]:
    """The mapping options as source items for :func:`~openenv_gym.spaces.problems.
    combined_kwargs`: a refusal's line to paste keeps what the user already passed.

    Example:
        >>> options_source({"action_field_spaces": {"a": spaces.Discrete(3)},
        ...                 "observation_field_shapes": {"b": [2]}, "observation_exclude": ["c"]})
        ... # doctest: +NORMALIZE_WHITESPACE
        {'action_field_spaces': ["'a': gymnasium.spaces.Discrete(3)"],
         'observation_field_shapes': ["'b': (2,)"], 'observation_exclude': ["'c'"]}
    """
    out: dict[str, list[str]] = {}
    for name, value in options.items():
        if not value:
            continue
        if isinstance(value, Mapping):
            out[name] = [
                f"{key!r}: " + (space_source(v) if isinstance(v, spaces.Space) else repr(tuple(v)))
                for key, v in value.items()
            ]
        else:
            out[name] = [repr(v) for v in value]
    return out


@dataclass(frozen=True)
class SpaceMapper:
    """Builds the codecs of one server; see the module docstring.

    Attributes:
        base_url: The server.
        token: Its bearer token, or ``None``.
        timeout: Seconds for each HTTP request.
        options: The env's mapping options (``action_field_spaces``, ``action_field_shapes``,
            ``action_include``, ``observation_field_spaces``, ``observation_field_shapes``,
            ``observation_exclude``).
        probe: One reset for open shapes (``None``: shapes must come from the schema).
        probe_key: What besides the server, schema and options the probe depends on (the
            reset keys): its result is kept under all four.
    """

    base_url: str
    token: str | None
    timeout: float
    options: Mapping[str, Any]
    probe: Probe | None = None
    probe_key: str = ""

    def schemas(
        self,
        action_model: type[BaseModel] | None,
        observation_model: type[BaseModel] | None,
        adapt: Callable[[dict[str, Any]], dict[str, Any]] = lambda schema: schema,
    ) -> dict[str, Any]:
        """The action and observation JSON Schemas: the models', else ``GET /schema``'s
        (through ``adapt``, a client's completion of a server family's schema).

        Raises:
            SpaceMappingError: A model is not a pydantic ``BaseModel`` subclass.
        """
        schema: dict[str, Any] = {}
        if action_model is None or observation_model is None:
            schema = adapt(fetch_schema(self.base_url, timeout=self.timeout, token=self.token))
        for role, model in (("action", action_model), ("observation", observation_model)):
            if model is not None:
                if not (isinstance(model, type) and issubclass(model, BaseModel)):
                    raise SpaceMappingError(
                        f"expected {role}_model as a pydantic BaseModel subclass, got {model!r}",
                        field="",
                    )
                schema[role] = model.model_json_schema()
        return schema

    def codecs(
        self, schema: Mapping[str, Any]
    ) -> tuple[ActionCodec, ObservationCodec, tuple[ToolSpec, ...]]:
        """The action and observation codecs, and the tools of an MCP tool env (else none).

        Raises:
            SpaceMappingError: Fields have no space, all of them named in one error.
        """
        tools = self._tool_codecs(schema)
        if tools is not None:
            return tools
        act, obs, problems = self._map(schema, None, None)
        if problems and any(p.needs_data for p in problems) and self.probe is not None:
            key = (
                self.base_url,
                json.dumps(schema, sort_keys=True, default=repr),
                repr(sorted(self.options.items())),
                self.probe_key,
            )
            if key not in _PROBED:
                _PROBED[key] = self.probe(schema)
            sample, hints = _PROBED[key]
            act, obs, problems = self._map(schema, sample, hints)
        if problems or act is None or obs is None:
            raise SpaceMappingError(
                format_problems(
                    problems,
                    ENV_KEYWORDS,
                    call=f"gym.make('openenv/Remote-v0', base_url={self.base_url!r}, {{kwargs}})",
                    given=options_source(self.options),
                ),
                field=problems[0].path if problems else "",
                schema=problems[0].fragment if problems else None,
                problems=tuple(problems),
            )
        log_inferences(self.base_url, (*act.inferred, *obs.inferred))
        return act, obs, ()

    def _tool_codecs(
        self, schema: Mapping[str, Any]
    ) -> tuple[ActionCodec, ObservationCodec, tuple[ToolSpec, ...]] | None:
        """The codecs of an MCP tool env (see :mod:`openenv_gym.spaces.tools`), or ``None``
        when the server is not one."""
        action_schema = schema.get("action")
        if not (is_tool_call_schema(action_schema) or is_bare_action_schema(action_schema)):
            return None
        tools = fetch_tools(self.base_url, timeout=self.timeout, token=self.token)
        if tools is None:
            return None
        options = self.options
        act, obs = tool_codecs(
            tools,
            include=options.get("action_include", ()),
            field_spaces=options.get("action_field_spaces", {}),
        )
        return act, obs, tuple(tools)

    def _map(
        self,
        schema: Mapping[str, Any],
        sample: Mapping[str, Any] | None,
        hints: ActionHints | None,
    ) -> tuple[ActionCodec | None, ObservationCodec | None, list[MappingProblem]]:
        options = self.options
        problems: list[MappingProblem] = []
        act = _collecting_problems(
            problems,
            lambda: action_codec(
                schema["action"],
                field_spaces=options.get("action_field_spaces", {}),
                field_shapes=options.get("action_field_shapes", {}),
                include=options.get("action_include", ()),
                hints=hints,
            ),
        )
        obs = _collecting_problems(
            problems,
            lambda: observation_codec(
                schema["observation"],
                field_spaces=options.get("observation_field_spaces", {}),
                field_shapes=options.get("observation_field_shapes", {}),
                exclude=options.get("observation_exclude", ()),
                sample=sample,
            ),
        )
        return act, obs, problems


def _collecting_problems(
    problems: list[MappingProblem], build: Callable[[], _Codec]
) -> _Codec | None:
    """``build()``, or ``None`` with its mapping problems added to ``problems`` (an error
    without problems propagates)."""
    try:
        return build()
    except SpaceMappingError as exc:
        if not exc.problems:
            raise
        problems.extend(exc.problems)
        return None


def find_rgb_image(space: spaces.Space[Any]) -> tuple[str, ...] | None:
    """The key path of a ``uint8`` ``(H, W, 3)`` Box in ``space`` (``()`` for the root)."""
    if isinstance(space, spaces.Box):
        if space.dtype == np.uint8 and len(space.shape) == 3 and space.shape[-1] == 3:
            return ()
        return None
    if isinstance(space, spaces.Dict):
        for key, sub in space.spaces.items():
            path = find_rgb_image(sub)
            if path is not None:
                return (key, *path)
    return None


__all__ = [
    "Probe",
    "SpaceMapper",
    "find_rgb_image",
    "forget_probes",
    "log_inferences",
    "probe_session",
]
