"""The server's connection layer: fragments, pipelining, busy-polling, the event loop."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from websockets.sync.client import connect

from openenv_gym.server.event_loop import LOOP_VARIABLE, new_server_loop
from openenv_gym.wire.messages import http_to_ws_url


def _ws(url: str) -> str:
    return http_to_ws_url(url)


def test_a_fragmented_message_is_joined_and_answered(probe_url: str) -> None:
    with connect(_ws(probe_url)) as ws:
        ws.send(['{"type":"step",', '"data":{"value":', "7}}"])
        reply = json.loads(ws.recv(timeout=10))
    assert reply["type"] == "observation"
    assert reply["data"]["observation"]["value"] == 7


def test_pipelined_frames_get_their_replies_in_order(probe_url: str) -> None:
    with connect(_ws(probe_url)) as ws:
        for value in range(20):
            ws.send(json.dumps({"type": "step", "data": {"value": value}}))
        values = [
            json.loads(ws.recv(timeout=10))["data"]["observation"]["value"] for _ in range(20)
        ]
    assert values == list(range(20))


def test_a_ping_is_answered_between_steps(probe_url: str) -> None:
    with connect(_ws(probe_url)) as ws:
        ws.send('{"type":"step","data":{"value":1}}')
        assert ws.ping().wait(10)
        assert json.loads(ws.recv(timeout=10))["type"] == "observation"


def test_a_busy_polling_server_serves_like_any_other(
    start_probe: Callable[..., tuple[str, Any, Any]],
) -> None:
    url, _registry, _thread = start_probe(busy_poll=200e-6)
    with connect(_ws(url)) as ws:
        for value in range(50):
            ws.send(json.dumps({"type": "step", "data": {"value": value}}))
            assert json.loads(ws.recv(timeout=10))["data"]["observation"]["value"] == value


def test_a_negative_busy_poll_is_refused(start_probe: Callable[..., Any]) -> None:
    with pytest.raises(ValueError, match=r"expected busy_poll >= 0 seconds, got -1"):
        start_probe(busy_poll=-1)


def test_the_server_loop_is_uvloop_unless_asked_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    uvloop = pytest.importorskip("uvloop")
    loop = new_server_loop()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()
    monkeypatch.setenv(LOOP_VARIABLE, "asyncio")
    loop = new_server_loop()
    try:
        assert not isinstance(loop, uvloop.Loop)
        assert isinstance(loop, asyncio.AbstractEventLoop)
    finally:
        loop.close()
    monkeypatch.setenv(LOOP_VARIABLE, "trio")
    with pytest.raises(ValueError, match="OPENENV_GYM_LOOP='trio': expected 'uvloop' or 'asyncio'"):
        new_server_loop()


def test_a_bad_busy_poll_flag_is_a_usage_error() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "openenv_gym.cli",
            "serve",
            "gymnasium",
            "--env-id",
            "CartPole-v1",
            "--busy-poll-us",
            "-5",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "expected microseconds in 0..100000, got '-5'" in done.stderr
