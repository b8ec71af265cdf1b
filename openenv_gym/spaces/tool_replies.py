"""Reading an MCP tool env's replies: a call's result value, its error, a refused call.

A reply to ``call_tool`` carries the tool's ``result`` (a FastMCP ``CallToolResult`` or a
plain value) and an ``error``. :func:`result_value` takes the value out of the result,
:func:`error_of` the ``(error_type, message)`` of a failed call, and
:func:`raise_if_refused` raises :class:`~openenv_gym.errors.ToolCallRefusedError` when the
server refused the call itself (unknown tool, arguments its schema rejects).

Example:
    >>> result_value({"content": [{"type": "text", "text": "hi"}]}, wrapped=False)
    'hi'
    >>> error_of({"error": {"error_type": "tool_not_found", "message": "no such tool"}})
    ('tool_not_found', 'no such tool')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from gymnasium import spaces

from openenv_gym.errors import ToolCallRefusedError

#: Error types of a call the server refused (rather than a tool that ran and failed).
REFUSAL_ERROR_TYPES: Final = frozenset({"invalid_args", "tool_not_found"})
#: FastMCP's (pydantic ``validate_call``) message for arguments that fail the input schema.
VALIDATION_MESSAGE: Final = re.compile(r"validation errors? for call\[")


def result_value(result: Any, wrapped: bool) -> Any:
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


def error_of(wire: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(error_type, message)`` of a reply whose call failed, else ``None``."""
    error = wire.get("error")
    if isinstance(error, Mapping):
        return str(error.get("error_type", "error")), str(error.get("message", ""))
    if isinstance(error, str) and error:
        return "error", error
    result = wire.get("result")
    if isinstance(result, Mapping) and (result.get("is_error") or result.get("isError")):
        return "execution_error", str(result_value(result, False))
    return None


def raise_if_refused(tool: str, error_type: str, message: str) -> None:
    """Raise :class:`ToolCallRefusedError` when the server refused the call itself."""
    if error_type not in REFUSAL_ERROR_TYPES and not VALIDATION_MESSAGE.search(message):
        return
    argument = refused_argument(message) if error_type != "tool_not_found" else ""
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


def refused_argument(message: str) -> str:
    """The argument a pydantic validation message names first (its location line)."""
    lines = message.splitlines()
    for line in lines[1:]:
        if line and not line[0].isspace():
            return line.strip()
    return ""


def printable_text(text: str, space: spaces.Text) -> str:
    """``text`` inside ``space``: characters outside the charset escaped, then cut."""
    charset = space.character_set
    if not set(text) <= charset:
        text = "".join(c if c in charset else f"\\u{ord(c):04x}" for c in text)
    return text[: space.max_length]
