"""Shared-memory arrays: the probe handshake, the writer and reader, and every bad input."""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from openenv_gym.errors import ProtocolError, SharedFileRefusedError
from openenv_gym.wire.batch import parse_batch_result
from openenv_gym.wire.batch_results import encode_batch_result
from openenv_gym.wire.binary import decode_frame
from openenv_gym.wire.messages import observation_message
from openenv_gym.wire.shared_memory import (
    MIN_SHARED_BYTES,
    SHM_DIR,
    ProbeFile,
    SharedArrayReader,
    SharedArrayWriter,
    probe_matches,
    remove_stale_files,
)

pytestmark = pytest.mark.skipif(SHM_DIR is None, reason="this system has no /dev/shm")
#: The uid and gid of ``nobody``, the second local user of these tests.
NOBODY = 65534


def _frames(count: int, shape: tuple[int, ...] = (210, 160, 3)) -> list[dict]:
    return [
        observation_message({"pixels": np.full(shape, k, np.uint8), "lives": 3}, float(k), False)
        for k in range(count)
    ]


def test_probe_matches_only_its_own_token() -> None:
    probe = ProbeFile()
    try:
        assert probe_matches(probe.offer())
        assert not probe_matches({**probe.offer(), "token": "0" * 32})
        assert not probe_matches({**probe.offer(), "token": "not hex"})
    finally:
        probe.close()
    assert not probe_matches(probe.offer())  # removed: the server falls back to frames
    probe.close()  # idempotent


@pytest.mark.parametrize(
    "offer",
    [
        None,
        "probe",
        {},
        {"probe": "../../etc/passwd", "token": "0" * 32},
        {"probe": "/etc/passwd", "token": "0" * 32},
        {"probe": 5, "token": "0" * 32},
    ],
)
def test_a_bad_offer_is_refused_without_reading_anything(offer: object) -> None:
    assert probe_matches(offer) is False


def test_writer_and_reader_round_trip_and_files_are_removed() -> None:
    replies = _frames(4)
    with SharedArrayWriter() as writer, SharedArrayReader() as reader:
        frame = encode_batch_result([0, 1, 2, 3], replies, {}, writer)
        assert len(frame) < MIN_SHARED_BYTES  # the pixels are not in the frame
        result = parse_batch_result(frame, shared=reader)
        assert result.fields["pixels"].shape == (4, 210, 160, 3)
        assert [int(r[0, 0, 0]) for r in result.fields["pixels"]] == [0, 1, 2, 3]
        assert result.fields["lives"] == [3, 3, 3, 3]
        names = [n for n in os.listdir(SHM_DIR) if n.startswith(f"openenv-gym-{os.getpid()}-")]
        assert names
        # The reader's arrays are copies: the next batch does not change them.
        encode_batch_result([0, 1, 2, 3], _frames(4)[::-1], {}, writer)
        assert int(result.fields["pixels"][0, 0, 0, 0]) == 0
        # A bigger batch gets a bigger file, and the reader maps it again.
        bigger = encode_batch_result(list(range(6)), _frames(6), {}, writer)
        assert parse_batch_result(bigger, shared=reader).fields["pixels"].shape[0] == 6
    assert not any(n in os.listdir(SHM_DIR) for n in names)


def test_small_arrays_stay_in_the_frame() -> None:
    replies = [observation_message({"x": np.zeros(4, np.float32)}, 0.0, False)] * 8
    with SharedArrayWriter() as writer:
        result = parse_batch_result(encode_batch_result(list(range(8)), replies, {}, writer))
    assert result.fields["x"].shape == (8, 4)


def test_a_frame_naming_shared_memory_needs_a_reader() -> None:
    with SharedArrayWriter() as writer:
        frame = encode_batch_result([0, 1], _frames(2), {}, writer)
        with pytest.raises(ProtocolError, match="did not agree to it"):
            decode_frame(frame)


@pytest.mark.parametrize(
    ("descriptor", "match"),
    [
        ({"shm": "openenv-gym-1-0123456789abcdef-1"}, "expected a shared-memory array"),
        (
            {"shm": "../passwd", "offset": 0, "dtype": "|u1", "shape": [1]},
            "expected a shared-memory file name",
        ),
        (
            {
                "shm": "openenv-gym-1-0123456789abcdef-999999",
                "offset": 0,
                "dtype": "|u1",
                "shape": [1],
            },
            "cannot open",
        ),
    ],
)
def test_bad_descriptors_are_protocol_errors(descriptor: dict, match: str) -> None:
    with SharedArrayReader() as reader, pytest.raises(ProtocolError, match=match):
        reader.array(descriptor)


def test_an_array_past_the_end_of_its_file_is_a_protocol_error() -> None:
    with SharedArrayWriter() as writer, SharedArrayReader() as reader:
        descriptor = writer.put("x", [np.zeros(16, np.uint8)])
        with pytest.raises(ProtocolError, match="does not fit"):
            reader.array({**descriptor, "shape": [1, 1 << 20]})


def dead_pid() -> int:
    """The pid of a process that has ended."""
    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(finished.stdout)


def test_stale_files_of_dead_processes_are_removed() -> None:
    pid = dead_pid()
    stale = os.path.join(SHM_DIR, f"openenv-gym-{pid}-0123456789abcdef-1")
    mine = os.path.join(SHM_DIR, f"openenv-gym-{os.getpid()}-0123456789abcdef-1")
    for path in (stale, mine):
        with open(path, "wb") as file:
            file.write(b"x")
    try:
        assert remove_stale_files() >= 1
        assert not os.path.exists(stale)
        assert os.path.exists(mine)
    finally:
        for path in (stale, mine):
            if os.path.exists(path):
                os.unlink(path)


def test_a_borrowing_reader_gives_read_only_views_a_plain_one_copies() -> None:
    """A vector env borrows (it copies the rows into its buffer before the next request);
    anything else gets a copy the server's next write cannot change."""
    with SharedArrayWriter() as writer:
        descriptor = writer.put("pixels", [np.full((4, 4), 1, np.uint8)] * 2)
        with SharedArrayReader(borrow=True) as borrowing, SharedArrayReader() as copying:
            view = borrowing.array(descriptor)
            copy = copying.array(descriptor)
            assert not view.flags.writeable
            assert copy.flags.writeable
            with pytest.raises(ValueError, match="read-only"):
                view[0, 0, 0] = 9
            again = writer.put("pixels", [np.full((4, 4), 7, np.uint8)] * 2)  # the next step
            assert again["shm"] == descriptor["shm"]
            assert view.max() == 7  # a view follows the file
            assert copy.max() == 1  # a copy does not
        # closing while a view is alive does not raise (the mapping goes with the view)
        assert view.max() == 7


def test_a_descriptor_read_again_gives_the_files_new_rows_and_another_one_its_own() -> None:
    """The reader keeps the view of the last descriptor of each file: the same descriptor
    next step reads what the server wrote since (a copy, or the borrowed view); one that
    differs (fewer rows, another dtype) is checked and read as it says."""
    with (
        SharedArrayWriter() as writer,
        SharedArrayReader(borrow=True) as borrowing,
        SharedArrayReader() as copying,
    ):
        for step in range(3):
            descriptor = writer.put("pixels", [np.full((4, 4), step, np.uint8)] * 2)
            view, copy = borrowing.array(descriptor), copying.array(descriptor)
            assert view.shape == copy.shape == (2, 4, 4)
            assert int(view.max()) == int(copy.min()) == step
        copy[0, 0, 0] = 99  # a copy is the caller's own
        assert int(copying.array(descriptor)[0, 0, 0]) == 2
        fewer = writer.put("pixels", [np.full((4, 4), 5, np.uint8)])
        assert fewer["shm"] == descriptor["shm"]
        assert borrowing.array(fewer).shape == copying.array(fewer).shape == (1, 4, 4)
        wider = {**fewer, "dtype": "<u2", "shape": [1, 8]}
        assert borrowing.array(wider).dtype == np.dtype("<u2")
        with pytest.raises(ProtocolError, match="does not fit"):
            borrowing.array({**fewer, "shape": [1, 1 << 20]})
        with pytest.raises(ProtocolError, match="expected a shared-memory array"):
            borrowing.array({**fewer, "shape": ["x"]})


# ----------------------------------------------------------------- hostile files (issue 27, 2)


def _probe_name() -> str:
    return f"openenv-gym-probe-{secrets.token_hex(16)}"


def _server_name() -> str:
    return f"openenv-gym-{os.getpid()}-{secrets.token_hex(8)}-1"


def _finishes(call: Callable[[], object], timeout: float = 5.0) -> list[object]:
    """Run ``call`` in a thread; what it returned or raised (empty: it still blocks)."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    return outcome


def _release_fifo(path: str) -> None:
    """Unblock a reader stuck opening the FIFO at ``path`` (the code before the fix)."""
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


@pytest.fixture
def shm_paths() -> Iterator[list[str]]:
    """Paths the test creates under /dev/shm, removed after it."""
    paths: list[str] = []
    yield paths
    for path in paths:
        if os.path.lexists(path):
            _release_fifo(path)
            os.unlink(path)


def _token_file(path: str, token: str, mode: int = 0o600) -> None:
    with open(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode), "w") as file:
        file.write(token)
    os.chmod(path, mode)


def test_a_fifo_named_as_the_probe_is_refused_without_blocking(shm_paths: list[str]) -> None:
    name = _probe_name()
    path = os.path.join(SHM_DIR, name)
    shm_paths.append(path)
    os.mkfifo(path, 0o600)
    outcome = _finishes(lambda: probe_matches({"probe": name, "token": "0" * 32}))
    assert outcome == [False], "probe_matches blocked on a FIFO"


def test_a_symlinked_probe_is_refused(shm_paths: list[str]) -> None:
    probe = ProbeFile()
    try:
        link = _probe_name()
        shm_paths.append(os.path.join(SHM_DIR, link))
        os.symlink(os.path.join(SHM_DIR, probe.name), os.path.join(SHM_DIR, link))
        assert probe_matches(probe.offer())
        assert not probe_matches({"probe": link, "token": probe.token})
    finally:
        probe.close()


def test_a_probe_readable_by_others_is_refused(shm_paths: list[str]) -> None:
    token = secrets.token_hex(16)
    name = _probe_name()
    path = os.path.join(SHM_DIR, name)
    shm_paths.append(path)
    _token_file(path, token, 0o644)
    assert not probe_matches({"probe": name, "token": token})
    os.chmod(path, 0o600)
    assert probe_matches({"probe": name, "token": token})


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_another_users_probe_is_refused(shm_paths: list[str]) -> None:
    token = secrets.token_hex(16)
    name = _probe_name()
    path = os.path.join(SHM_DIR, name)
    shm_paths.append(path)
    _token_file(path, token)
    assert probe_matches({"probe": name, "token": token})
    os.chown(path, NOBODY, NOBODY)
    assert not probe_matches({"probe": name, "token": token})


def test_a_descriptor_naming_a_fifo_is_refused_without_blocking(shm_paths: list[str]) -> None:
    name = _server_name()
    path = os.path.join(SHM_DIR, name)
    shm_paths.append(path)
    os.mkfifo(path, 0o600)
    descriptor = {"shm": name, "offset": 0, "dtype": "|u1", "shape": [4]}
    with SharedArrayReader() as reader:
        outcome = _finishes(lambda: reader.array(descriptor))
    assert len(outcome) == 1, "the reader blocked on a FIFO"
    assert isinstance(outcome[0], SharedFileRefusedError)
    assert "not a regular file" in str(outcome[0])


def test_a_descriptor_naming_a_link_or_a_shared_mode_file_is_refused(
    shm_paths: list[str],
) -> None:
    with SharedArrayWriter() as writer, SharedArrayReader() as reader:
        descriptor = writer.put("x", [np.arange(8, dtype=np.uint8)])
        link = _server_name()
        shm_paths.append(os.path.join(SHM_DIR, link))
        os.symlink(os.path.join(SHM_DIR, descriptor["shm"]), os.path.join(SHM_DIR, link))
        with pytest.raises(SharedFileRefusedError, match="symbolic link"):
            reader.array({**descriptor, "shm": link})
        loose = _server_name()
        shm_paths.append(os.path.join(SHM_DIR, loose))
        _token_file(os.path.join(SHM_DIR, loose), "x" * 8, 0o644)
        with pytest.raises(SharedFileRefusedError, match="mode 0644, not 0600"):
            reader.array({**descriptor, "shm": loose})
        assert reader.array(descriptor).ravel().tolist() == list(range(8))


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_a_descriptor_naming_another_users_file_is_refused(shm_paths: list[str]) -> None:
    name = _server_name()
    path = os.path.join(SHM_DIR, name)
    shm_paths.append(path)
    _token_file(path, "x" * 8)
    os.chown(path, NOBODY, NOBODY)
    with SharedArrayReader() as reader, pytest.raises(SharedFileRefusedError, match="owned by"):
        reader.array({"shm": name, "offset": 0, "dtype": "|u1", "shape": [8]})


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"shape": [-1]}, "non-negative shape"),
        ({"shape": [2, -4]}, "non-negative shape"),
        ({"shape": [1 << 62, 1 << 62]}, "does not fit"),
        ({"shape": [10**30]}, "does not fit"),
        ({"dtype": "<U4", "shape": [2]}, "numeric dtype"),
        ({"dtype": "V8", "shape": [1]}, "numeric dtype"),
        ({"dtype": "|O", "shape": [1]}, "numeric dtype"),
        ({"dtype": [("a", "<i4")], "shape": [1]}, "numeric dtype"),
    ],
)
def test_a_hostile_shape_or_dtype_is_a_protocol_error(change: dict, match: str) -> None:
    with SharedArrayWriter() as writer, SharedArrayReader() as reader:
        descriptor = writer.put("x", [np.arange(16, dtype=np.uint8)])
        with pytest.raises(ProtocolError, match=match):
            reader.array({**descriptor, **change})
        assert reader.array(descriptor).ravel().tolist() == list(range(16))  # nothing lost


def test_probes_of_killed_clients_are_swept_when_a_server_starts(shm_paths: list[str]) -> None:
    old, fresh = _probe_name(), _probe_name()
    for name in (old, fresh):
        path = os.path.join(SHM_DIR, name)
        shm_paths.append(path)
        _token_file(path, secrets.token_hex(16))
    hour_ago = time.time() - 3600
    os.utime(os.path.join(SHM_DIR, old), (hour_ago, hour_ago))
    remove_stale_files()
    assert not os.path.exists(os.path.join(SHM_DIR, old))
    assert os.path.exists(os.path.join(SHM_DIR, fresh))  # a client may be opening right now


def test_the_unix_sockets_of_a_server_that_is_gone_are_removed() -> None:
    dead = dead_pid()
    gone = Path(SHM_DIR, f"openenv-gym-{dead}-0123abcd.sock.1")  # worker 1's
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
