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
  :data:`~openenv_gym.spaces.charset.DEFAULT_TEXT_CHARSET`, at most
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
    >>> from openenv_gym.spaces.tool_list import parse_tool_list
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
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

import numpy as np
from gymnasium import spaces

from openenv_gym.errors import ActionOutOfSpaceError, CodecError, SpaceMappingError
from openenv_gym.spaces.charset import DefaultCharsetText
from openenv_gym.spaces.codec import ActionCodec, ObservationCodec
from openenv_gym.spaces.describe import describe_space, describe_value
from openenv_gym.spaces.field_rules import DEFAULT_OBSERVATION_TEXT_MAX_LENGTH
from openenv_gym.spaces.fields import (
    DictCodec,
    FieldCodec,
    TextCodec,
)
from openenv_gym.spaces.json_text import JsonTextCodec
from openenv_gym.spaces.membership import coerce
from openenv_gym.spaces.schema import SchemaMapping
from openenv_gym.spaces.tool_list import (
    CALL_TOOL,
    ToolSpec,
)
from openenv_gym.spaces.tool_mapping import arguments_by_tool, map_tool_arguments, map_tool_result
from openenv_gym.spaces.tool_replies import (
    error_of,
    printable_text,
    raise_if_refused,
    result_value,
)

#: The value of the observation's ``tool`` after ``reset`` (no tool answered).
NO_TOOL: Final = -1


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
        error = error_of(wire)
        if error is not None:
            raise_if_refused(name, *error)
        else:
            out["result"][name] = self._result(index, wire.get("result"))
        out["tool"] = np.int64(index)
        out["error"] = (
            "" if error is None else printable_text(f"{error[0]}: {error[1]}", self._error)
        )
        return out

    def _result(self, index: int, result: Any) -> Any:
        codec = self.results[index]
        path = f"result.{self.tools[index].name}"
        value = result_value(result, self._wrapped[index])
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
            error = error_of(wire)
            out["error_type"] = "" if error is None else error[0]


def tool_codecs(
    tools: Sequence[ToolSpec],
    *,
    include: Collection[str] = (),
    field_spaces: Mapping[str, spaces.Space[Any]] | None = None,
) -> tuple[ToolActionCodec, ObservationCodec]:
    """The action and observation codecs of an MCP tool env with these tools.

    Args:
        tools: The server's tools (:func:`~openenv_gym.spaces.tool_list.parse_tool_list`).
        include: Optional arguments to put in the action space, as ``"tool.argument"``.
        field_spaces: Explicit spaces for arguments, as ``{"tool.argument": space}``.

    Raises:
        SpaceMappingError: An option names an unknown tool or argument, or there are no tools.
    """
    if not tools:
        raise SpaceMappingError("the server lists no tools", field="tools")
    included = arguments_by_tool("action_include", include, tools)
    given = arguments_by_tool("action_field_spaces", list(field_spaces or {}), tools)
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


__all__ = [
    "NO_TOOL",
    "ToolActionCodec",
    "ToolCallCodec",
    "ToolObservationCodec",
    "tool_codecs",
]
