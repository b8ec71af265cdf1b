"""MCP tool environments: a tool list -> the action and observation spaces and their codecs.

An MCP tool environment (OpenEnv's echo, coding, REPL, git, ... envs) takes only two
actions on the wire, ``{"type": "list_tools"}`` and
``{"type": "call_tool", "tool_name": ..., "arguments": {...}}``; its observations carry the
called tool's ``result`` and an ``error``. The spaces come from the server's tool list:

* **Action**: ``gymnasium.spaces.OneOf`` with one ``Dict`` of arguments per tool, in the
  server's order. An action is ``(tool_index, arguments)``; ``action_space.sample()`` draws one
  tool and arguments for that tool only, so every sample is one well-formed call. (A
  ``Dict`` of a ``Discrete`` tool choice plus every tool's arguments would make the learner
  emit arguments for all tools at each step; no SB3 algorithm takes either space directly,
  and OneOf is Gymnasium's own tagged union, batched and flattened by ``gymnasium.vector``
  and ``gymnasium.spaces.flatten``.) The tool may also be given by name:
  ``("echo_message", {"message": "hi"})``.
* Each tool's arguments are mapped from its input JSON Schema by
  :mod:`openenv_gym.spaces.schema`, with the rules of any action schema: required arguments
  are in the space, optional ones are left to the server's default unless named in
  ``include`` (``"tool.argument"``). An argument no space describes (``Any``, ``dict[str,
  ...]``, an unbounded ``int``) travels as JSON text (:class:`~.json_text.JsonText`, charset
  :data:`~openenv_gym.spaces.fields.DEFAULT_TEXT_CHARSET`, at most
  :data:`~openenv_gym.spaces.field_rules.DEFAULT_ACTION_TEXT_MAX_LENGTH` characters).
* **Observation**: ``Dict(tool=Discrete(n + 1, start=-1), result=Dict(<tool>: space, ...),
  error=Text)``. ``tool`` is the index of the tool that answered (``-1`` after ``reset``);
  ``result[<tool>]`` is that tool's result (the other tools' entries hold their neutral
  value): typed from the tool's output schema when it declares one that maps (FastMCP's
  wrapped ``{"result": ...}`` outputs are unwrapped), else JSON text of at most
  :data:`~openenv_gym.spaces.field_rules.DEFAULT_OBSERVATION_TEXT_MAX_LENGTH` characters.
  ``error`` is ``""``, or ``"<error_type>: <message>"`` when the tool failed.
* A call the server refuses (unknown tool, arguments its schema rejects) raises
  :class:`~openenv_gym.errors.ToolCallRefusedError` naming the tool and the argument; an
  action outside the space raises :class:`~openenv_gym.errors.ActionOutOfSpaceError`
  naming them, and nothing is sent.

Example:
    >>> tools = parse_tool_list([{"name": "add", "inputSchema": {
    ...     "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9}},
    ...     "required": ["a"]}}])
    >>> act, obs = tool_codecs(tools)
    >>> act.space
    OneOf(Dict('a': Discrete(10)))
    >>> act.encode(("add", {"a": 3}))
    {'type': 'call_tool', 'tool_name': 'add', 'arguments': {'a': 3}}
"""

from __future__ import annotations

import json
import logging
import re
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
from gymnasium import spaces

from openenv_gym.errors import (
    ActionOutOfSpaceError,
    CodecError,
    SpaceMappingError,
    ToolCallRefusedError,
)
from openenv_gym.spaces.codec import ActionCodec, ObservationCodec
from openenv_gym.spaces.describe import describe_space, describe_value
from openenv_gym.spaces.fields import (
    DEFAULT_TEXT_CHARSET,
    DefaultCharsetText,
    DictCodec,
    FieldCodec,
    TextCodec,
)
from openenv_gym.spaces.json_text import JsonText, JsonTextCodec
from openenv_gym.spaces.membership import coerce
from openenv_gym.spaces.schema import (
    DEFAULT_ACTION_TEXT_MAX_LENGTH,
    DEFAULT_OBSERVATION_TEXT_MAX_LENGTH,
    SchemaMapping,
    map_action_schema,
    map_observation_schema,
)
from openenv_gym.spaces.serialization import X_ACTION_KEY, X_OBSERVATION_KEY

logger = logging.getLogger("openenv_gym")

#: The ``type`` of the wire action that calls a tool.
CALL_TOOL: Final = "call_tool"
#: The ``type`` of the wire action that lists the tools.
LIST_TOOLS: Final = "list_tools"
#: The value of the observation's ``tool`` after ``reset`` (no tool answered).
NO_TOOL: Final = -1
#: Error types of a call the server refused (rather than a tool that ran and failed).
REFUSAL_ERROR_TYPES: Final = frozenset({"invalid_args", "tool_not_found"})
#: FastMCP's (pydantic ``validate_call``) message for arguments that fail the input schema.
_VALIDATION_MESSAGE: Final = re.compile(r"validation errors? for call\[")
#: FastMCP marks outputs it wrapped as ``{"result": value}`` with this output-schema key.
_WRAPPED_RESULT: Final = "x-fastmcp-wrap-result"


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


# ---------------------------------------------------------------------- mapping


def _by_tool(option: str, names: Collection[str], tools: Sequence[ToolSpec]) -> dict[str, set[str]]:
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
    wrapped = bool(output and output.get(_WRAPPED_RESULT))
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


# ---------------------------------------------------------------------- codecs


class ToolCallCodec(FieldCodec):
    """A tool call ``(tool_index, arguments)`` in ``OneOf(args_0, ..., args_n-1)`` <-> the
    wire action ``{"type": "call_tool", "tool_name": ..., "arguments": {...}}``."""

    def __init__(self, tools: Sequence[ToolSpec], arguments: Sequence[DictCodec]) -> None:
        self.tools = tuple(tools)
        self.arguments = tuple(arguments)
        self.space = spaces.OneOf([codec.space for codec in self.arguments])
        self._index = {tool.name: i for i, tool in enumerate(self.tools)}

    def check(self, action: Any) -> tuple[int, OrderedDict[str, Any]]:
        """``action`` as ``(tool_index, arguments)`` of the space, normalized.

        Raises:
            ActionOutOfSpaceError: Not a ``(tool, arguments)`` pair, an unknown tool, or
                arguments outside the tool's space; the message names the tool and argument.
        """
        names = [tool.name for tool in self.tools]
        if not isinstance(action, tuple | list) or len(action) != 2:
            raise ActionOutOfSpaceError(
                f"expected a tool call (tool_index, arguments) for {describe_space(self.space)}"
                f", got {describe_value(action)}; e.g. ({names[0]!r}, {{...}}) or "
                "env.action_space.sample()"
            )
        tool, arguments = action
        if isinstance(tool, str):
            index = self._index.get(tool)
        elif isinstance(tool, int | np.integer) and not isinstance(tool, bool | np.bool_):
            index = int(tool) if 0 <= int(tool) < len(self.tools) else None
        else:
            index = None
        if index is None:
            raise ActionOutOfSpaceError(
                f"unknown tool {tool!r}: expected a tool index in [0, {len(names) - 1}] or one "
                f"of the names {names}",
                field="tool_name",
            )
        name = names[index]
        try:
            member = coerce(self.arguments[index].space, arguments, "")
        except CodecError as exc:
            where = f"argument {exc.field!r}" if exc.field else "its arguments"
            raise ActionOutOfSpaceError(
                f"tool {name!r}, {where}: {exc}. The tool's arguments are "
                f"{describe_space(self.arguments[index].space)}; use "
                "env.action_space.sample() to see a valid call",
                field=f"{name}.{exc.field}" if exc.field else name,
            ) from exc
        return index, member

    def decode(self, wire: Any, path: str) -> tuple[int, OrderedDict[str, Any]]:
        if not isinstance(wire, Mapping) or wire.get("type", CALL_TOOL) != CALL_TOOL:
            raise self._mismatch(path, "a call_tool action", wire)
        index = self._index.get(wire.get("tool_name"))  # type: ignore[arg-type]
        if index is None:
            raise self._mismatch(path, f"a tool of {list(self._index)}", wire.get("tool_name"))
        name = self.tools[index].name
        return index, self.arguments[index].decode(wire.get("arguments", {}), name)

    def encode(self, value: Any, path: str) -> dict[str, Any]:
        index, arguments = value
        return {
            "type": CALL_TOOL,
            "tool_name": self.tools[index].name,
            "arguments": self.arguments[index].encode(arguments, self.tools[index].name),
        }

    def neutral(self) -> tuple[int, OrderedDict[str, Any]]:
        return 0, self.arguments[0].neutral()


class ToolActionCodec(ActionCodec):
    """The action codec of an MCP tool env (see the module docstring)."""

    def __init__(self, call: ToolCallCodec) -> None:
        super().__init__(SchemaMapping(call, None))
        self._call = call

    def encode(self, action: Any) -> dict[str, Any]:
        """A tool call -> the wire action.

        Raises:
            ActionOutOfSpaceError: The call is not in :attr:`space` (nothing is sent); the
                message names the tool and the argument.
        """
        return self._call.encode(self._call.check(action), "")


class ToolObservationCodec(FieldCodec):
    """A wire ``CallToolObservation`` (or the reset observation) <-> the observation
    ``Dict(tool, result, error)`` (see the module docstring)."""

    def __init__(self, tools: Sequence[ToolSpec], results: Sequence[tuple[FieldCodec, bool]]):
        self.tools = tuple(tools)
        self.results = tuple(codec for codec, _ in results)
        self._wrapped = tuple(wrapped for _, wrapped in results)
        self._index = {tool.name: i for i, tool in enumerate(self.tools)}
        self._error = DefaultCharsetText(DEFAULT_OBSERVATION_TEXT_MAX_LENGTH)
        self.space = spaces.Dict(
            [
                ("tool", spaces.Discrete(len(self.tools) + 1, start=NO_TOOL)),
                (
                    "result",
                    spaces.Dict(
                        [(t.name, c.space) for t, c in zip(self.tools, self.results, strict=True)]
                    ),
                ),
                ("error", self._error),
            ]
        )

    def decode(self, wire: Any, path: str) -> OrderedDict[str, Any]:
        if not isinstance(wire, Mapping):
            raise self._mismatch(path, "an observation object", wire)
        out = self.neutral()
        name = wire.get("tool_name")
        if name is None:  # reset: no tool answered
            return out
        index = self._index.get(name)
        if index is None:
            raise CodecError(
                f"field 'tool_name': the server answered for tool {name!r}, which is not in "
                f"its tool list {list(self._index)} (the list changed? make a new env)",
                field="tool_name",
            )
        error = _error_of(wire)
        if error is not None:
            _raise_if_refused(name, *error)
        else:
            out["result"][name] = self._result(index, wire.get("result"))
        out["tool"] = np.int64(index)
        out["error"] = "" if error is None else _printable(f"{error[0]}: {error[1]}", self._error)
        return out

    def _result(self, index: int, result: Any) -> Any:
        codec = self.results[index]
        path = f"result.{self.tools[index].name}"
        value = _result_value(result, self._wrapped[index])
        if result is None:
            return codec.neutral()
        try:
            return codec.decode(value, path)
        except CodecError:
            if isinstance(value, str) and not isinstance(codec, TextCodec | JsonTextCodec):
                try:  # a typed result sent only as text content: parse it
                    return codec.decode(json.loads(value), path)
                except ValueError:
                    pass
            raise

    def encode(self, value: Any, path: str) -> dict[str, Any]:
        index = int(value["tool"])
        if index == NO_TOOL:
            return {}
        name = self.tools[index].name
        return {
            "tool_name": name,
            "result": self.results[index].encode(value["result"][name], name),
            "error": {"error_type": "execution_error", "message": value["error"]}
            if value["error"]
            else None,
        }

    def neutral(self) -> OrderedDict[str, Any]:
        results = OrderedDict(
            (t.name, c.neutral()) for t, c in zip(self.tools, self.results, strict=True)
        )
        return OrderedDict([("tool", np.int64(NO_TOOL)), ("result", results), ("error", "")])

    def collect_extras(self, wire: Any, path: str, out: dict[str, Any]) -> None:
        """``info`` of a tool reply: ``tool_name`` and ``error_type`` (``""`` without error),
        strings on every reply so vector envs can stack them; ``metadata`` and any field the
        server adds, as sent. (The result and error are in the observation.)"""
        if not isinstance(wire, Mapping):
            return
        out.update((k, v) for k, v in wire.items() if k not in ("tool_name", "result", "error"))
        if "tool_name" in wire:
            out["tool_name"] = str(wire["tool_name"])
            error = _error_of(wire)
            out["error_type"] = "" if error is None else error[0]


def tool_codecs(
    tools: Sequence[ToolSpec],
    *,
    include: Collection[str] = (),
    field_spaces: Mapping[str, spaces.Space[Any]] | None = None,
) -> tuple[ToolActionCodec, ObservationCodec]:
    """The action and observation codecs of an MCP tool env with these tools.

    Args:
        tools: The server's tools (:func:`parse_tool_list`).
        include: Optional arguments to put in the action space, as ``"tool.argument"``.
        field_spaces: Explicit spaces for arguments, as ``{"tool.argument": space}``.

    Raises:
        SpaceMappingError: An option names an unknown tool or argument, or there are no tools.
    """
    if not tools:
        raise SpaceMappingError("the server lists no tools", field="tools")
    included = _by_tool("action_include", include, tools)
    given = _by_tool("action_field_spaces", list(field_spaces or {}), tools)
    arguments = []
    for tool in tools:
        own = {p: (field_spaces or {})[f"{tool.name}.{p}"] for p in given.get(tool.name, ())}
        arguments.append(
            map_tool_arguments(tool, include=included.get(tool.name, ()), field_spaces=own)
        )
    observation = ToolObservationCodec(tools, [map_tool_result(tool) for tool in tools])
    return ToolActionCodec(ToolCallCodec(tools, arguments)), ObservationCodec(
        SchemaMapping(observation, None)
    )


# ---------------------------------------------------------------------- wire helpers


def _result_value(result: Any, wrapped: bool) -> Any:
    """The value of a tool result: a FastMCP ``CallToolResult``'s structured content
    (unwrapped when the output schema or the result's ``meta`` says FastMCP wrapped it),
    else its text content; any other result as it came."""
    if not isinstance(result, Mapping) or "content" not in result:
        return result
    structured = result.get("structured_content", result.get("structuredContent"))
    if structured is not None:
        meta = result.get("meta")
        fastmcp = meta.get("fastmcp") if isinstance(meta, Mapping) else None
        wrapped = wrapped or (isinstance(fastmcp, Mapping) and fastmcp.get("wrap_result") is True)
        if wrapped and isinstance(structured, Mapping) and "result" in structured:
            return structured["result"]
        return structured
    content = result.get("content")
    if isinstance(content, list):
        texts = [c.get("text") for c in content if isinstance(c, Mapping) and "text" in c]
        if texts and len(texts) == len(content):
            return texts[0] if len(texts) == 1 else "".join(str(t) for t in texts)
    return content


def _error_of(wire: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(error_type, message)`` of a reply whose call failed, else ``None``."""
    error = wire.get("error")
    if isinstance(error, Mapping):
        return str(error.get("error_type", "error")), str(error.get("message", ""))
    if isinstance(error, str) and error:
        return "error", error
    result = wire.get("result")
    if isinstance(result, Mapping) and (result.get("is_error") or result.get("isError")):
        return "execution_error", str(_result_value(result, False))
    return None


def _raise_if_refused(tool: str, error_type: str, message: str) -> None:
    """Raise :class:`ToolCallRefusedError` when the server refused the call itself."""
    if error_type not in REFUSAL_ERROR_TYPES and not _VALIDATION_MESSAGE.search(message):
        return
    argument = _refused_argument(message) if error_type != "tool_not_found" else ""
    where = f"argument {argument!r}" if argument else "the call"
    pin = f"{tool}.{argument or '<argument>'}"
    raise ToolCallRefusedError(
        f"the server refused the call of tool {tool!r} ({error_type}): {where} was rejected: "
        f"{message.strip()}. If the call came from env.action_space.sample(), the tool's schema "
        "states less than the server checks: pin a narrower space with "
        f"action_field_spaces={{{pin!r}: ...}}",
        tool=tool,
        argument=argument,
        error_type=error_type,
        server_message=message,
    )


def _refused_argument(message: str) -> str:
    """The argument a pydantic validation message names first (its location line)."""
    lines = message.splitlines()
    for line in lines[1:]:
        if line and not line[0].isspace():
            return line.strip()
    return ""


def _printable(text: str, space: spaces.Text) -> str:
    """``text`` inside ``space``: characters outside the charset escaped, then cut."""
    charset = space.character_set
    if not set(text) <= charset:
        text = "".join(c if c in charset else f"\\u{ord(c):04x}" for c in text)
    return text[: space.max_length]


__all__ = [
    "CALL_TOOL",
    "DEFAULT_TEXT_CHARSET",
    "LIST_TOOLS",
    "NO_TOOL",
    "ToolActionCodec",
    "ToolCallCodec",
    "ToolObservationCodec",
    "ToolSpec",
    "is_bare_action_schema",
    "is_tool_call_schema",
    "map_tool_arguments",
    "map_tool_result",
    "parse_tool_list",
    "tool_codecs",
]
