"""The codecs of one MCP tool: its arguments and its result, from its JSON Schemas.

Each argument is mapped by :func:`~openenv_gym.spaces.schema.map_action_schema` with the rules
of any action schema; an argument no space describes travels as JSON text
(:class:`~openenv_gym.spaces.json_text.JsonText`). A result is typed from the tool's output
schema when it declares one that maps, else it is JSON text. The whole tool env's codecs are
built by :func:`openenv_gym.spaces.tools.tool_codecs`.

Example:
    >>> from openenv_gym.spaces.tool_list import ToolSpec
    >>> tool = ToolSpec("add", input_schema={
    ...     "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9}},
    ...     "required": ["a"]})
    >>> map_tool_arguments(tool).space
    Dict('a': Discrete(10))
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

from gymnasium import spaces

from openenv_gym.errors import SpaceMappingError
from openenv_gym.spaces.field_rules import (
    DEFAULT_ACTION_TEXT_MAX_LENGTH,
    DEFAULT_OBSERVATION_TEXT_MAX_LENGTH,
)
from openenv_gym.spaces.fields import DictCodec, FieldCodec
from openenv_gym.spaces.json_text import JsonText, JsonTextCodec
from openenv_gym.spaces.schema import map_action_schema, map_observation_schema
from openenv_gym.spaces.serialization import X_ACTION_KEY, X_OBSERVATION_KEY
from openenv_gym.spaces.tool_list import ToolSpec

logger = logging.getLogger("openenv_gym")

#: FastMCP marks outputs it wrapped as ``{"result": value}`` with this output-schema key.
WRAPPED_RESULT: Final = "x-fastmcp-wrap-result"


def arguments_by_tool(
    option: str, names: Collection[str], tools: Sequence[ToolSpec]
) -> dict[str, set[str]]:
    """``{"tool.argument", ...}`` -> ``{tool: {"argument", ...}}``; unknown tools raise."""
    known = {tool.name for tool in tools}
    out: dict[str, set[str]] = {}
    for name in names:
        tool, _, rest = name.partition(".")
        if tool not in known or not rest:
            raise SpaceMappingError(
                f"{option} names {name!r}; for an MCP tool env, name tool arguments as "
                f"'tool.argument' with a tool of {sorted(known)}",
                field=name,
            )
        out.setdefault(tool, set()).add(rest)
    return out


def _argument_codec(
    tool: ToolSpec,
    name: str,
    schema: Any,
    field_spaces: Mapping[str, spaces.Space[Any]],
    include: Collection[str],
) -> FieldCodec:
    """One argument's codec: the schema mapper's, else JSON text (logged)."""
    wrapper = {
        "properties": {name: schema},
        "required": [name],
        X_ACTION_KEY: name,
        "$defs": tool.input_schema.get("$defs", {}),
        "definitions": tool.input_schema.get("definitions", {}),
    }
    own_spaces = {p: s for p, s in field_spaces.items() if p.split(".")[0] == name}
    own_include = [p for p in include if p.split(".")[0] == name and p != name]
    try:
        return map_action_schema(wrapper, field_spaces=own_spaces, include=own_include).codec
    except SpaceMappingError as exc:
        if own_spaces or own_include:
            raise SpaceMappingError(
                f"tool {tool.name!r}: {exc}", field=f"{tool.name}.{name}"
            ) from exc
        logger.info(
            "MCP tool %r: argument %r has no fixed space (%s); it travels as JSON text",
            tool.name,
            name,
            exc,
        )
        space = JsonText(DEFAULT_ACTION_TEXT_MAX_LENGTH, schema=_with_defs(schema, tool))
        return JsonTextCodec(space)


def _with_defs(schema: Any, tool: ToolSpec) -> dict[str, Any]:
    """``schema`` with the tool's ``$defs`` beside it (so its references resolve)."""
    out = dict(schema) if isinstance(schema, Mapping) else {}
    for key in ("$defs", "definitions"):
        if key in tool.input_schema and key not in out:
            out[key] = tool.input_schema[key]
    return out


def map_tool_arguments(
    tool: ToolSpec,
    *,
    include: Collection[str] = (),
    field_spaces: Mapping[str, spaces.Space[Any]] | None = None,
) -> DictCodec:
    """The ``Dict`` of a tool's arguments: required ones, plus the optional ones named in
    ``include`` or ``field_spaces`` (argument paths, ``"where.x"``), in schema order.

    Raises:
        SpaceMappingError: ``include``/``field_spaces`` name an argument the tool lacks, or
            an explicit space does not fit.
    """
    properties = tool.input_schema.get("properties") or {}
    required = set(tool.input_schema.get("required") or ())
    spaces_given = dict(field_spaces or {})
    top_named = {p.split(".")[0] for p in (*include, *spaces_given)}
    unknown = sorted(top_named - set(properties))
    if unknown:
        raise SpaceMappingError(
            f"tool {tool.name!r} has no argument {unknown[0]!r}; its arguments are "
            f"{list(properties)}",
            field=f"{tool.name}.{unknown[0]}",
        )
    items = [
        (name, _argument_codec(tool, name, schema, spaces_given, include))
        for name, schema in properties.items()
        if name in required or name in top_named
    ]
    return DictCodec(items)


def map_tool_result(tool: ToolSpec) -> tuple[FieldCodec, bool]:
    """A tool's result codec, and whether FastMCP wraps its results as ``{"result": ...}``.

    Typed from the output schema when it declares one that maps; else JSON text.
    """
    output = tool.output_schema
    wrapped = bool(output and output.get(WRAPPED_RESULT))
    if output:
        schema: Any = output
        if wrapped:
            schema = (output.get("properties") or {}).get("result", {})
        wrapper = {
            "properties": {"result": schema},
            X_OBSERVATION_KEY: "result",
            "$defs": output.get("$defs", {}),
            "definitions": output.get("definitions", {}),
        }
        try:
            mapping = map_observation_schema(wrapper)
            codec: FieldCodec | None = mapping.codec  # None: a field left to info
            if codec is not None and mapping.key == "result":
                return codec, wrapped
        except SpaceMappingError as exc:
            logger.info(
                "MCP tool %r: its output schema has no fixed space (%s); results are JSON text",
                tool.name,
                exc,
            )
    space = JsonText(DEFAULT_OBSERVATION_TEXT_MAX_LENGTH, schema=output or {})
    return JsonTextCodec(space), wrapped
