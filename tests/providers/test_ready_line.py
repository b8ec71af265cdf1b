"""Reading the READY line of ``openenv-gym serve`` from a child's stdout."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from openenv_gym.errors import ServerStartError
from openenv_gym.providers.ready_line import format_ready_line, read_ready_line


def test_lines_before_the_ready_line_are_skipped() -> None:
    ready = format_ready_line({"host": "127.0.0.1", "port": 9, "url": "http://127.0.0.1:9"})
    stream = io.StringIO(f"a warning printed at import\n{ready}\nlater output\n")
    assert read_ready_line(stream)["port"] == 9
    assert stream.readline() == "later output\n"  # nothing read past the READY line


def test_a_child_that_exits_without_a_ready_line_is_a_server_start_error() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", "print('Traceback: no such env')"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    with pytest.raises(ServerStartError, match="got end of output") as error:
        read_ready_line(process.stdout)
    assert "no such env" in error.value.log
    process.wait(timeout=30)


def test_endless_other_output_is_a_server_start_error() -> None:
    with pytest.raises(ServerStartError, match="3 other lines"):
        read_ready_line(io.StringIO("x\n" * 10), max_lines=3)
