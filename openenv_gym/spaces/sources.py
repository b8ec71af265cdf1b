"""Where the action and observation JSON Schemas come from, each source named.

A server keeps its models in one of a few places, looked up in this order for each role
(action, observation) the user gave no model for:

1. ``GET /schema`` (OpenEnv 0.2 and later): ``{"action": ..., "observation": ...}``;
2. FastAPI's ``GET /openapi.json``: the request body of ``POST /step`` (``{"action":
   <model>}``, or the action's fields directly) and the response model of ``POST /step``
   (else ``POST /reset``): an OpenEnv-style ``{observation, reward, done}`` or the
   observation directly; ``$ref`` s resolve into ``components/schemas``. An untyped body
   (``Dict[str, Any]``, as the official package's generic ``StepRequest``) gives nothing;
3. the user's ``action_model=`` / ``observation_model=``: a Pydantic class or a dataclass
   (the environment's own ``models.py``; first-release servers have dataclasses). A model
   the user passes is used for its role whatever the server serves;
4. the first observation, for the observation when no source above gives it (and, as
   always, for the open shapes of a schema: :mod:`openenv_gym.spaces.inference`).

Where no source gives the action, :func:`find_schemas` raises ONE
:class:`~openenv_gym.errors.SpaceMappingError` naming ``action_model=`` and the env's own
models to pass. Nothing here opens a socket: the caller passes what it fetched.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class MoveAction:
    ...     direction: int
    >>> found = find_schemas(
    ...     schema=None, openapi=None, action_model=MoveAction, observation_model=None
    ... )
    >>> found.sources.action, found.sources.observation
    ('action_model=MoveAction', 'the first observation')
    >>> sorted(found.schema["action"]["properties"])
    ['direction']
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, TypeAdapter

from openenv_gym.errors import SpaceMappingError
from openenv_gym.spaces.openapi import OPENAPI_STEP_BODY, follow_refs, openapi_schemas

#: The name of each source, as the log of inferred spaces and ``check`` print it.
SCHEMA_SOURCE: Final = "GET /schema"
FIRST_OBSERVATION: Final = "the first observation"
#: The key of a placeholder observation schema: the first observation gives its fields.
X_FROM_FIRST_OBSERVATION: Final = "x-from-first-observation"
#: Reply fields beside the observation's own (never part of a space taken from a sample).
_OBSERVATION_ENVELOPE: Final = frozenset({"reward", "done", "metadata"})


@dataclass(frozen=True)
class SpaceSources:
    """Which source gave each role's JSON Schema.

    Attributes:
        action: The source of the action schema, e.g. ``"GET /schema"``.
        observation: The source of the observation schema.
        step_body: How ``POST /step`` takes the action when its body came from
            ``/openapi.json``: ``"wrapped"`` (``{"action": {...}}``) or ``"fields"`` (the
            action's fields directly); ``None`` when the body was not read there.
        tried: What each source that gave nothing answered, in lookup order.
        session_fields: Required ``POST /step`` body fields that are the session's, not the
            action's (e.g. ``game_id``): sent back on every step as the last reply carried
            them (:attr:`OpenapiSchemas.session_fields
            <openenv_gym.spaces.openapi.OpenapiSchemas>`).
    """

    action: str
    observation: str
    step_body: str | None = None
    tried: tuple[str, ...] = ()
    session_fields: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for logs and ``check``.

        Example:
            >>> SpaceSources("GET /schema", "GET /schema").describe()
            'action from GET /schema; observation from GET /schema'
            >>> SpaceSources("x", "y", session_fields=("game_id",)).describe()
            'action from x; observation from y; session field: game_id, echoed from the reset reply'
        """
        line = f"action from {self.action}; observation from {self.observation}"
        if self.session_fields:
            names = ", ".join(self.session_fields)
            line += f"; session field: {names}, echoed from the reset reply"
        return line


@dataclass(frozen=True)
class FoundSchemas:
    """The schemas :func:`find_schemas` found and where each came from.

    Attributes:
        schema: ``{"action": JSONSchema, "observation": JSONSchema, ...}`` (``/schema``'s
            other keys kept); an observation from the first observation is a placeholder
            holding :data:`X_FROM_FIRST_OBSERVATION`.
        sources: The source of each.
        form: ``"http"`` when the server's ``/ws`` is known not to speak OpenEnv (a
            first-release server's web interface), else ``None`` (the session finds out).
    """

    schema: dict[str, Any]
    sources: SpaceSources
    form: str | None = None


def model_schema(model: Any, role: str) -> dict[str, Any]:
    """The JSON Schema of a Pydantic model class or a dataclass.

    Raises:
        SpaceMappingError: ``model`` is neither.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Move:
        ...     column: int
        >>> model_schema(Move, "action")["required"]
        ['column']
    """
    if isinstance(model, type) and issubclass(model, BaseModel):
        return model.model_json_schema()
    if isinstance(model, type) and dataclasses.is_dataclass(model):
        return TypeAdapter(model).json_schema()
    raise SpaceMappingError(
        f"expected {role}_model as a pydantic BaseModel subclass or a dataclass (the "
        f"environment's own {role} class from its models.py), got {model!r}; pass e.g. "
        f"{role}_model=MyEnv{role.capitalize()}",
        field="",
    )


def _model_name(model: Any) -> str:
    return getattr(model, "__name__", repr(model))


def find_schemas(
    *,
    schema: Mapping[str, Any] | None,
    openapi: Mapping[str, Any] | None,
    action_model: Any = None,
    observation_model: Any = None,
    tried: tuple[str, ...] = (),
    call: str = "gym.make('openenv/Remote-v0', base_url=..., {kwargs})",
    env_name: str | None = None,
) -> FoundSchemas:
    """Each role's JSON Schema from the first source that has it (see the module docstring).

    Args:
        schema: ``GET /schema``'s body, or ``None`` when the server has none.
        openapi: ``GET /openapi.json``'s body, or ``None``.
        action_model: The user's action class (Pydantic or dataclass), or ``None``.
        observation_model: The user's observation class, or ``None``.
        tried: What the fetches that failed answered (e.g. ``"GET /schema: HTTP 404"``),
            quoted in the error.
        call: The call to paste, with ``{kwargs}`` where the keywords go.
        env_name: The server's name (``GET /metadata``), to name its models in the error.

    Raises:
        SpaceMappingError: No source gives the action (names ``action_model=``), or a model
            is neither a Pydantic class nor a dataclass.
    """
    found: dict[str, Any] = served_schema(schema) if schema is not None else {}
    names: dict[str, str] = {}
    notes = list(tried)
    for role, model in (("action", action_model), ("observation", observation_model)):
        if model is not None:
            found[role] = model_schema(model, role)
            names[role] = f"{role}_model={_model_name(model)}"
        elif isinstance(found.get(role), Mapping):
            names[role] = SCHEMA_SOURCE
    step_body: str | None = None
    session: tuple[str, ...] = ()
    if len(names) < 2 and openapi is not None:
        from_openapi = openapi_schemas(openapi)
        for role in ("action", "observation"):
            if role not in names and role in from_openapi.schemas:
                found[role] = from_openapi.schemas[role]
                names[role] = from_openapi.sources[role]
        if names.get("action") == OPENAPI_STEP_BODY:
            step_body, session = from_openapi.step_body, from_openapi.session_fields
        notes.extend(from_openapi.notes)
    if "action" not in names:
        raise SpaceMappingError(no_action_message(notes, call, env_name), field="action")
    if "observation" not in names:
        found["observation"] = {"type": "object", "properties": {}, X_FROM_FIRST_OBSERVATION: True}
        names["observation"] = FIRST_OBSERVATION
    sources = SpaceSources(names["action"], names["observation"], step_body, tuple(notes), session)
    return FoundSchemas(found, sources)


def served_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``GET /schema``'s body with an observation schema that is the reply wrapper (a typed
    object field ``observation`` beside others, e.g. ``{observation: {...}, task_id}``)
    unwrapped: the observation a reply carries is the inner object.

    Example:
        >>> inner = {"type": "object", "properties": {"queue": {"type": "integer"}}}
        >>> served = served_schema(
        ...     {"observation": {"properties": {"observation": inner, "task_id": {}}}}
        ... )
        >>> list(served["observation"]["properties"])
        ['queue']
    """
    found = dict(schema)
    observation = found.get("observation")
    fields = observation.get("properties") if isinstance(observation, Mapping) else None
    if isinstance(observation, Mapping) and isinstance(fields, Mapping) and "observation" in fields:
        inner = follow_refs(fields["observation"], observation)
        if (
            inner is not None
            and isinstance(inner.get("properties"), Mapping)
            and inner["properties"]
        ):
            defs = {k: observation[k] for k in ("$defs", "definitions") if k in observation}
            found["observation"] = {**inner, **defs}
    return found


def no_action_message(tried: list[str], call: str, env_name: str | None) -> str:
    """The one error where no source gives the action: what each source answered, and
    the call with the env's own models to paste.

    Example:
        >>> print(no_action_message(["GET /schema: HTTP 404"], "gym.make(..., {kwargs})",
        ...                         "MazeEnvironment").splitlines()[-1])
        Paste and edit: gym.make(..., action_model=MazeAction, observation_model=MazeObservation)
    """
    action, observation = (f"{model_prefix(env_name)}{role}" for role in ("Action", "Observation"))
    lines = [
        "no source gives the action's fields, so the action space cannot be built:",
        *(f"  - {note}" for note in tried),
        "Pass the environment's own action class (and observation class) from its models.py, "
        "as a pydantic model or a dataclass: action_model= (observation_model= is optional: "
        "without it the first observation gives the observation's fields). "
        f"Import them first, e.g. `from <env package>.models import {action}, {observation}`.",
        "Paste and edit: "
        + call.replace("{kwargs}", f"action_model={action}, observation_model={observation}"),
    ]
    return "\n".join(lines)


def model_prefix(env_name: str | None) -> str:
    """The prefix of an env's model classes from its name: a class name loses its
    ``Environment``/``Env`` suffix, a package name (``walk_env``, the first release's
    ``env_name``) becomes CamelCase without ``_env``; ``My`` with no name.

    Example:
        >>> model_prefix("MazeEnvironment"), model_prefix("walk_env"), model_prefix("sumo_rl_env")
        ('Maze', 'Walk', 'SumoRl')
        >>> model_prefix(None), model_prefix("Env")
        ('My', 'Env')
    """
    prefix = env_name or "MyEnv"
    if "_" in prefix or prefix.islower():
        words = [w for w in re.split(r"[_\W]+", prefix) if w]
        if len(words) > 1 and words[-1].lower() == "env":
            words = words[:-1]
        return "".join(w[:1].upper() + w[1:] for w in words) or "MyEnv"
    for suffix in ("Environment", "Env"):
        if prefix.endswith(suffix) and len(prefix) > len(suffix):
            return prefix[: -len(suffix)]
    return prefix


def observation_schema_from_sample(sample: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON Schema of the fields of one observation (:data:`FIRST_OBSERVATION`), for a
    server no source types: numbers, booleans, strings, lists (numeric ones get their shape
    from the same observation) and nested objects (nullable: an object at reset may be
    ``null`` later, so it gets a ``_present`` flag); ``None`` and empty lists give no type,
    so they go to ``info``, as do the envelope fields (``reward``, ``done``, ``metadata``).

    Example:
        >>> schema = observation_schema_from_sample({"board": [[0, 1]], "turn": 1, "note": None})
        >>> schema["properties"]
        {'board': {'type': 'array', 'items': {'type': 'array', 'items': {'type': 'integer'}}}, \
'turn': {'type': 'integer'}}
    """
    properties: dict[str, Any] = {}
    for name, value in sample.items():
        if name in _OBSERVATION_ENVELOPE:
            continue
        field = _value_schema(value)
        if field is not None:
            properties[name] = field
    return {"type": "object", "properties": properties, "required": list(properties)}


def _value_schema(value: Any) -> dict[str, Any] | None:
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, list) and value:
        items = _value_schema(value[0])
        return {"type": "array", "items": items} if items is not None else None
    if isinstance(value, Mapping) and value:
        nested = observation_schema_from_sample({str(k): v for k, v in value.items()})
        # nullable: servers send an object now and null later (a lab result not yet in)
        return {"anyOf": [nested, {"type": "null"}]} if nested["properties"] else None
    return None


__all__ = [
    "FIRST_OBSERVATION",
    "SCHEMA_SOURCE",
    "X_FROM_FIRST_OBSERVATION",
    "FoundSchemas",
    "SpaceSources",
    "find_schemas",
    "model_prefix",
    "model_schema",
    "no_action_message",
    "observation_schema_from_sample",
    "served_schema",
]
