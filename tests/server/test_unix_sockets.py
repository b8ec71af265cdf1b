"""The automatic Unix sockets of ``openenv-gym serve``: where they go, and their cleanup."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_gym.server.unix_sockets import choose_unix_socket
from openenv_gym.wire.shared_memory import SERVER_SOCKET, SHM_DIR, remove_stale_files


def test_auto_is_a_fresh_socket_path_named_for_this_process() -> None:
    first, second = choose_unix_socket("auto"), choose_unix_socket("auto")
    assert first is not None
    assert first != second
    name = os.path.basename(first)
    match = SERVER_SOCKET.fullmatch(name)
    assert match is not None
    assert int(match.group(1)) == os.getpid()
    if SHM_DIR is not None:
        assert os.path.dirname(first) == SHM_DIR
    assert SERVER_SOCKET.fullmatch(name + ".3")  # worker 3's


@pytest.mark.parametrize(
    ("value", "path"), [("off", None), (None, None), ("/tmp/x.sock", "/tmp/x.sock")]
)
def test_off_and_explicit_paths(value: str | None, path: str | None) -> None:
    assert choose_unix_socket(value) == path


@pytest.mark.skipif(SHM_DIR is None, reason="no /dev/shm on this system")
def test_the_sockets_of_a_server_that_is_gone_are_removed() -> None:
    assert SHM_DIR is not None
    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = int(finished.stdout)
    gone = Path(SHM_DIR, f"openenv-gym-{dead}-0123abcd.sock.1")
    mine = Path(SHM_DIR, f"openenv-gym-{os.getpid()}-0123abcd.sock")
    other = Path(SHM_DIR, f"openenv-gym-{dead}-0123abcd.socket")  # not a name of ours
    try:
        for path in (gone, mine):
            with socket.socket(socket.AF_UNIX) as sock:
                sock.bind(str(path))
        other.touch()
        remove_stale_files()
        assert not gone.exists()
        assert mine.exists()  # this process runs
        assert other.exists()
    finally:
        for path in (gone, mine, other):
            path.unlink(missing_ok=True)
