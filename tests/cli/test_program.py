"""``openenv-gym`` itself: ``--version``, the whole curated error, exit codes, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import openenv_gym
from openenv_gym.cli.program import build_parser, commands, describe_error, main
from openenv_gym.errors import ServerStartError

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openenv_gym.cli", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
        check=False,
    )


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"openenv-gym {openenv_gym.__version__}\n"


def test_every_option_of_every_command_has_help() -> None:
    parser = build_parser()
    for command in commands().values():
        sub = parser._subparsers._group_actions[0].choices[command.name]  # type: ignore[union-attr]
        parsers = [sub]
        if command.name == "serve":
            parsers = list(sub._subparsers._group_actions[0].choices.values())  # type: ignore[union-attr]
        for each in parsers:
            for action in each._actions:
                assert action.help, (each.prog, action.option_strings or action.dest)


def test_describe_error_keeps_every_line_and_the_cause() -> None:
    try:
        try:
            raise KeyError("NameNotFound: Environment `Nope` doesn't exist.")
        except KeyError as inner:
            raise ServerStartError("the server exited\n--- server output ---\nline 1") from inner
    except ServerStartError as exc:
        text = describe_error(exc)
    assert text.splitlines() == [
        "ServerStartError: the server exited",
        "--- server output ---",
        "line 1",
        'caused by KeyError: "NameNotFound: Environment `Nope` doesn\'t exist."',
    ]


def test_describe_error_shortens_a_very_long_message() -> None:
    lines = [f"line {i}" for i in range(100)]
    text = describe_error(RuntimeError("\n".join(lines)), max_lines=10)
    shown = text.splitlines()
    assert len(shown) == 10
    assert shown[0] == "RuntimeError: line 0"
    assert shown[1] == "... (91 lines omitted; --debug shows all)"
    assert shown[-1] == "line 99"


def test_record_with_a_wrong_env_id_shows_the_servers_error(tmp_path: Path) -> None:
    done = cli(
        "record",
        "--env-id",
        "openenv/Gymnasium-v0",
        "--env-kwargs",
        json.dumps({"env_id": "NoSuchEnv-v9"}),
        "--episodes",
        "1",
        "--out",
        str(tmp_path / "run"),
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("openenv-gym: error: ServerStartError: "), done.stderr
    assert "NameNotFound" in done.stderr
    assert "NoSuchEnv" in done.stderr
    assert "Traceback" not in done.stderr


def test_usage_error_exits_2() -> None:
    done = cli("record", "--episodes", "0", "--out", "x")
    assert done.returncode == 2
    assert "expected a positive integer, got '0'" in done.stderr


def test_ctrl_c_exits_130(tmp_path: Path) -> None:
    out = tmp_path / "run"
    process = subprocess.Popen(
        [sys.executable, "-m", "openenv_gym.cli", "record", "--env-id", "CartPole-v1",
         "--episodes", "1000000", "--out", str(out), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not out.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert process.poll() is None, process.communicate()
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, stderr
    assert stderr.rstrip().endswith("openenv-gym: interrupted"), stderr


def test_ctrl_c_inside_a_string_exec_still_exits_130(tmp_path: Path) -> None:
    # A Ctrl-C that lands in a string exec (a lazily imported @dataclass runs one) made
    # CPython end `python -m openenv_gym.cli` by SIGINT (-2) after our clean exit with 130.
    (tmp_path / "interrupting_policy.py").write_text(
        "def act(observation, action_space):\n    exec('raise KeyboardInterrupt', {})\n"
    )
    process = subprocess.run(
        [sys.executable, "-m", "openenv_gym.cli", "record", "--env-id", "CartPole-v1",
         "--episodes", "1", "--policy", "interrupting_policy:act",
         "--out", str(tmp_path / "run"), "--no-progress"],
        capture_output=True, text=True, cwd=REPO, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])},
    )  # fmt: skip
    assert process.returncode == 130, process.stderr
    assert process.stderr.rstrip().endswith("openenv-gym: interrupted"), process.stderr


def test_describe_error_leaves_out_causes_already_quoted() -> None:
    inner = ConnectionRefusedError("[Errno 111] Connection refused")
    outer = RuntimeError("could not reach the server: [Errno 111] Connection refused")
    outer.__cause__ = inner
    assert describe_error(outer) == (
        "RuntimeError: could not reach the server: [Errno 111] Connection refused"
    )
