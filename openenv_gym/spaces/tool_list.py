"""An MCP tool environment's tool list: the tools it names and how to tell such a server.

:func:`parse_tool_list` reads a server's ``tools/list`` answer (or OpenEnv's
``ListToolsObservation.tools``) into :class:`ToolSpec` objects; :func:`is_tool_call_schema`
and :func:`is_bare_action_schema` tell an MCP tool environment by its ``GET /schema``. The
spaces built from the list are in :mod:`openenv_gym.spaces.tools`.

Example:
    >>> parse_tool_list([{"name": "echo", "inputSchema": {"properties": {}}}])[0].name
    'echo'
    >>> is_tool_call_schema({"properties": {"tool_name": {}, "arguments": {}}})
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from openenv_gym.errors import SpaceMappingError
from openenv_gym.spaces.describe import describe_value

#: The ``type`` of the wire action that calls a tool.
CALL_TOOL: Final = "call_tool"
#: The ``type`` of the wire action that lists the tools.
LIST_TOOLS: Final = "list_tools"


@dataclass(frozen=True)
class ToolSpec:
    """One tool of an MCP tool environment, as its server lists it.

    Attributes:
        name: The tool's name (what ``tool_name`` carries on the wire).
        description: What the tool does.
        input_schema: The JSON Schema of its arguments (an object schema).
        output_schema: The JSON Schema of its structured result, or ``None``.
    """

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    output_schema: Mapping[str, Any] | None = None


def parse_tool_list(raw: Any) -> tuple[ToolSpec, ...]:
    """A server's tool list (MCP ``tools/list`` or OpenEnv ``ListToolsObservation.tools``:
    ``inputSchema`` or ``input_schema``) -> :class:`ToolSpec` objects, in its order.

    Raises:
        SpaceMappingError: The list is empty, or an entry is not a tool.
    """
    if not isinstance(raw, list) or not raw:
        raise SpaceMappingError(
            f"expected the server's tool list as a non-empty list of tools, got "
            f"{describe_value(raw)}; an MCP tool environment must list at least one tool",
            field="tools",
            schema=raw,
        )
    tools = []
    for entry in raw:
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or not name:
            raise SpaceMappingError(
                f"expected each tool as an object with a 'name', got {describe_value(entry)}",
                field="tools",
                schema=entry,
            )
        inputs = entry.get("inputSchema", entry.get("input_schema"))
        outputs = entry.get("outputSchema", entry.get("output_schema"))
        tools.append(
            ToolSpec(
                name=name,
                description=str(entry.get("description") or ""),
                input_schema=dict(inputs) if isinstance(inputs, Mapping) else {},
                output_schema=dict(outputs) if isinstance(outputs, Mapping) else None,
            )
        )
    return tuple(tools)


def is_tool_call_schema(action_schema: Any) -> bool:
    """Whether an action JSON Schema is OpenEnv's ``CallToolAction`` (``tool_name`` and
    ``arguments`` fields): the mark of an MCP tool environment in ``GET /schema``."""
    if not isinstance(action_schema, Mapping):
        return False
    properties = action_schema.get("properties")
    return isinstance(properties, Mapping) and {"tool_name", "arguments"} <= set(properties)


def is_bare_action_schema(action_schema: Any) -> bool:
    """Whether an action JSON Schema has no fields of its own (OpenEnv's base ``Action``,
    served by envs that take MCP actions only); such a server is asked for its tools."""
    if not isinstance(action_schema, Mapping):
        return False
    properties = action_schema.get("properties") or {}
    return isinstance(properties, Mapping) and set(properties) <= {"metadata", "type"}
