"""Tool lists -> spaces and codecs (no server): the mapping rules, JSON text, refusals."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import numpy as np
import pytest
from gymnasium import spaces

from openenv_gym.errors import (
    ActionOutOfSpaceError,
    CodecError,
    ObservationMismatchError,
    SpaceMappingError,
    ToolCallRefusedError,
)
from openenv_gym.spaces.json_text import JsonText, JsonTextCodec
from openenv_gym.spaces.tool_list import (
    is_bare_action_schema,
    is_tool_call_schema,
    parse_tool_list,
)
from openenv_gym.spaces.tools import (
    NO_TOOL,
    tool_codecs,
)

POINT = {
    "type": "object",
    "properties": {
        "x": {"type": "number", "minimum": -1, "maximum": 1},
        "y": {"type": "number", "exclusiveMinimum": 0, "maximum": 5},
    },
    "required": ["x", "y"],
}
TOOLS: list[dict[str, Any]] = [
    {
        "name": "move",
        "inputSchema": {
            "type": "object",
            "properties": {
                "steps": {"type": "integer", "minimum": 0, "maximum": 10},
                "mode": {"enum": ["walk", "run"], "type": "string"},
                "where": {"$ref": "#/$defs/Point"},
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            },
            "required": ["steps", "mode", "where"],
            "$defs": {"Point": POINT},
        },
        "outputSchema": POINT,
    },
    {
        "name": "store",
        "input_schema": {
            "type": "object",
            "properties": {
                "payload": {},
                "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                "count": {"type": "integer"},
                "items": {"type": "array", "items": {"type": "integer", "minimum": 3}},
            },
            "required": ["payload", "tags", "count", "items"],
        },
    },
    {"name": "ping", "inputSchema": {"type": "object", "properties": {}}},
]


def test_parse_tool_list_takes_both_spellings_and_keeps_order() -> None:
    tools = parse_tool_list(TOOLS)
    assert [t.name for t in tools] == ["move", "store", "ping"]
    assert tools[1].input_schema["required"] == ["payload", "tags", "count", "items"]
    assert tools[0].output_schema == POINT
    assert tools[2].output_schema is None


@pytest.mark.parametrize("raw", [[], None, [{"description": "no name"}], ["move"]])
def test_parse_tool_list_refuses_what_is_not_a_tool_list(raw: Any) -> None:
    with pytest.raises(SpaceMappingError, match="tool"):
        parse_tool_list(raw)


def test_schema_detection() -> None:
    call_tool = {"properties": {"type": {}, "tool_name": {}, "arguments": {}, "metadata": {}}}
    assert is_tool_call_schema(call_tool)
    assert not is_tool_call_schema({"properties": {"move": {}}})
    assert is_bare_action_schema({"properties": {"metadata": {}}})
    assert not is_bare_action_schema(call_tool)


def test_spaces_follow_the_schema_rules() -> None:
    act, obs = tool_codecs(parse_tool_list(TOOLS))
    move, store, ping = act.space.spaces
    assert list(move.spaces) == ["steps", "mode", "where"]  # optional 'note' left out
    assert move["steps"] == spaces.Discrete(11)
    assert move["where"]["y"].low > 0  # exclusiveMinimum: strictly above
    assert all(isinstance(store[k], JsonText) for k in ("payload", "tags", "count", "items"))
    assert ping == spaces.Dict()
    assert obs.space["tool"] == spaces.Discrete(4, start=NO_TOOL)
    assert obs.space["result"]["move"]["x"] == spaces.Box(-1.0, 1.0, (), np.float32)
    assert isinstance(obs.space["result"]["store"], JsonText)


def test_sampled_calls_fit_each_tools_input_schema() -> None:
    tools = parse_tool_list(TOOLS)
    act, _ = tool_codecs(tools)
    act.space.seed(1)
    seen = set()
    for _ in range(200):
        wire = act.encode(act.space.sample())
        tool = next(t for t in tools if t.name == wire["tool_name"])
        jsonschema.validate(wire["arguments"], dict(tool.input_schema))
        seen.add(tool.name)
        assert act.decode(wire)[0] == [t.name for t in tools].index(tool.name)
    assert seen == {"move", "store", "ping"}


def test_included_optional_argument_and_explicit_space() -> None:
    act, _ = tool_codecs(
        parse_tool_list(TOOLS),
        include=["move.note"],
        field_spaces={"store.count": spaces.Discrete(5)},
    )
    assert list(act.space.spaces[0].spaces) == ["steps", "mode", "where", "note"]
    assert act.space.spaces[1]["count"] == spaces.Discrete(5)
    call = ("store", {"payload": "[1]", "tags": "{}", "count": 4, "items": "[]"})
    assert act.encode(call)["arguments"] == {"payload": [1], "tags": {}, "count": 4, "items": []}


def test_user_calls_outside_the_space_name_tool_and_argument() -> None:
    act, _ = tool_codecs(parse_tool_list(TOOLS))
    good = {"steps": 1, "mode": 0, "where": {"x": 0.0, "y": 1.0}}
    assert act.encode((0, good)) == act.encode(("move", good))
    with pytest.raises(ActionOutOfSpaceError, match=r"tool 'move', argument 'where\.y'"):
        act.encode(("move", {**good, "where": {"x": 0.0, "y": 0.0}}))
    with pytest.raises(ActionOutOfSpaceError, match=r"tool 'move', its arguments.*missing"):
        act.encode(("move", {"steps": 1}))
    with pytest.raises(ActionOutOfSpaceError, match=r"unknown tool 3: expected a tool index"):
        act.encode((3, {}))
    with pytest.raises(ActionOutOfSpaceError, match="unknown tool True"):
        act.encode((True, {}))


def _reply(tool: str, result: Any = None, error: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {}, "tool_name": tool, "result": result, "error": error}


def test_refusals_raise_naming_the_argument_and_failures_are_observed() -> None:
    _, obs = tool_codecs(parse_tool_list(TOOLS))
    message = (
        "2 validation errors for call[move]\nwhere.x\n  Input should be less than or equal to 1"
    )
    with pytest.raises(ToolCallRefusedError, match=r"argument 'where\.x'") as caught:
        obs.decode(_reply("move", error={"error_type": "execution_error", "message": message}))
    assert (caught.value.tool, caught.value.argument) == ("move", "where.x")
    with pytest.raises(ToolCallRefusedError, match="tool 'ping'") as caught:
        obs.decode(_reply("ping", error={"error_type": "tool_not_found", "message": "gone"}))
    assert caught.value.argument == ""
    failed = obs.decode(_reply("ping", error={"error_type": "timeout", "message": "slow 慢"}))
    assert failed["error"] == "timeout: slow \\u6162"  # outside the charset: escaped
    assert failed in obs.space


def test_results_decode_typed_or_as_json_text() -> None:
    _, obs = tool_codecs(parse_tool_list(TOOLS))
    fastmcp = {"content": [], "structured_content": {"x": 0.5, "y": 2.0}, "is_error": False}
    value = obs.decode(_reply("move", fastmcp))
    assert value["tool"] == 0
    assert float(value["result"]["move"]["y"]) == 2.0
    text = {"content": [{"type": "text", "text": '{"x": 1, "y": 1}'}]}  # typed, as text only
    assert float(obs.decode(_reply("move", text))["result"]["move"]["x"]) == 1.0
    plain = obs.decode(_reply("store", "stored ✓"))
    assert json.loads(plain["result"]["store"]) == "stored ✓"
    reset = obs.decode({"metadata": {"status": "ready"}})
    assert reset["tool"] == NO_TOOL
    assert reset in obs.space
    with pytest.raises(ObservationMismatchError, match=r"'result\.move\.x'"):
        obs.decode(_reply("move", {"content": [], "structured_content": {"x": 7, "y": 1}}))
    with pytest.raises(ObservationMismatchError, match=r"'tool_name'.*'other'"):
        obs.decode(_reply("other", None))


def test_json_text_codec_limits_and_lenient_actions() -> None:
    codec = JsonTextCodec(JsonText(10))
    assert codec.decode([1, 2], "f") == "[1,2]"
    with pytest.raises(CodecError, match="at most 10 characters"):
        codec.decode("x" * 20, "f")
    assert codec.encode("3", "f") == 3
    assert codec.encode("three", "f") == "three"
    assert codec.neutral() == "null"
