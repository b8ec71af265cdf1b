"""Compressed frames (``OGZ1``): packing while it pays, the agreement rule, and the bound.

Every hostile frame (a zip bomb, a frame without a declared size, a lying size, a corrupt or
truncated payload) raises :class:`CompressedFrameError` naming what was wrong, before more
than the message limit is ever allocated.
"""

from __future__ import annotations

import numpy as np
import pytest
import zstandard

from openenv_gym.client.options import ConnectOptions
from openenv_gym.errors import (
    CompressedFrameError,
    ProtocolError,
    UnknownCompressionError,
)
from openenv_gym.wire.batch import BATCH_SUBPROTOCOL, parse_batch_result
from openenv_gym.wire.batch_results import encode_batch_result
from openenv_gym.wire.binary import BINARY_SUBPROTOCOL, encode_frame, load_frame
from openenv_gym.wire.client_frames import ClientMessageError, parse_client_message
from openenv_gym.wire.compressed import (
    BINARY_ZSTD_SUBPROTOCOL,
    COMPRESS_KEY,
    COMPRESSED_MAGIC,
    MEASURED_SUBPROTOCOL,
    MIN_COMPRESSED_BYTES,
    RECHECK_FRAMES,
    ZSTD,
    FrameCompressor,
    batch_compression_offer,
    check_compress_flag,
    check_compression,
    compression_accepted,
    compression_offer,
    is_compressed_frame,
    measured_offer,
    pack_frame,
    unpack_frame,
)
from openenv_gym.wire.encoding import (
    BINARY,
    BINARY_ZSTD,
    BINARY_ZSTD_MEASURED,
    JSON,
    accept_subprotocol,
    encoding_of,
    resolve_encoding,
)
from openenv_gym.wire.messages import ErrorCode, ObservationReply, observation_message

LIMIT = 1024 * 1024


def screen_frame(seed: int = 0) -> bytes:
    """A binary frame holding a Pong-like screen: mostly one colour, a few objects."""
    screen = np.full((210, 160, 3), 144, np.uint8)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        row, col = rng.integers(0, 200), rng.integers(0, 150)
        screen[row : row + 8, col : col + 4] = 236
    return encode_frame({"type": "observation", "data": {}}, [(["data", "screen"], screen)])


def noise_frame(size: int = 64 * 1024) -> bytes:
    noise = np.random.default_rng(1).random(size // 8)
    return encode_frame({"type": "observation", "data": {}}, [(["data", "x"], noise)])


def packed(content: bytes, *, write_content_size: bool = True) -> bytes:
    compressor = zstandard.ZstdCompressor(level=1, write_content_size=write_content_size)
    return COMPRESSED_MAGIC + compressor.compress(content)


# --------------------------------------------------------------------------- packing


def test_a_screen_frame_is_packed_and_unpacks_to_the_same_bytes() -> None:
    frame = screen_frame()
    compressor = FrameCompressor()
    out = compressor.pack(frame)
    assert is_compressed_frame(out)
    assert len(out) * 50 < len(frame)
    assert unpack_frame(out, limit=len(frame)) == frame
    assert compressor.packed == 1
    np.testing.assert_array_equal(
        load_frame(out, compressed=True)["data"]["screen"], load_frame(frame)["data"]["screen"]
    )


def test_small_frames_go_out_as_they_are() -> None:
    frame = encode_frame({"type": "observation"}, [(["x"], np.zeros(4, np.float32))])
    assert len(frame) < MIN_COMPRESSED_BYTES
    compressor = FrameCompressor()
    assert compressor.pack(frame) is frame
    assert (compressor.packed, compressor.skipped) == (0, 0)


def test_a_frame_that_does_not_shrink_twice_pauses_packing_then_it_is_tried_again() -> None:
    compressor = FrameCompressor()
    noise = noise_frame()
    assert compressor.pack(noise) is noise
    # While paused, even a frame that would pay goes out raw (no CPU spent trying).
    screen = screen_frame()
    for _ in range(RECHECK_FRAMES):
        assert compressor.pack(screen) is screen
    assert compressor.skipped == RECHECK_FRAMES + 1
    assert is_compressed_frame(compressor.pack(screen))  # tried again, and it pays


def test_a_batch_result_of_screens_round_trips_packed() -> None:
    screens = [load_frame(screen_frame(seed))["data"]["screen"] for seed in range(4)]
    replies = [observation_message({"screen": s, "lives": 3}, 1.0, False) for s in screens]
    frame = encode_batch_result([0, 1, 2, 3], replies, {})
    out = FrameCompressor().pack(frame)
    assert is_compressed_frame(out)
    result = parse_batch_result(out, limit=len(frame), compressed=True)
    np.testing.assert_array_equal(result.fields["screen"], np.stack(screens))
    assert result.fields["lives"] == [3, 3, 3, 3]


# --------------------------------------------------------------------------- hostile frames


def test_a_zip_bomb_is_refused_before_it_is_decompressed() -> None:
    bomb = packed(b"\0" * 100_000_000)
    assert len(bomb) < 4000  # 3 KB on the wire
    with pytest.raises(CompressedFrameError, match=r"declares 100000000 bytes.*limit of 1048576"):
        unpack_frame(bomb, limit=LIMIT)
    # The same through the parsers a client uses, with the connection's limit.
    with pytest.raises(CompressedFrameError, match="over the message limit"):
        load_frame(bomb, limit=LIMIT, compressed=True)
    with pytest.raises(CompressedFrameError, match="over the message limit"):
        parse_batch_result(bomb, limit=LIMIT, compressed=True)


def test_a_frame_without_a_declared_size_is_refused() -> None:
    frame = packed(screen_frame(), write_content_size=False)
    with pytest.raises(CompressedFrameError, match="does not declare its content size"):
        unpack_frame(frame, limit=LIMIT)


@pytest.mark.parametrize("declared", [10, 200])
def test_a_frame_whose_declared_size_lies_is_refused(declared: int) -> None:
    frame = bytearray(packed(b"abc" * 50))  # one-byte size field, 150
    size_at = len(COMPRESSED_MAGIC) + 5
    assert frame[size_at] == 150
    frame[size_at] = declared
    with pytest.raises(CompressedFrameError, match="payload is corrupt"):
        unpack_frame(bytes(frame), limit=LIMIT)


@pytest.mark.parametrize(
    ("mangle", "expected"),
    [
        (lambda f: f[:-5], "payload is corrupt"),  # truncated
        (lambda f: f[:40] + b"\xff" * 16 + f[56:], "payload is corrupt"),  # corrupt blocks
        (lambda f: COMPRESSED_MAGIC + b"not zstd at all", "frame header is not valid"),
        (lambda f: COMPRESSED_MAGIC, "frame header is not valid"),  # magic only
    ],
)
def test_corrupt_payloads_are_refused(mangle: object, expected: str) -> None:
    frame = FrameCompressor().pack(screen_frame())
    assert callable(mangle)
    with pytest.raises(CompressedFrameError, match=expected):
        load_frame(mangle(frame), limit=LIMIT, compressed=True)


def test_a_packed_frame_must_hold_a_binary_frame() -> None:
    with pytest.raises(ProtocolError, match=r"holds no openenv-gym\.binary\.v1 frame"):
        load_frame(packed(b'{"type": "observation"}' * 10), limit=LIMIT, compressed=True)


def test_the_error_is_a_protocol_error_that_shows_what_arrived() -> None:
    bomb = packed(b"\0" * 10_000_000)
    with pytest.raises(ProtocolError) as caught:
        unpack_frame(bomb, limit=LIMIT)
    assert isinstance(caught.value, CompressedFrameError)
    assert caught.value.received.startswith("b'OGZ1")


def test_unpack_refuses_a_frame_without_the_magic() -> None:
    with pytest.raises(CompressedFrameError, match="does not start with b'OGZ1'"):
        unpack_frame(screen_frame(), limit=LIMIT)


# --------------------------------------------------------------------------- the agreement rule


@pytest.mark.parametrize(
    ("compression", "loopback", "offered"),
    [
        ("auto", False, ZSTD),  # a container, a LAN or WAN host
        ("auto", True, None),  # loopback or a Unix socket: not worth it
        ("zstd", True, ZSTD),
        ("zstd", False, ZSTD),
        ("off", False, None),
        ("off", True, None),
    ],
)
def test_what_a_client_offers(compression: str, loopback: bool, offered: str | None) -> None:
    assert compression_offer(compression, loopback) == offered


def test_a_server_never_compresses_with_shared_memory_or_an_unknown_codec() -> None:
    assert compression_accepted(ZSTD, shared_memory=False)
    assert not compression_accepted(ZSTD, shared_memory=True)
    assert not compression_accepted(None, shared_memory=False)
    assert not compression_accepted("lz4", shared_memory=False)
    assert not compression_accepted(["zstd"], shared_memory=False)


@pytest.mark.parametrize("bad", ["on", "ZSTD", "", None, 1, True])
def test_unknown_compression_values_are_refused_with_the_choices(bad: object) -> None:
    with pytest.raises(UnknownCompressionError, match="expected compression='auto', 'zstd' or"):
        check_compression(bad)  # type: ignore[arg-type]
    with pytest.raises(UnknownCompressionError):
        ConnectOptions(compression=bad)  # type: ignore[arg-type]


def test_connect_options_carry_the_switch() -> None:
    assert ConnectOptions().compression == "auto"
    assert ConnectOptions(compression="off").replace(compression="zstd").compression == "zstd"


# --------------------------------------------------------------------------- single sessions


def test_pack_frame_packs_what_pays_and_nothing_else() -> None:
    screen = screen_frame()
    assert is_compressed_frame(pack_frame(screen))
    noise = noise_frame()
    assert pack_frame(noise) is noise
    small = encode_frame({"type": "observation"}, [(["x"], np.zeros(4, np.float32))])
    assert pack_frame(small) is small


def test_a_single_session_offers_the_packed_encoding_only_where_it_pays() -> None:
    choice = resolve_encoding("auto")
    assert choice.subprotocols() == [BINARY_SUBPROTOCOL]
    assert choice.subprotocols(compressed=True) == [BINARY_ZSTD_SUBPROTOCOL, BINARY_SUBPROTOCOL]
    assert choice.subprotocols(batch=True, compressed=True)[0] == BATCH_SUBPROTOCOL
    assert resolve_encoding("json").subprotocols(compressed=True) == []
    agreed = encoding_of(accept_subprotocol([BINARY_ZSTD_SUBPROTOCOL, BINARY_SUBPROTOCOL]))
    assert agreed is BINARY_ZSTD
    assert agreed.implies(BINARY)
    resolve_encoding("binary").check_agreed(agreed, "ws://x")  # binary is implied


def test_the_packed_encoding_writes_screens_packed_and_reads_them_back() -> None:
    screen = np.full((210, 160, 3), 7, np.uint8)
    message = observation_message({"screen": screen, "lives": 3}, 1.0, False)
    frame, text = BINARY_ZSTD.encode_reply(message)
    assert not text
    assert is_compressed_frame(frame)
    reply = BINARY_ZSTD.parse_reply(frame)
    assert isinstance(reply, ObservationReply)
    np.testing.assert_array_equal(reply.observation["screen"], screen)
    # Small observations stay JSON, exactly as on a binary session.
    small = observation_message({"x": np.zeros(2, np.float32)}, 0.0, False)
    assert BINARY_ZSTD.encode_reply(small) == BINARY.encode_reply(small)


# --------------------------------------------------------------------------- not agreed


def bomb_frame() -> bytes:
    """A 118-byte-class frame that declares 64 MiB of content (what a hostile peer sends)."""
    return packed(b"\0" * (64 * 1024 * 1024))


UNAGREED = "never agreed to compression.*refused unread"


@pytest.mark.parametrize(
    ("read", "expected"),
    [
        pytest.param(lambda raw: load_frame(raw), UNAGREED, id="load_frame"),
        pytest.param(lambda raw: JSON.parse_reply(raw), "undecodable bytes", id="json-session"),
        pytest.param(lambda raw: BINARY.parse_reply(raw), UNAGREED, id="binary-session"),
        pytest.param(lambda raw: parse_batch_result(raw), UNAGREED, id="batch-off"),
    ],
)
def test_a_packed_frame_where_none_was_agreed_is_refused_unread(
    read: object, expected: str
) -> None:
    bomb = bomb_frame()
    assert len(bomb) < 3000
    # Refused before decompressing (it took 64 MiB and ~0.4 s of CPU before the fix).
    with pytest.raises(ProtocolError, match=expected):
        read(bomb)  # type: ignore[operator]


def test_a_packed_frame_is_read_where_it_was_agreed() -> None:
    screen = screen_frame()
    out = FrameCompressor().pack(screen)
    assert BINARY_ZSTD.parse_reply(observation_frame()) is not None
    assert load_frame(out, compressed=True)["data"]["screen"].shape == (210, 160, 3)


def observation_frame() -> bytes:
    screen = np.full((210, 160, 3), 7, np.uint8)
    frame, _ = BINARY_ZSTD.encode_reply(observation_message({"screen": screen}, 0.0, False))
    assert is_compressed_frame(frame)
    return frame


def test_a_batch_connection_offers_compression_unless_off() -> None:
    assert batch_compression_offer("auto") == ZSTD  # whatever the peer's address
    assert batch_compression_offer("zstd") == ZSTD
    assert batch_compression_offer("off") is None


# --------------------------------------------------------------------------- measured single


@pytest.mark.parametrize(
    ("compression", "loopback", "offered"),
    [
        ("auto", True, [MEASURED_SUBPROTOCOL, BINARY_SUBPROTOCOL]),  # a tunnel looks like this
        ("auto", False, [MEASURED_SUBPROTOCOL, BINARY_ZSTD_SUBPROTOCOL, BINARY_SUBPROTOCOL]),
        ("zstd", True, [BINARY_ZSTD_SUBPROTOCOL, BINARY_SUBPROTOCOL]),
        ("off", False, [BINARY_SUBPROTOCOL]),
    ],
)
def test_a_single_session_offers_the_measured_encoding_under_auto_whatever_the_address(
    compression: str, loopback: bool, offered: list[str]
) -> None:
    got = resolve_encoding("auto").subprotocols(
        compressed=compression_offer(compression, loopback) is not None,
        measured=measured_offer(compression),
    )
    assert got == offered
    # Our server prefers the measured encoding over the always-packed one.
    expected = {"auto": BINARY_ZSTD_MEASURED, ZSTD: BINARY_ZSTD, "off": BINARY}[compression]
    assert encoding_of(accept_subprotocol(got)) is expected
    assert resolve_encoding("json").subprotocols(compressed=True, measured=True) == []


def test_the_measured_encoding_packs_what_the_client_asked_for() -> None:
    screen = np.full((210, 160, 3), 7, np.uint8)
    message = observation_message({"screen": screen, "lives": 3}, 1.0, False)
    packed, _ = BINARY_ZSTD_MEASURED.encode_reply(message)
    raw, text = BINARY_ZSTD_MEASURED.encode_reply(message, pack=False)
    assert not text
    assert is_compressed_frame(packed)
    assert raw == BINARY.encode_reply(message)[0]  # as a binary session sends it
    for frame in (packed, raw):
        reply = BINARY_ZSTD_MEASURED.parse_reply(frame)
        assert isinstance(reply, ObservationReply)
        np.testing.assert_array_equal(reply.observation["screen"], screen)
    # Only this encoding lets a client message carry "compress".
    assert COMPRESS_KEY in BINARY_ZSTD_MEASURED.message_keys
    assert all(COMPRESS_KEY not in e.message_keys for e in (JSON, BINARY, BINARY_ZSTD))


def test_a_compress_key_is_refused_where_it_was_not_agreed() -> None:
    frame = '{"type":"step","data":{"action_id":1},"compress":false}'
    with pytest.raises(ClientMessageError, match=r"unexpected keys \['compress'\]") as caught:
        parse_client_message(frame)
    assert caught.value.code is ErrorCode.VALIDATION_ERROR
    message = parse_client_message(frame, keys=BINARY_ZSTD_MEASURED.message_keys)
    assert (message.type, message.data, message.compress) == ("step", {"action_id": 1}, False)
    assert parse_client_message('{"type":"state"}').compress is None


@pytest.mark.parametrize("bad", ["yes", 1, 0, [], {}, 1.5])
def test_a_compress_flag_that_is_not_a_bool_is_refused_with_what_came(bad: object) -> None:
    expected = f"expected 'compress' to be true or false.*got {type(bad).__name__}"
    with pytest.raises(ValueError, match=expected):
        check_compress_flag(bad)
    assert check_compress_flag(True) is True
    assert check_compress_flag(None) is None
