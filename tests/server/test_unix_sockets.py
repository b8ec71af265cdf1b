"""The automatic Unix sockets of ``openenv-gym serve``: where they go (their cleanup after a
killed server: ``tests/wire/test_shared_memory.py``)."""

from __future__ import annotations

import os

import pytest

from openenv_gym.server.unix_sockets import choose_unix_socket
from openenv_gym.wire.shared_memory import SERVER_SOCKET, SHM_DIR


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
