"""``openenv-gym check URL`` against real servers: a passing report, and failing ones."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from gymnasium import spaces

from openenv_gym.cli import main
from openenv_gym.cli.checker import space_tree
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.server import ServerThread
from tests.conftest import RawWebSocketServer, free_port

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def token_url() -> Iterator[str]:
    with ServerThread(gymnasium_server("Acrobot-v1", token="tok")) as running:
        yield running.url


def test_a_good_server_passes_every_check(
    cartpole_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", cartpole_url]) == 0
    report = capsys.readouterr().out
    lines = report.splitlines()
    assert lines[0] == f"openenv-gym check {cartpole_url}"
    assert "gymnasium 1." in lines[1]
    assert "Python 3." in lines[1]
    for name in ("health", "schema", "metadata", "spaces", "episode", "check_env"):
        assert any(line.startswith(f"[ok]   {name}") for line in lines), (name, report)
    assert "action_space: Discrete(2)" in report
    assert "observation_space: Box(" in report
    assert "terminated" in report or "truncated" in report
    assert lines[-1] == "result: PASS (6 checks)"


def test_a_dict_observation_is_printed_as_a_tree() -> None:
    space = spaces.Dict(
        [
            ("board", spaces.Box(0, 1, (2, 2))),
            ("meta", spaces.Dict([("turn", spaces.Discrete(2)), ("fen", spaces.Text(5))])),
        ]
    )
    assert space_tree(space, "observation_space") == [
        "observation_space: Dict",
        "├── board: Box(0.0, 1.0, (2, 2), float32)",
        "└── meta: Dict",
        "    ├── turn: Discrete(2)",
        "    └── fen: Text(1..5 chars)",
    ]


def test_token_is_sent_and_a_missing_one_fails_clearly(
    token_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", token_url, "--token", "tok"]) == 0
    assert capsys.readouterr().out.endswith("result: PASS (6 checks)\n")
    assert main(["check", token_url]) == 1
    report = capsys.readouterr().out
    assert "[ok]   health" in report
    assert "[FAIL] schema     AuthenticationError:" in report
    assert report.endswith("result: FAIL (schema) (2 checks)\n")


def test_nothing_listening_fails_with_exit_code_1(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["check", url]) == 1
    report = capsys.readouterr().out
    assert "[FAIL] health     ServerConnectionError: could not reach" in report
    assert "Traceback" not in report
    assert report.endswith("result: FAIL (health) (1 checks)\n")


def test_debug_adds_the_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["check", url, "--debug"]) == 1
    assert "Traceback (most recent call last)" in capsys.readouterr().out


def test_a_websocket_server_that_is_not_openenv_fails(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def echo(connection: object) -> None:
        return None

    with RawWebSocketServer(echo) as server:  # type: ignore[arg-type]
        assert main(["check", server.url]) == 1
    report = capsys.readouterr().out
    assert "[FAIL] health" in report


def test_check_as_a_command_prints_the_report_and_exits_1() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "openenv_gym.cli", "check", f"http://127.0.0.1:{free_port()}"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout.rstrip().endswith("result: FAIL (health) (1 checks)")


@pytest.mark.parametrize("bad", [["--max-steps", "0"], ["--max-steps", "x"], []])
def test_bad_arguments_are_usage_errors(bad: list[str]) -> None:
    args = ["check", *bad] if bad else ["check"]
    if bad:
        args.insert(1, "http://127.0.0.1:1")
    assert main(args) == 2
