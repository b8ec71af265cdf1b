"""Compressed frames: a binary or batch frame packed with zstd level 1, agreed per connection.

Across a real link (a container boundary, a LAN, the internet) the bandwidth, not the round
trip, holds an Atari vector env back: a Pong screen is 100,800 raw bytes, and zstd level 1
makes it about 600x smaller in about 40 µs (``docs/benchmarks.md``, "Observation codecs").
Between our client and our server a batch connection may therefore agree to compress its
observation frames. Official peers never see it: it is agreed inside the ``batch_open``
exchange of ``openenv-gym.batch.v1``, which only our client and our server speak.

==========  ===============================================================================
bytes       content
==========  ===============================================================================
0..3        magic ``b"OGZ1"``
4..         one zstd frame that declares its content size; its content is one
            :mod:`openenv_gym.wire.binary` frame (``OGB1``: header, then the arrays)
==========  ===============================================================================

The agreement: the client adds ``"compression": "zstd"`` to ``batch_open``; a server that
can compress and did not agree to shared memory answers ``"compression": "zstd"`` in
``batch_opened`` (else ``null``), and from then on may send its ``batch_result`` frames
packed (each frame says by its magic whether it is). Each ``batch_step`` may then say
``"compress": false`` (send this result raw) or ``true``; without it the server packs what
pays. Compression goes one way only: the client never packs what it sends (actions are
small), and a server reads no packed client frame, agreed or not (an ``INVALID_JSON``
error reply, before a byte of it is decompressed). A client reads a packed frame only on a
connection that agreed to compression; on any other (JSON, plain binary, a batch connection
with ``compression="off"``) it is a :class:`~openenv_gym.errors.CompressedFrameError` at once.

The rule a connection uses (:func:`batch_compression_offer`, :func:`compression_offer`,
:func:`compression_accepted`, :class:`FrameCompressor`, and the client's
:class:`~openenv_gym.wire.compression_policy.CompressionPolicy`):

* ``compression="auto"`` (the default): offered whatever the peer's address (a tunnel's
  near end is 127.0.0.1); the client's
  :class:`~openenv_gym.wire.compression_policy.CompressionPolicy` then asks step by step
  for packed or raw results, by the cost per step it measures for each: on a **batch
  connection** in each ``batch_step``, on a **single session** by the measured
  subprotocol (below). ``"zstd"`` forces it on every connection (and offers no shared
  memory), ``"off"`` never offers it.
* **Never with shared memory**: a server that agreed to shared memory on a connection does
  not compress it (no observation byte crosses the wire).
* Only frames of at least :data:`MIN_COMPRESSED_BYTES` (4 KiB, what screens are and small
  float vectors are not) are packed, and only while packing pays: a frame that shrinks less
  than :data:`MIN_RATIO` (2x) goes out as it was, and the connection stops trying for the
  next :data:`RECHECK_FRAMES` frames (float vectors drop out at once, screens stay in).
* **Bounded before decompressing**: a packed frame must declare its content size, and that
  size must be within the receiver's message limit (the limit raw frames have); the
  one-shot decompressor then allocates exactly that and fails on a frame that holds more.
  ``ZstdDecompressor().decompress(blob, max_output_size=n)`` alone does *not* bound a frame
  that declares its size: a 3 KB frame would expand to 100 MB.

A single env's connection (one session) agrees to it by its WebSocket subprotocol
instead, one of two:

* :data:`MEASURED_SUBPROTOCOL` (``compression="auto"``): each ``reset`` and ``step`` may
  carry a top-level ``"compress": true|false`` (:data:`COMPRESS_KEY`; without it the
  server packs what pays), which the client's policy sets from what it measures. Only a
  connection that agreed this subprotocol accepts the key: on any other our server answers
  ``VALIDATION_ERROR`` (unexpected keys), as the official server does; so an official
  peer never sees it.
* :data:`BINARY_ZSTD_SUBPROTOCOL` (``compression="zstd"``, and under ``"auto"`` as a
  fallback to an older server of ours when the peer is not on a loopback address): every
  binary observation frame that pays is packed (:func:`pack_frame`).

Either is offered before ``openenv-gym.binary.v1``; an official server agrees to neither.
A single session unpacks under the default client limit
(:data:`~openenv_gym.wire.messages.CLIENT_INBOUND_LIMIT`), not its own ``max_message_size``.

Example:
    >>> import numpy as np
    >>> from openenv_gym.wire.binary import encode_frame, load_frame
    >>> screen = np.zeros((210, 160, 3), np.uint8)
    >>> frame = encode_frame({"type": "observation"}, [(["screen"], screen)])
    >>> packed = FrameCompressor().pack(frame)
    >>> packed[:4], len(frame) // len(packed) > 100
    (b'OGZ1', True)
    >>> unpack_frame(packed, limit=len(frame)) == frame
    True
    >>> load_frame(packed, compressed=True)["screen"].shape
    (210, 160, 3)
    >>> compression_offer("auto", peer_on_loopback=True), compression_offer("zstd", True)
    (None, 'zstd')
    >>> batch_compression_offer("auto"), batch_compression_offer("off")
    ('zstd', None)
    >>> measured_offer("auto"), measured_offer("zstd"), check_compress_flag(False)
    (True, False, False)
"""

from __future__ import annotations

from typing import Any, Final

import zstandard

from openenv_gym.errors import CompressedFrameError, UnknownCompressionError

#: The first four bytes of a compressed frame.
COMPRESSED_MAGIC: Final = b"OGZ1"
#: The subprotocol of a single session whose observation frames may come packed.
BINARY_ZSTD_SUBPROTOCOL: Final = "openenv-gym.binary-zstd.v1"
#: The subprotocol of a single session that asks, request by request, for packed frames.
MEASURED_SUBPROTOCOL: Final = "openenv-gym.binary-zstd.v2"
#: The top-level key of a ``reset`` or ``step`` on a :data:`MEASURED_SUBPROTOCOL` session.
COMPRESS_KEY: Final = "compress"
#: The one codec, its name in ``batch_open`` / ``batch_opened``.
ZSTD: Final = "zstd"
#: The values of ``compression=``.
COMPRESSION_SETTINGS: Final = ("auto", ZSTD, "off")
DEFAULT_COMPRESSION: Final = "auto"
#: zstd's level (1: 600x on Pong in ~40 µs; higher levels gain little on screens).
LEVEL: Final = 1
#: Frames smaller than this are sent as they are.
MIN_COMPRESSED_BYTES: Final = 4096
#: A frame that shrinks less than this is sent as it was, and the connection pauses trying.
MIN_RATIO: Final = 2.0
#: Frames sent as they are after one that did not pay, before trying again.
RECHECK_FRAMES: Final = 1024

_DECOMPRESSOR: Final = zstandard.ZstdDecompressor()
_ONE_SHOT: Final = zstandard.ZstdCompressor(level=LEVEL, write_content_size=True)


def check_compression(compression: str) -> str:
    """Return ``compression`` if it is one of :data:`COMPRESSION_SETTINGS`.

    Raises:
        UnknownCompressionError: It is not.
    """
    if not isinstance(compression, str) or compression not in COMPRESSION_SETTINGS:
        raise UnknownCompressionError(
            f"expected compression='auto', 'zstd' or 'off', got {compression!r}. 'auto' "
            "compresses observation frames where it measures faster (never with shared "
            "memory); 'zstd' forces it, 'off' never compresses."
        )
    return compression


def batch_compression_offer(compression: str) -> str | None:
    """What a client puts in ``batch_open``'s ``"compression"`` (``None``: nothing): ``"zstd"``
    unless ``compression="off"`` (with ``"auto"`` the client's measurement decides per step)."""
    return None if compression == "off" else ZSTD


def compression_offer(compression: str, peer_on_loopback: bool) -> str | None:
    """Whether a single session offers :data:`BINARY_ZSTD_SUBPROTOCOL` (``"zstd"``) or not
    (``None``).

    ``peer_on_loopback``: the connection goes through a Unix socket or to a loopback
    address (see the module docstring for the rule).
    """
    if compression == ZSTD or (compression == DEFAULT_COMPRESSION and not peer_on_loopback):
        return ZSTD
    return None


def measured_offer(compression: str) -> bool:
    """Whether a single session offers :data:`MEASURED_SUBPROTOCOL` (under ``"auto"``:
    whatever the peer's address, the client's measurement decides)."""
    return compression == DEFAULT_COMPRESSION


def check_compress_flag(value: Any) -> bool | None:
    """The :data:`COMPRESS_KEY` of a client message: ``True``, ``False`` or absent (``None``).

    Raises:
        ValueError: It is anything else (the server answers ``VALIDATION_ERROR``).
    """
    if value is None or isinstance(value, bool):
        return value
    raise ValueError(
        f"expected {COMPRESS_KEY!r} to be true or false (pack this reply or not), got "
        f"{type(value).__name__} {value!r:.50}; leave it out to let the server pack what pays"
    )


def compression_accepted(offered: Any, *, shared_memory: bool) -> bool:
    """Whether a server agrees to the ``"compression"`` a client offered in ``batch_open``
    (only ``"zstd"``, never on a connection that agreed to shared memory)."""
    return offered == ZSTD and not shared_memory


def is_compressed_frame(frame: Any) -> bool:
    """Whether ``frame`` is a compressed frame (starts with :data:`COMPRESSED_MAGIC`)."""
    return isinstance(frame, bytes) and frame.startswith(COMPRESSED_MAGIC)


def pack_frame(frame: bytes) -> bytes:
    """``frame`` compressed when it is at least :data:`MIN_COMPRESSED_BYTES` and shrinks
    :data:`MIN_RATIO` times, else ``frame`` itself (a single session's rule: one try per
    frame; a batch connection's :class:`FrameCompressor` also pauses)."""
    if len(frame) < MIN_COMPRESSED_BYTES:
        return frame
    packed = _ONE_SHOT.compress(frame)
    if len(packed) * MIN_RATIO > len(frame):
        return frame
    return COMPRESSED_MAGIC + packed


class FrameCompressor:
    """Packs one connection's outgoing binary frames while it pays (module docstring).

    Attributes:
        packed: Frames sent compressed.
        skipped: Frames of at least :data:`MIN_COMPRESSED_BYTES` sent as they were.
    """

    def __init__(self) -> None:
        self._compressor = zstandard.ZstdCompressor(level=LEVEL, write_content_size=True)
        self._pause = 0
        self.packed = 0
        self.skipped = 0

    def pack(self, frame: bytes) -> bytes:
        """``frame`` compressed (:data:`COMPRESSED_MAGIC` first), or ``frame`` itself when it
        is small, when it does not shrink :data:`MIN_RATIO` times, or while paused."""
        if len(frame) < MIN_COMPRESSED_BYTES:
            return frame
        if self._pause:
            self._pause -= 1
            self.skipped += 1
            return frame
        packed = self._compressor.compress(frame)
        if len(packed) * MIN_RATIO > len(frame):
            self._pause = RECHECK_FRAMES
            self.skipped += 1
            return frame
        self.packed += 1
        return COMPRESSED_MAGIC + packed


def _bad(frame: bytes, why: str) -> CompressedFrameError:
    return CompressedFrameError(
        f"expected a compressed frame ({COMPRESSED_MAGIC!r} then a zstd frame that declares "
        f"its content size), but {why} ({len(frame)} bytes)",
        received=repr(bytes(frame[:64])),
    )


def refuse_unagreed(frame: bytes) -> CompressedFrameError:
    """The error for a compressed frame on a connection that did not agree to compression
    (raised before a byte of it is decompressed)."""
    return CompressedFrameError(
        f"expected a raw frame, since this connection never agreed to compression, but a "
        f"compressed frame ({COMPRESSED_MAGIC!r}, {len(frame)} bytes) came; it was refused "
        "unread. A peer may pack frames only after the binary-zstd subprotocol or batch_open "
        "agreed 'zstd'; this peer does not follow the openenv-gym protocol.",
        received=repr(bytes(frame[:64])),
    )


def unpack_frame(frame: bytes, *, limit: int) -> bytes:
    """The frame a compressed frame holds, never decompressing more than ``limit`` bytes.

    Args:
        frame: A frame that starts with :data:`COMPRESSED_MAGIC`.
        limit: The receiver's message limit (the largest frame it accepts raw).

    Raises:
        CompressedFrameError: The zstd frame does not declare its content size, declares
            more than ``limit``, or is corrupt (its content differs from what it declares).
    """
    if not is_compressed_frame(frame):
        raise _bad(frame, f"it does not start with {COMPRESSED_MAGIC!r}")
    blob = bytes(frame[len(COMPRESSED_MAGIC) :])
    try:
        size = zstandard.frame_content_size(blob)
    except zstandard.ZstdError as exc:
        raise _bad(frame, f"its zstd frame header is not valid ({exc})") from exc
    if size < 0:
        raise _bad(frame, "its zstd frame does not declare its content size")
    if size > limit:
        raise _bad(
            frame,
            f"it declares {size} bytes of content, over the message limit of {limit} bytes "
            "(max_message_size)",
        )
    try:
        # One-shot: allocates the declared size and fails on a frame that holds more.
        return _DECOMPRESSOR.decompress(blob, max_output_size=size)
    except zstandard.ZstdError as exc:
        raise _bad(frame, f"its zstd payload is corrupt ({exc})") from exc


__all__ = [
    "BINARY_ZSTD_SUBPROTOCOL",
    "COMPRESSED_MAGIC",
    "COMPRESSION_SETTINGS",
    "COMPRESS_KEY",
    "DEFAULT_COMPRESSION",
    "LEVEL",
    "MEASURED_SUBPROTOCOL",
    "MIN_COMPRESSED_BYTES",
    "MIN_RATIO",
    "RECHECK_FRAMES",
    "ZSTD",
    "FrameCompressor",
    "batch_compression_offer",
    "check_compress_flag",
    "check_compression",
    "compression_accepted",
    "compression_offer",
    "is_compressed_frame",
    "measured_offer",
    "pack_frame",
    "refuse_unagreed",
    "unpack_frame",
]
