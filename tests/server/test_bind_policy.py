"""Listening beyond loopback needs a token or ``--insecure``; an empty token is an error.

Once, ``serve --host 0.0.0.0`` without a token bound silently and ``--token ""`` /
``OPENENV_TOKEN=""`` silently disabled authentication (issue 14, case 11). The refusals are
checked before anything binds; the one wider bind runs in a private network namespace.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys

import pytest

from openenv_gym.cli import main
from openenv_gym.errors import InsecureBindError
from openenv_gym.server import OpenEnvServer
from openenv_gym.server.bind_policy import check_bind, is_loopback_host

from .conftest import ProbeAction, ProbeObservation

SERVE = ["serve", "gymnasium", "--env-id", "CartPole-v1", "--port", "0"]


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "192.168.0.7"])
def test_wide_bind_without_token_is_refused(
    host: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENENV_TOKEN", raising=False)
    assert main([*SERVE, "--host", host]) == 2
    err = capsys.readouterr().err
    assert f"refusing to listen on {host} without a token" in err
    assert "--insecure" in err


@pytest.mark.parametrize(
    ("args", "env"),
    [(["--token", ""], None), (["--token", "   "], None), ([], ""), (["--host", "0.0.0.0"], "")],
    ids=["flag-empty", "flag-blank", "env-empty", "env-empty-wide"],
)
def test_empty_token_is_an_error(
    args: list[str],
    env: str | None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if env is None:
        monkeypatch.delenv("OPENENV_TOKEN", raising=False)
    else:
        monkeypatch.setenv("OPENENV_TOKEN", env)
    assert main([*SERVE, *args]) == 2
    assert "the token is empty" in capsys.readouterr().err


def test_empty_token_in_the_library_is_an_error() -> None:
    with pytest.raises(InsecureBindError, match="empty"):
        OpenEnvServer(
            lambda: None,  # type: ignore[arg-type,return-value]
            action_type=ProbeAction,
            observation_type=ProbeObservation,
            token="",
        )


def test_policy(caplog: pytest.LogCaptureFixture) -> None:
    check_bind("127.0.0.1", None, insecure=False)
    check_bind("::1", None, insecure=False)
    check_bind("localhost", None, insecure=False)
    check_bind("0.0.0.0", "a-token", insecure=False)
    with caplog.at_level(logging.WARNING, logger="openenv_gym.server"):
        check_bind("0.0.0.0", None, insecure=True)
    assert "without a token (--insecure)" in caplog.text
    with pytest.raises(InsecureBindError):
        check_bind("0.0.0.0", "", insecure=True)
    assert is_loopback_host("127.0.0.2")
    assert not is_loopback_host("0.0.0.0")
    assert not is_loopback_host("no-such-host.invalid")


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("unshare") is None,
    reason="needs Linux network namespaces (unshare)",
)
def test_insecure_wide_bind_serves_with_a_warning_in_a_private_network() -> None:
    """``--host 0.0.0.0 --insecure`` binds (warning logged) inside ``unshare -n``: only a
    private loopback exists there, so no traffic leaves the namespace."""
    if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -n is not permitted here")
    script = (
        "import subprocess, sys, json, httpx\n"
        "subprocess.run(['ip', 'link', 'set', 'lo', 'up'], check=False)\n"
        "cmd = [sys.executable, '-m', 'openenv_gym.cli', *sys.argv[1:]]\n"
        "p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)\n"
        "line = p.stdout.readline()\n"
        "port = json.loads(line.split(' ', 1)[1])['port']\n"
        "print(httpx.get(f'http://127.0.0.1:{port}/health', timeout=10).json()['status'])\n"
        "p.terminate(); print(p.communicate(timeout=30)[1])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENENV_TOKEN"}
    done = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", script, *SERVE, "--host", "0.0.0.0", "--insecure"],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("healthy"), done.stdout
    assert "listening on 0.0.0.0 without a token (--insecure)" in done.stdout
