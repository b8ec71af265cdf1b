"""How an :class:`~openenv_gym.env.OpenEnvEnv` gets its codecs from a server.

* The JSON Schemas, each from a named source (:mod:`openenv_gym.spaces.sources`): the
  user's models (Pydantic or dataclass) when given, else ``GET /schema``, else FastAPI's
  ``GET /openapi.json``, else (the observation only) the first observation. The sources
  are logged once per server and kept as :attr:`FoundSchemas.sources
  <openenv_gym.spaces.sources.FoundSchemas>` (``env.unwrapped.space_sources``).
* A catalog env whose action size no server declares (maze, connect4, the OpenSpiel
  games): the profile matching the server's identity (``GET /metadata``'s name, the schema's
  fingerprint, the game it reports), :mod:`openenv_gym.spaces.catalog`.
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
* A reply in Gymnasium's terms, for the env and the vector env alike: its
  ``(terminated, truncated)`` (:func:`episode_flags`) and its ``info`` (:func:`reply_info`).

Example:
    >>> mapper = SpaceMapper("http://127.0.0.1:8000", token=None, timeout=10.0, options={})
    >>> mapper.base_url
    'http://127.0.0.1:8000'
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, TypeVar

import numpy as np
from gymnasium import spaces

from openenv_gym.client import Session, fetch_schema, get_json
from openenv_gym.client.mcp_tools import fetch_tools
from openenv_gym.client.options import HTTP_FORM
from openenv_gym.errors import (
    NoStateRouteError,
    NotAnOpenEnvServerError,
    ServerConnectionError,
    SpaceMappingError,
)
from openenv_gym.spaces import ActionCodec, ObservationCodec, action_codec, observation_codec
from openenv_gym.spaces.catalog import UNSIZED, match_profile
from openenv_gym.spaces.inference import (
    ActionHints,
    Inference,
    declared_count,
    is_legal_actions_name,
    space_source,
)
from openenv_gym.spaces.problems import ENV_KEYWORDS, MappingProblem, format_problems
from openenv_gym.spaces.sources import (
    X_FROM_FIRST_OBSERVATION,
    FoundSchemas,
    SpaceSources,
    find_schemas,
    observation_schema_from_sample,
)
from openenv_gym.spaces.tool_list import ToolSpec, is_bare_action_schema, is_tool_call_schema
from openenv_gym.spaces.tools import tool_codecs
from openenv_gym.spaces.uci_moves import may_be_chess, with_uci_moves
from openenv_gym.wire.messages import (
    HEALTH_PATH,
    METADATA_PATH,
    ObservationReply,
    StateReply,
    reset_message,
    state_message,
)

logger = logging.getLogger("openenv_gym")
_Codec = TypeVar("_Codec", ActionCodec, ObservationCodec)
_LOGGED_INFERENCES: set[tuple[str, str]] = set()
#: Where a FastAPI app keeps its OpenAPI document (its typed models among it).
OPENAPI_PATH = "/openapi.json"

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


def log_sources(base_url: str, sources: SpaceSources) -> None:
    """Log where the action and observation schemas came from, once per process and server."""
    key = (base_url, "sources: " + sources.describe())
    if key not in _LOGGED_INFERENCES:
        _LOGGED_INFERENCES.add(key)
        logger.info("%s: spaces: %s", base_url, sources.describe())


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
    try:
        state = session.request(state_message())
    except NoStateRouteError:  # an HTTP server without GET /state: nothing to learn from it
        state = None
    fields = state.state if isinstance(state, StateReply) else {}
    if isinstance(fields.get("action_spec"), dict):
        spec = fields["action_spec"]
    count = declared_count(fields, sample.get("metadata"), reply.metadata)
    return sample, ActionHints(legal=legal, spec=spec, count=count, state=dict(fields))


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


#: Where a first-release server (``openenv-core`` 0.1) with its web interface says its name.
FIRST_RELEASE_METADATA_PATH: Final = "/web/metadata"


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

    def find_schemas(
        self,
        action_model: Any = None,
        observation_model: Any = None,
        adapt: Callable[[dict[str, Any]], dict[str, Any]] = lambda schema: schema,
    ) -> FoundSchemas:
        """The action and observation JSON Schemas and their sources
        (:func:`~openenv_gym.spaces.sources.find_schemas`): a model given for a role, else
        ``GET /schema`` (through ``adapt``, a client's completion of a server family's
        schema), else ``GET /openapi.json``, else (the observation) the first observation.

        Raises:
            SpaceMappingError: No source gives the action (the error names
                ``action_model=``), or a model is neither Pydantic nor a dataclass.
        """
        schema: dict[str, Any] | None = None
        openapi: dict[str, Any] | None = None
        tried: list[str] = []
        if action_model is None or observation_model is None:
            try:
                schema = adapt(fetch_schema(self.base_url, timeout=self.timeout, token=self.token))
            except NotAnOpenEnvServerError as exc:
                tried.append(f"GET /schema: {exc}")
        lacking = [
            role
            for role, model in (("action", action_model), ("observation", observation_model))
            if model is None and not (schema and isinstance(schema.get(role), dict))
        ]
        if lacking:
            openapi = self._optional_json(OPENAPI_PATH, tried)
        try:
            found = find_schemas(
                schema=schema,
                openapi=openapi,
                action_model=action_model,
                observation_model=observation_model,
                tried=tuple(tried),
                call=f"gym.make('openenv/Remote-v0', base_url={self.base_url!r}, {{kwargs}})",
            )
        except SpaceMappingError as exc:
            if exc.field != "action" or action_model is not None:
                raise
            if schema is None and openapi is None:
                self._require_health(tried)
            # The name: GET /metadata, else the first release's web interface (openenv-core
            # 0.1 with ENABLE_WEB_INTERFACE) at GET /web/metadata.
            metadata = self._optional_json(METADATA_PATH, []) or self._optional_json(
                FIRST_RELEASE_METADATA_PATH, []
            )
            name = metadata.get("name") if isinstance(metadata, dict) else None
            found = find_schemas(  # raises again, naming the server's own models
                schema=schema,
                openapi=openapi,
                observation_model=observation_model,
                tried=tuple(tried),
                call=f"gym.make('openenv/Remote-v0', base_url={self.base_url!r}, {{kwargs}})",
                env_name=name if isinstance(name, str) else None,
            )
        if schema is None and self._first_release_web():
            found = replace(found, form=HTTP_FORM)
        log_sources(self.base_url, found.sources)
        return found

    def _first_release_web(self) -> bool:
        """Whether the server is a first release's (``openenv-core`` 0.1) with its web
        interface (``GET /web/metadata`` answers): its ``/ws`` is the web page's, not
        OpenEnv's. Asked only of servers without ``/schema``; a failure to ask is a no (the
        session then reports the server's own error)."""
        try:
            return isinstance(self._optional_json(FIRST_RELEASE_METADATA_PATH, []), dict)
        except ServerConnectionError:
            return False

    def _require_health(self, tried: list[str]) -> None:
        """Raise when nothing at the URL looks like an env server: no ``/schema``, no
        ``/openapi.json`` and no healthy ``GET /health``.

        Raises:
            NotAnOpenEnvServerError: ``/health`` did not answer 2xx either.
        """
        health: list[str] = []
        if self._optional_json(HEALTH_PATH, health) is None:
            raise NotAnOpenEnvServerError(
                f"{self.base_url} does not serve an OpenEnv environment: "
                + "; ".join([*tried, *health])
                + ". Is base_url the server's root (no path suffix), and is the server up?",
                url=self.base_url,
            )

    def _optional_json(self, path: str, tried: list[str]) -> Any:
        """``GET path``'s JSON body, or ``None`` (noted in ``tried``) when the server has
        none there; an authentication or connection failure propagates."""
        try:
            return get_json(self.base_url, path, timeout=self.timeout, token=self.token)
        except NotAnOpenEnvServerError as exc:
            tried.append(f"GET {path}: {exc}")
            return None

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
        probe, probed_as, facts = self.probe, schema, ""
        if schema["observation"].get(X_FROM_FIRST_OBSERVATION) and probe is not None:
            sample, _ = self._probed(probe, probed_as)
            schema = {**schema, "observation": observation_schema_from_sample(sample)}
        if probe is not None and may_be_chess(schema):  # a free string field: a UCI move?
            schema = with_uci_moves(schema, self._probed(probe, probed_as)[0])
        act, obs, problems = self._map(schema, None, None)
        if problems and any(p.needs_data for p in problems) and probe is not None:
            sample, hints = self._probed(probe, probed_as)
            act, obs, problems = self._map(schema, sample, hints)
            if act is None and hints.count is None:
                metadata = self._optional_json(METADATA_PATH, [])
                profile = match_profile(metadata, schema, hints.state)
                count = profile.count_in(sample) if profile is not None else None
                if profile is not None and count is not None:
                    known = {profile.field: (count, profile.source)}
                    act, obs, problems = self._map(schema, sample, replace(hints, known=known))
                else:
                    unsized = match_profile(metadata, schema, hints.state, UNSIZED)
                    facts = f"Known facts: {unsized.source}" if unsized is not None else ""
        if problems or act is None or obs is None:
            message = format_problems(
                problems,
                ENV_KEYWORDS,
                call=f"gym.make('openenv/Remote-v0', base_url={self.base_url!r}, {{kwargs}})",
                given=options_source(self.options),
            )
            if facts:  # before the call to paste, which stays the last line
                *head, last = message.splitlines()
                message = "\n".join([*head, facts, last])
            raise SpaceMappingError(
                message,
                field=problems[0].path if problems else "",
                schema=problems[0].fragment if problems else None,
                problems=tuple(problems),
            )
        log_inferences(self.base_url, (*act.inferred, *obs.inferred))
        for path, why in act.left_out.items():
            logger.info("%s: the action field %r is left out: %s", self.base_url, path, why)
        return act, obs, ()

    def _probed(
        self, probe: Probe, schema: Mapping[str, Any]
    ) -> tuple[dict[str, Any], ActionHints]:
        """``probe(schema)``, kept per server, schema, options and reset keys."""
        key = (
            self.base_url,
            json.dumps(schema, sort_keys=True, default=repr),
            repr(sorted(self.options.items())),
            self.probe_key,
        )
        if key not in _PROBED:
            _PROBED[key] = probe(schema)
        return _PROBED[key]

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
    "episode_flags",
    "find_rgb_image",
    "forget_probes",
    "log_inferences",
    "log_sources",
    "probe_session",
    "reply_info",
]


_ENVELOPE_INFO_KEY: Final = "metadata"
#: Where ``info`` holds the legal-action mask.
ACTION_MASK_KEY: Final = "action_mask"


def episode_flags(
    codec: ObservationCodec,
    observation: Mapping[str, Any],
    done: bool,
    stated: tuple[bool, bool] | None = None,
) -> tuple[bool, bool]:
    """``(terminated, truncated)`` of a reply: as the server ``stated`` them when it sent
    Gymnasium's own flags; exact with ``x-terminated-key`` and ``x-truncated-key``, else
    ``done`` is termination unless the truncation field is set or the codec's
    :meth:`~openenv_gym.spaces.ObservationCodec.truncates` rule says so."""
    if stated is not None:
        return stated
    truncated_key = codec.truncated_key
    truncated = bool(observation.get(truncated_key, False)) if truncated_key else False
    terminated_key = codec.terminated_key
    if terminated_key is not None and terminated_key in observation:
        return bool(observation[terminated_key]), truncated
    if done and not truncated and codec.truncation_rule:
        truncated = codec.truncates(observation)
    return bool(done) and not truncated, truncated


def reply_info(
    codec: ObservationCodec, reply: ObservationReply, mask: np.ndarray | None = None
) -> dict[str, Any]:
    """The Gymnasium ``info`` of a reply: the fields outside the space, ``metadata`` merged,
    and ``info["action_mask"]`` (``int8``) when ``mask`` is given: Gymnasium's convention,
    as Taxi's, ``env.action_space.sample(mask=info["action_mask"])``."""
    extras = codec.extras(reply.observation)
    flags = (_ENVELOPE_INFO_KEY, codec.truncated_key, codec.terminated_key)
    info = {k: v for k, v in extras.items() if k not in flags}
    nested = extras.get(_ENVELOPE_INFO_KEY)
    if isinstance(nested, dict):
        info.update(nested)
    info.update(reply.metadata)
    if mask is not None:
        info[ACTION_MASK_KEY] = mask.astype(np.int8)
    return info
