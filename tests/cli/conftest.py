"""Fixtures of the command-line tests: a real ``openenv-gym serve`` subprocess."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from openenv_gym.providers.ready_line import READY_PREFIX

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_token_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI reads ``$OPENENV_TOKEN``: a token set where the tests run must not reach
    the servers and checks they start."""
    monkeypatch.delenv("OPENENV_TOKEN", raising=False)


class ServeProcess:
    """``python -m openenv_gym.cli serve ...`` with its stdout lines collected in a queue."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "openenv_gym.cli", "serve", *args],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        assert self.process.stdout is not None
        threading.Thread(target=self._pump, args=(self.process.stdout,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put(line)
        self.lines.put(None)

    def ready(self, timeout: float = 60.0) -> dict[str, Any]:
        line = self.lines.get(timeout=timeout)
        assert line is not None, f"server exited early: {self.stderr_text()}"
        assert line.startswith(READY_PREFIX), line
        assert line.endswith("\n")
        return dict(json.loads(line[len(READY_PREFIX) :]))

    def remaining_stdout(self) -> list[str]:
        lines = []
        while (line := self.lines.get(timeout=30)) is not None:
            lines.append(line)
        return lines

    def stderr_text(self) -> str:
        if self.process.poll() is None:
            return ""
        assert self.process.stderr is not None
        return self.process.stderr.read()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def serve() -> Iterator[Any]:
    started: list[ServeProcess] = []

    def start(*args: str) -> ServeProcess:
        process = ServeProcess(*args)
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()
