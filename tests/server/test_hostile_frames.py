"""Frames built to break the server's replies get an official error code; the session lives on.

Each case once closed its session (1011, no reply) or was answered with the wrong code
(issue 14, cases 1 and 2). Real WebSocket traffic to a probe server on 127.0.0.1.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

DEEP = 5000  # nesting no JSON parser on a default stack takes
DEEP_BUT_PARSEABLE = 900
HUGE_INT = "9" * 5000  # past Python's 4300-digit int conversion limit


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ('{"type":[]}', "UNKNOWN_TYPE"),
        ('{"type":{}}', "UNKNOWN_TYPE"),
        ('{"type":1.5}', "UNKNOWN_TYPE"),
        ('{"type":"\\ud800"}', "UNKNOWN_TYPE"),
        ('{"type":"' + "x" * 100_000 + '"}', "UNKNOWN_TYPE"),
        ("[" * DEEP + "]" * DEEP, "INVALID_JSON"),
        ('{"type":"step","data":{"value":' + "[" * DEEP + "]" * DEEP + "}}", "INVALID_JSON"),
        ('{"type":"reset","data":{"seed":' + HUGE_INT + "}}", "INVALID_JSON"),
        ('{"type":"step","data":{"value":' + HUGE_INT + "}}", "INVALID_JSON"),
        (
            '{"type":"step","data":{"value":'
            + "[" * DEEP_BUT_PARSEABLE
            + "]" * DEEP_BUT_PARSEABLE
            + "}}",
            "VALIDATION_ERROR",
        ),
        ('{"type":"step","data":{"value":"\\ud800"}}', "VALIDATION_ERROR"),
        ('{"type":"step","data":{"\\udfff":1,"value":1}}', "VALIDATION_ERROR"),
        ('{"type":"step","data":{"value":1},"\\ud800":0}', "VALIDATION_ERROR"),
        ('{"type":"reset","data":{"seed":"\\ud800"}}', "VALIDATION_ERROR"),
    ],
    ids=[
        "type-list",
        "type-object",
        "type-float",
        "type-lone-surrogate",
        "type-100k-chars",
        "nested-5000",
        "action-nested-5000",
        "seed-5000-digits",
        "action-5000-digits",
        "action-nested-900",
        "action-lone-surrogate",
        "action-key-lone-surrogate",
        "message-key-lone-surrogate",
        "seed-lone-surrogate",
    ],
)
def test_hostile_frame_gets_its_code_and_the_session_lives_on(
    probe_url: str, wire: Any, frame: str, code: str
) -> None:
    with wire.open(probe_url, max_size=None) as ws:
        reply = wire.ask(ws, frame)
        assert reply["type"] == "error", reply
        assert reply["data"]["code"] == code, reply
        # Echoes of the input are cut short: the reply is never a copy of a huge frame.
        assert len(json.dumps(reply)) < 20_000
        wire.assert_session_works(ws)


def test_validation_error_echoes_stay_json(probe_url: str, wire: Any) -> None:
    with wire.open(probe_url) as ws:
        reply = wire.ask(ws, {"type": "step", "data": {"value": [[[[[[[[[[1]]]]]]]]]]}})
        (error,) = reply["data"]["errors"]
        assert error["loc"] == ["value"]
        assert isinstance(error["input"], str)  # a short repr, not the nested list
        assert "..." in error["input"]


def test_failing_env_logs_are_rate_limited_and_tracebacks_at_debug(
    probe_url: str, wire: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="openenv_gym.server")
    with wire.open(probe_url) as ws:
        for _ in range(200):
            reply = wire.ask(ws, {"type": "step", "data": {"value": 1, "fail": True}})
            assert reply["data"]["code"] == "EXECUTION_ERROR"
        wire.assert_session_works(ws)
    warnings = [r for r in caplog.records if r.name == "openenv_gym.server"]
    assert 1 <= len(warnings) <= 6, [r.getMessage() for r in warnings]
    assert all(r.exc_info is None for r in warnings)  # tracebacks only at DEBUG
    assert "step failed on purpose" in warnings[0].getMessage()


def test_tracebacks_are_logged_at_debug(
    probe_url: str, wire: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="openenv_gym.server")
    with wire.open(probe_url) as ws:
        wire.ask(ws, {"type": "step", "data": {"value": 1, "fail": True}})
        wire.assert_session_works(ws)
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info]
    assert debug, "expected the traceback at DEBUG"
