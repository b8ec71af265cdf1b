"""Ctrl-C and SIGTERM still stop the host process after an in-process ``serve`` returned.

``openenv-gym serve`` stops on SIGINT/SIGTERM while it serves; run in-process (a test calling
``main(["serve", ...])``, a notebook), it must hand the previous handlers back when it returns,
or a later Ctrl-C only sets a dead server's stop flag and ``pytest`` cannot be interrupted.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv_gym.cli import main

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port something else listens on: ``serve`` fails there after installing handlers."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


def test_serve_gives_the_signal_handlers_back(taken_port: int) -> None:
    before = [signal.getsignal(sig) for sig in STOP_SIGNALS]
    code = main(["serve", "gymnasium", "--env-id", "CartPole-v1", "--port", str(taken_port)])
    assert code == 1
    assert [signal.getsignal(sig) for sig in STOP_SIGNALS] == before


def test_serve_workers_gives_the_signal_handlers_back(taken_port: int) -> None:
    before = [signal.getsignal(sig) for sig in STOP_SIGNALS]
    args = ["serve", "gymnasium", "--env-id", "CartPole-v1", "--port", str(taken_port)]
    main([*args, "--workers", "2"])
    assert [signal.getsignal(sig) for sig in STOP_SIGNALS] == before


INNER_TEST = """
import socket
import time

from openenv_gym.cli import main


def test_serve_then_wait():
    with socket.create_server(("127.0.0.1", 0)) as taken:  # serve fails on a port in use
        args = ["--env-id", "CartPole-v1", "--port", str(taken.getsockname()[1])]
        assert main(["serve", "gymnasium", *args]) == 1
    print("INNER-READY", flush=True)
    time.sleep(300)
"""


@pytest.mark.slow
@pytest.mark.parametrize("sig", STOP_SIGNALS, ids=lambda sig: signal.Signals(sig).name)
def test_pytest_stops_on_a_signal_after_an_in_process_serve(
    sig: signal.Signals, tmp_path: Path
) -> None:
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(INNER_TEST))
    inner = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "test_inner.py"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert inner.stdout is not None
        lines = []
        for line in inner.stdout:
            lines.append(line)
            if "INNER-READY" in line:
                break
        else:
            pytest.fail(f"the inner pytest ended before serving: {''.join(lines)}")
        inner.send_signal(sig)
        try:
            inner.wait(timeout=60)  # a deadline for a hang, not a measured duration
        except subprocess.TimeoutExpired:
            pytest.fail(f"pytest ignored {signal.Signals(sig).name} after an in-process serve")
    finally:
        if inner.poll() is None:
            inner.kill()
            inner.wait()
    assert inner.returncode != 0
