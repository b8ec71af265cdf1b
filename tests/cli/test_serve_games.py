"""``openenv-gym serve atari`` and ``serve chess``: real child processes on 127.0.0.1."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from openenv_gym.cli import main
from openenv_gym.wire.messages import http_to_ws_url


def ask(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps(message))
    reply: dict[str, Any] = json.loads(ws.recv(timeout=30))
    return reply


def test_serve_atari_options_reach_the_server(serve: Any) -> None:
    pytest.importorskip("ale_py")
    server = serve(
        "atari",
        "--game",
        "pong",
        "--obs-type",
        "grayscale",
        "--frameskip",
        "2",
        "--repeat-action-probability",
        "0",
        "--max-sessions",
        "1",
        "--port",
        "0",
    )
    url = server.ready()["url"]
    schema = httpx.get(url + "/schema", timeout=10).json()
    assert schema["observation"]["properties"]["screen"]["x-space"]["shape"] == [210, 160]
    with connect(http_to_ws_url(url), open_timeout=10) as ws:
        first = ask(ws, {"type": "reset", "data": {"seed": 0}})["data"]["observation"]
        assert first["screen_shape"] == [210, 160]
        assert len(first["screen"]) == 210 * 160
        after = ask(ws, {"type": "step", "data": {"action_id": 1}})["data"]["observation"]
        assert after["episode_frame_number"] == 2
        state = ask(ws, {"type": "state"})["data"]
        assert state["repeat_action_probability"] == 0.0
        with connect(http_to_ws_url(url), open_timeout=10) as second:
            reply = json.loads(second.recv(timeout=10))
            assert reply["data"]["code"] == "CAPACITY_REACHED"  # --max-sessions flowed through


def test_serve_chess_options_reach_the_server(serve: Any) -> None:
    pytest.importorskip("chess")
    server = serve("chess", "--opponent", "material", "--illegal-move", "error", "--port", "0")
    url = server.ready()["url"]
    with connect(http_to_ws_url(url), open_timeout=10) as ws:
        ask(ws, {"type": "reset", "data": {"seed": 0}})
        error = ask(ws, {"type": "step", "data": {"move": "e2e5"}})["data"]
        assert error["code"] == "VALIDATION_ERROR"
        reply = ask(ws, {"type": "step", "data": {"move": "e2e4"}})["data"]
        assert reply["observation"]["fen"].split()[1] == "w"
    assert "material" in httpx.get(url + "/metadata", timeout=10).json()["description"]


def test_unknown_game_exits_1_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("ale_py")
    assert main(["serve", "atari", "--game", "pongg", "--port", "0"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "EnvConfigError: unknown Atari game 'pongg'" in err[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "atari", "--obs-type", "hsv"],
        ["serve", "atari", "--frameskip", "0"],
        ["serve", "atari", "--repeat-action-probability", "2"],
        ["serve", "atari", "--max-frames", "x"],
        ["serve", "chess", "--opponent", "stockfish9"],
        ["serve", "chess", "--illegal-move", "ignore"],
        ["serve", "chess", "--max-moves", "0"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "error:" in capsys.readouterr().err
