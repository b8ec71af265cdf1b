"""The ``openenv-gym`` command: a real ``serve`` subprocess, its READY line, its exit paths."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from openenv_gym.cli.program import build_parser, main
from openenv_gym.wire.messages import http_to_ws_url

REPO = Path(__file__).resolve().parents[2]


CARTPOLE = ("gymnasium", "--env-id", "CartPole-v1", "--host", "127.0.0.1", "--port", "0")


def play(url: str, steps: int = 5) -> list[dict[str, Any]]:
    replies = []
    with connect(http_to_ws_url(url), open_timeout=10) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        replies.append(json.loads(ws.recv(timeout=10)))
        for i in range(steps):
            ws.send(json.dumps({"type": "step", "data": {"action": i % 2}}))
            replies.append(json.loads(ws.recv(timeout=10)))
    return replies


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_prints_ready_serves_and_stops_on_signal(serve: Any, sig: signal.Signals) -> None:
    server = serve(*CARTPOLE)
    info = server.ready()
    assert info["host"] == "127.0.0.1"
    assert info["port"] > 0
    assert info["url"] == f"http://127.0.0.1:{info['port']}"
    (socket_path,) = info["unix_sockets"]  # --unix-socket auto, the default
    assert Path(socket_path).is_socket()
    health = httpx.get(info["url"] + "/health", timeout=10).json()
    assert health == {"status": "healthy", "unix_sockets": [socket_path]}
    replies = play(info["url"])
    assert [r["type"] for r in replies] == ["observation"] * 6
    assert all(r["data"]["reward"] == 1.0 for r in replies[1:])
    server.process.send_signal(sig)
    assert server.process.wait(30) == 0
    assert server.remaining_stdout() == []  # exactly one line on stdout
    assert not Path(socket_path).exists()  # removed at the stop


def test_serve_unix_socket_off_lists_none(serve: Any) -> None:
    info = serve(*CARTPOLE, "--unix-socket", "off").ready()
    assert "unix_sockets" not in info
    assert httpx.get(info["url"] + "/health", timeout=10).json() == {"status": "healthy"}


def test_serve_options_reach_the_server(serve: Any) -> None:
    server = serve(
        *CARTPOLE,
        "--env-kwargs",
        '{"max_episode_steps": 2}',
        "--max-sessions",
        "1",
        "--idle-timeout",
        "60",
        "--max-message-size",
        "4096",
    )
    url = server.ready()["url"]
    replies = play(url, steps=2)
    assert replies[-1]["data"]["observation"]["truncated"] is True
    with connect(http_to_ws_url(url), open_timeout=10) as first:
        first.send(json.dumps({"type": "step", "data": {"action": 0, "pad": "x" * 5000}}))
        error = json.loads(first.recv(timeout=10))["data"]
        assert error["code"] == "VALIDATION_ERROR"
        assert "4096" in error["message"]
        with connect(http_to_ws_url(url), open_timeout=10) as second:
            reply = json.loads(second.recv(timeout=10))
            assert reply["data"]["code"] == "CAPACITY_REACHED"
            assert reply["data"]["max_sessions"] == 1


def test_exit_with_parent_stops_at_stdin_eof(serve: Any) -> None:
    server = serve(*CARTPOLE, "--exit-with-parent")
    url = server.ready()["url"]
    assert play(url, steps=1)[-1]["type"] == "observation"
    assert server.process.stdin is not None
    server.process.stdin.close()
    assert server.process.wait(30) == 0


def test_without_exit_with_parent_stdin_eof_does_not_stop(serve: Any) -> None:
    server = serve(*CARTPOLE)
    url = server.ready()["url"]
    assert server.process.stdin is not None
    server.process.stdin.close()
    assert play(url, steps=1)[-1]["type"] == "observation"  # still serving
    assert server.process.poll() is None


def test_unknown_env_id_exits_1_with_one_line(serve: Any) -> None:
    server = serve("gymnasium", "--env-id", "NoSuchEnv-v0", "--port", "0")
    assert server.process.wait(60) == 1
    stderr = server.stderr_text().strip().splitlines()
    assert len(stderr) == 1
    assert stderr[0].startswith("openenv-gym: error: ")
    assert "NoSuchEnv" in stderr[0]
    assert server.remaining_stdout() == []


def test_port_in_use_exits_1(serve: Any) -> None:
    first = serve(*CARTPOLE)
    port = first.ready()["port"]
    second = serve("gymnasium", "--env-id", "CartPole-v1", "--port", str(port))
    assert second.process.wait(60) == 1
    assert "openenv-gym: error:" in second.stderr_text()


# --------------------------------------------------------------------------- in-process


def test_debug_shows_the_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["serve", "gymnasium", "--env-id", "NoSuchEnv-v0", "--port", "0", "--debug"])
    assert code == 1
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert err.strip().splitlines()[-1].startswith("openenv-gym: error:")


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["serve"],
        ["serve", "gymnasium"],
        ["serve", "atari-does-not-exist", "--env-id", "x"],
        ["bogus"],
        ["serve", "gymnasium", "--env-id", "CartPole-v1", "--env-kwargs", "{bad"],
        ["serve", "gymnasium", "--env-id", "CartPole-v1", "--env-kwargs", "[1]"],
        ["serve", "gymnasium", "--env-id", "CartPole-v1", "--port", "70000"],
        ["serve", "gymnasium", "--env-id", "CartPole-v1", "--port", "x"],
        ["serve", "gymnasium", "--env-id", "CartPole-v1", "--max-sessions", "0"],
        ["serve", "gymnasium", "--env-id", "CartPole-v1", "--idle-timeout", "-1"],
        ["serve", "gymnasium", "--env-id", "CartPole-v1", "--max-message-size", "big"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "error:" in captured.err
    assert captured.out == ""


def test_help_is_complete(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "serve" in capsys.readouterr().out
    assert main(["serve", "gymnasium", "--help"]) == 0
    out = capsys.readouterr().out
    for flag in (
        "--env-id",
        "--env-kwargs",
        "--host",
        "--port",
        "--max-sessions",
        "--idle-timeout",
        "--max-message-size",
        "--exit-with-parent",
        "--debug",
    ):
        assert flag in out, flag


def test_parser_defaults() -> None:
    args = build_parser().parse_args(["serve", "gymnasium", "--env-id", "Acrobot-v1"])
    assert (args.host, args.port, args.max_sessions, args.idle_timeout) == (
        "127.0.0.1",
        8000,
        64,
        None,
    )
    assert args.max_message_size == 1024 * 1024  # a bound on per-connection memory
    assert args.exit_with_parent is False
    assert args.make_kwargs is None
