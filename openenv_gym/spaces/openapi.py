"""What FastAPI's ``GET /openapi.json`` says about an env's models.

A hand-written FastAPI server (or a first-release ``openenv-core`` one) types its models in
its OpenAPI document: the request body of ``POST /step`` holds the action (``{"action":
<model>}``, or the action's fields directly) and the response models of ``POST /step`` /
``POST /reset`` the observation (an OpenEnv-style ``{observation, reward, done}``, or the
observation itself). ``$ref`` s resolve into ``components/schemas``; an untyped body
(``Dict[str, Any]``, as the official package's generic ``StepRequest``) gives nothing.
:mod:`openenv_gym.spaces.sources` puts this source second, after ``GET /schema``.

Example:
    >>> follow_refs({"$ref": "#/$defs/A"}, {"$defs": {"A": {"type": "integer"}}})
    {'type': 'integer'}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

OPENAPI_STEP_BODY: Final = "GET /openapi.json (the request body of POST /step)"
OPENAPI_RESPONSE: Final = "GET /openapi.json (the response model of POST {path})"
#: Body fields of a ``POST /step`` request besides the action (official ``StepRequest``).
_STEP_ENVELOPE: Final = frozenset({"timeout_s", "request_id"})
#: Names of a session's id: a required body field so named is never an action field.
SESSION_ID_NAMES: Final = frozenset({"game_id", "session_id", "episode_id", "env_id"})


@dataclass(frozen=True)
class OpenapiSchemas:
    """What ``/openapi.json`` says about the models.

    Attributes:
        schemas: ``role -> JSONSchema`` for the roles it types.
        sources: ``role -> source name``.
        step_body: ``"wrapped"`` or ``"fields"`` when the action came from the body.
        notes: Why a role is missing (quoted in errors and ``check``).
        session_fields: Required fields of a ``POST /step`` body of fields that are not the
            action's: the session's id, which the reset reply carries under the same name
            (its response model says so, or the name does: :data:`SESSION_ID_NAMES`) and
            every step sends back (see :func:`session_fields_of`).
    """

    schemas: dict[str, dict[str, Any]]
    sources: dict[str, str]
    step_body: str | None
    notes: tuple[str, ...]
    session_fields: tuple[str, ...] = ()


def openapi_schemas(openapi: Mapping[str, Any]) -> OpenapiSchemas:
    """The action and observation schemas a FastAPI app's OpenAPI document types.

    Example:
        >>> doc = {"paths": {"/step": {"post": {"requestBody": {"content": {
        ...     "application/json": {"schema": {"$ref": "#/components/schemas/Step"}}}}}}},
        ...     "components": {"schemas": {"Step": {"type": "object", "properties": {
        ...         "action": {"$ref": "#/components/schemas/Move"}}},
        ...         "Move": {"type": "object", "properties": {"column": {"type": "integer"}},
        ...                  "required": ["column"]}}}}
        >>> found = openapi_schemas(doc)
        >>> found.step_body, found.schemas["action"]["required"]
        ('wrapped', ['column'])
    """
    found = openapi.get("components")
    components: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    schemas: dict[str, dict[str, Any]] = {}
    sources: dict[str, str] = {}
    notes: list[str] = []
    step_body = None
    session: tuple[str, ...] = ()
    operation = _operation(openapi, "/step")
    body = _body_schema(operation, openapi)
    if body is None:
        notes.append("GET /openapi.json: no typed JSON request body for POST /step")
    else:
        action, step_body = _action_of_body(body, openapi)
        if action is None:
            notes.append(
                "GET /openapi.json: the body of POST /step is "
                + ("{'action': ...} with an untyped action" if step_body else "an untyped object")
                + " (no fields)"
            )
            step_body = None
        else:
            if step_body == "fields":
                reset = _response_schema(_operation(openapi, "/reset"), openapi)
                session = session_fields_of(action, reset)
                action = _without(action, session)
            schemas["action"] = _standalone(action, components)
            sources["action"] = OPENAPI_STEP_BODY
    for path in ("/step", "/reset"):
        response = _response_schema(_operation(openapi, path), openapi)
        observation = _observation_of_response(response, openapi)
        if observation is not None:
            schemas["observation"] = _standalone(observation, components)
            sources["observation"] = OPENAPI_RESPONSE.format(path=path)
            break
    else:
        notes.append("GET /openapi.json: no typed observation in the responses of /step, /reset")
    return OpenapiSchemas(schemas, sources, step_body, tuple(notes), session)


def session_fields_of(
    body: Mapping[str, Any], reset_reply: Mapping[str, Any] | None
) -> tuple[str, ...]:
    """The required fields of a ``POST /step`` body of fields that belong to the session,
    not the action: those the ``/reset`` response model declares beside its observation,
    and those named like a session's id (:data:`SESSION_ID_NAMES`).

    Example:
        >>> body = {"properties": {"game_id": {"type": "string"}, "move": {"type": "string"}},
        ...         "required": ["game_id", "move"]}
        >>> reply = {"properties": {"game_id": {"type": "string"}, "observation": {}}}
        >>> session_fields_of(body, reply), session_fields_of(body, None)
        (('game_id',), ('game_id',))
        >>> session_fields_of({**body, "required": ["move"]}, reply)
        ()
    """
    found = reset_reply.get("properties") if isinstance(reset_reply, Mapping) else None
    declared = set(found) - {"observation"} if isinstance(found, Mapping) else set()
    required = body.get("required") or []
    return tuple(
        name
        for name in body.get("properties") or {}
        if name in required and (name in declared or name in SESSION_ID_NAMES)
    )


def _without(schema: Mapping[str, Any], names: tuple[str, ...]) -> Mapping[str, Any]:
    """``schema`` without the properties ``names`` (the session's, not the action's)."""
    if not names:
        return schema
    properties = {k: v for k, v in schema["properties"].items() if k not in names}
    required = [r for r in schema.get("required", []) if r not in names]
    return {**schema, "properties": properties, "required": required}


def _operation(openapi: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    paths = openapi.get("paths")
    item = paths.get(path) if isinstance(paths, Mapping) else None
    post = item.get("post") if isinstance(item, Mapping) else None
    return post if isinstance(post, Mapping) else {}


def _json_content(holder: Any) -> Any:
    content = holder.get("content") if isinstance(holder, Mapping) else None
    media = content.get("application/json") if isinstance(content, Mapping) else None
    return media.get("schema") if isinstance(media, Mapping) else None


def _body_schema(operation: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return follow_refs(_json_content(operation.get("requestBody")), root)


def _response_schema(
    operation: Mapping[str, Any], root: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    responses = operation.get("responses")
    if not isinstance(responses, Mapping):
        return None
    return follow_refs(_json_content(responses.get("200")), root)


def follow_refs(schema: Any, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Follow ``$ref`` s (local to ``root``, and a one-branch ``allOf``) to the schema they
    name; ``None`` when one does not resolve.

    Example:
        >>> follow_refs({"$ref": "#/$defs/A"}, {"$defs": {"A": {"type": "integer"}}})
        {'type': 'integer'}
    """
    for _ in range(32):  # a chain of references, never a cycle
        if not isinstance(schema, Mapping):
            return None
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            schema = all_of[0]
            continue
        ref = schema.get("$ref")
        if not isinstance(ref, str):
            return schema
        target: Any = root
        for part in ref.lstrip("#").split("/"):
            if part:
                target = target.get(part) if isinstance(target, Mapping) else None
        schema = target
    return None


def _is_typed_object(schema: Mapping[str, Any] | None) -> bool:
    """Whether ``schema`` is an object with fields (not a bare ``Dict[str, Any]``)."""
    return (
        schema is not None
        and isinstance(schema.get("properties"), Mapping)
        and bool(schema["properties"])
    )


#: Keys that give a JSON Schema a type (an ``Any`` field has none of them).
_TYPING_KEYS: Final = frozenset(
    {"type", "anyOf", "oneOf", "allOf", "enum", "const", "properties", "$ref"}
)


def _action_of_body(
    body: Mapping[str, Any], root: Mapping[str, Any]
) -> tuple[Mapping[str, Any] | None, str | None]:
    """The action of a ``POST /step`` body: ``{"action": <model>}`` (wrapped) or the
    action's fields directly; ``None`` for an untyped body."""
    if not _is_typed_object(body):
        return None, None
    properties = body["properties"]
    inner = follow_refs(properties.get("action"), root)
    is_object = inner is None or inner.get("type") == "object" or "properties" in inner
    # {"action": Any}: the wrapper of an action the document does not type
    untyped = inner is not None and not _TYPING_KEYS.intersection(inner)
    if "action" in properties and (is_object or untyped):
        return (inner, "wrapped") if _is_typed_object(inner) else (None, "wrapped")
    fields = {k: v for k, v in properties.items() if k not in _STEP_ENVELOPE}
    if not fields:
        return None, None
    required = [r for r in body.get("required", []) if r in fields]
    return {**body, "properties": fields, "required": required}, "fields"


def _observation_of_response(
    response: Mapping[str, Any] | None, root: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    """The observation of a response model: its ``observation`` field (OpenEnv style) when
    it has one, else the response itself; ``None`` when untyped."""
    if response is None or not _is_typed_object(response):
        return None
    if "observation" in response["properties"]:
        inner = follow_refs(response["properties"]["observation"], root)
        return inner if _is_typed_object(inner) else None
    return response


def _standalone(schema: Mapping[str, Any], components: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with the document's ``components`` beside it, so its references resolve."""
    return {**schema, "components": components} if components else dict(schema)


__all__ = [
    "OPENAPI_RESPONSE",
    "OPENAPI_STEP_BODY",
    "SESSION_ID_NAMES",
    "OpenapiSchemas",
    "follow_refs",
    "openapi_schemas",
    "session_fields_of",
]
