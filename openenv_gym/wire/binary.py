"""The ``openenv-gym.binary.v1`` frame format: OpenEnv replies with arrays as raw bytes.

Plain OpenEnv sends a 210x160x3 Atari screen as a JSON list of 100,800 integers; building,
parsing and converting that list costs ~12 ms per step. When both sides agree at connect
time (our client offers the WebSocket subprotocol :data:`BINARY_SUBPROTOCOL`, our server
accepts it), observation replies whose observation holds numpy arrays travel as one binary
WebSocket frame instead:

==========  ===============================================================================
bytes       content
==========  ===============================================================================
0..3        magic ``b"OGB1"``
4..7        ``H``: length of the header, unsigned 32-bit little-endian
8..8+H      header: UTF-8 JSON ``{"message": <the reply, arrays replaced by null>,
            "arrays": [{"path": [...], "dtype": "|u1", "shape": [...], "offset": int}]}``
then        zero padding to a multiple of 8, then the array buffers (C order), each
            starting at ``offset`` (relative to the buffer region, a multiple of 8)
==========  ===============================================================================

``path`` is the key path of the array inside ``message`` (e.g.
``["data", "observation", "screen"]``); ``dtype`` is numpy's ``dtype.str`` (explicit byte
order). The client rebuilds each array with :func:`numpy.frombuffer` (one copy, so the
array is writable and owns its memory) and puts it back at its path: no per-element
Python work on either side. Everything else (error and state replies, observations
without arrays, every client message) stays a plain JSON text frame, so a session that
negotiated the subprotocol still speaks OpenEnv. Without the subprotocol (an official
server or client on the other side) nothing changes at all.

Example:
    >>> import numpy as np
    >>> message = {"type": "observation", "data": {"observation": {
    ...     "screen": np.arange(6, dtype=np.uint8), "lives": 3}, "reward": 0.0, "done": False}}
    >>> encode_observation_frame(message) is None  # 6 bytes: cheaper as JSON
    True
    >>> frame = encode_observation_frame(message, min_bytes=0)
    >>> frame[:4]
    b'OGB1'
    >>> back = decode_frame(frame)
    >>> back["data"]["observation"]["screen"], back["data"]["observation"]["lives"]
    (array([0, 1, 2, 3, 4, 5], dtype=uint8), 3)
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import pydantic_core

from openenv_gym.errors import ProtocolError

if TYPE_CHECKING:
    from openenv_gym.wire.shared_memory import SharedArrayReader

from openenv_gym.wire.compressed import is_compressed_frame, refuse_unagreed, unpack_frame
from openenv_gym.wire.messages import (
    CLIENT_INBOUND_LIMIT,
    ObservationReply,
    StateReply,
    encode_json,
    load_server_json,
    parse_server_object,
)

#: The WebSocket subprotocol our client offers and our server accepts.
BINARY_SUBPROTOCOL: Final = "openenv-gym.binary.v1"
#: The first four bytes of every binary frame.
MAGIC: Final = b"OGB1"
_ALIGN: Final = 8
_HEADER_LENGTH: Final = struct.Struct("<I")
_PREFIX: Final = len(MAGIC) + _HEADER_LENGTH.size
_ARRAY_KINDS: Final = frozenset("biuf")


def _padding(size: int) -> int:
    return -size % _ALIGN


def is_binary_frame(frame: str | bytes) -> bool:
    """Whether ``frame`` is a binary-encoded reply (starts with :data:`MAGIC`)."""
    return isinstance(frame, bytes | bytearray | memoryview) and bytes(frame[:4]) == MAGIC


def encode_frame(
    message: dict[str, Any],
    arrays: Sequence[tuple[Sequence[str], Any]],
    shared: Sequence[dict[str, Any]] = (),
) -> bytes:
    """Encode ``message`` (arrays already removed) and ``(path, array)`` pairs as one frame.

    ``shared`` holds descriptors of arrays already written to shared memory (with their
    ``path``; see :mod:`openenv_gym.wire.shared_memory`): the frame names them only.

    Raises:
        ValueError: An array is not numeric (bool, int, uint or float).
    """
    descriptors: list[dict[str, Any]] = list(shared)
    buffers: list[bytes | memoryview] = []
    offset = 0
    for path, value in arrays:
        array = np.asarray(value, order="C")  # (ascontiguousarray would make 0-d 1-d)
        if array.dtype.kind not in _ARRAY_KINDS:
            raise ValueError(
                f"expected a numeric array at {list(path)}, got dtype {array.dtype}; only "
                "bool, integer and float arrays travel as raw bytes"
            )
        descriptors.append(
            {
                "path": list(path),
                "dtype": array.dtype.str,
                "shape": list(array.shape),
                "offset": offset,
            }
        )
        buffers.append(array.reshape(-1).view(np.uint8).data if array.size else b"")
        pad = _padding(array.nbytes)
        if pad:
            buffers.append(b"\0" * pad)
        offset += array.nbytes + pad
    header = encode_json({"message": message, "arrays": descriptors})
    head = MAGIC + _HEADER_LENGTH.pack(len(header)) + header
    return b"".join([head, b"\0" * _padding(len(head)), *buffers])


#: Observations whose arrays hold fewer bytes than this go out as JSON even on a binary
#: session (measured on CartPole's 16 bytes: JSON 1,470 steps/s, binary 1,130).
MIN_BINARY_BYTES: Final = 512


def encode_observation_frame(
    message: dict[str, Any], *, min_bytes: int = MIN_BINARY_BYTES
) -> bytes | None:
    """An ``observation`` reply with its top-level numpy array fields as one binary frame.

    Array fields of ``message["data"]["observation"]`` (one level deep, plus the fields of
    a nested dict one more level down) go out as raw bytes; the rest as JSON. Returns
    ``None`` when the observation holds no numeric numpy array, or arrays of fewer than
    ``min_bytes`` (:data:`MIN_BINARY_BYTES`) bytes in all (send plain JSON then: for a few
    numbers JSON is cheaper than the frame's header, and the client reads either).
    ``message`` is not modified.
    """
    data = message.get("data")
    if not isinstance(data, dict):
        return None
    observation = data.get("observation")
    if not isinstance(observation, dict):
        return None
    arrays: list[tuple[Sequence[str], Any]] = []
    stripped: dict[str, Any] = {}
    for key, value in observation.items():
        if isinstance(value, np.ndarray) and value.dtype.kind in _ARRAY_KINDS:
            arrays.append((("data", "observation", key), value))
            stripped[key] = None
        elif isinstance(value, dict) and any(isinstance(v, np.ndarray) for v in value.values()):
            inner: dict[str, Any] = {}
            for sub, item in value.items():
                if isinstance(item, np.ndarray) and item.dtype.kind in _ARRAY_KINDS:
                    arrays.append((("data", "observation", key, sub), item))
                    inner[sub] = None
                else:
                    inner[sub] = item
            stripped[key] = inner
        else:
            stripped[key] = value
    if sum(int(array.nbytes) for _, array in arrays) < min_bytes:
        return None
    return encode_frame({**message, "data": {**data, "observation": stripped}}, arrays)


def _bad(frame: bytes, why: str) -> ProtocolError:
    return ProtocolError(
        f"expected an {BINARY_SUBPROTOCOL} frame, but {why} ({len(frame)} bytes)",
        received=repr(bytes(frame[:64])),
    )


def decode_frame(
    frame: bytes, shared: SharedArrayReader | None = None, *, copy: bool = True
) -> dict[str, Any]:
    """The message of a binary frame, with its arrays put back as writable numpy arrays
    (``copy=False``: as read-only views of ``frame``, for a caller that copies them into
    buffers of its own anyway; a Pong batch of 16 screens is 1.6 MB copied once less).

    Arrays in shared memory (a descriptor with ``"shm"``) are read through ``shared``.

    Raises:
        ProtocolError: The frame is truncated or malformed, or names shared memory that
            ``shared`` cannot read (or no ``shared`` reader was given).
    """
    if not is_binary_frame(frame):
        raise _bad(frame, f"it does not start with {MAGIC!r}")
    if len(frame) < _PREFIX:
        raise _bad(frame, "it is shorter than its fixed prefix")
    (length,) = _HEADER_LENGTH.unpack_from(frame, len(MAGIC))
    end = _PREFIX + length
    if end > len(frame):
        raise _bad(frame, f"its header length {length} runs past the end")
    try:
        header = pydantic_core.from_json(frame[_PREFIX:end])
        message = header["message"]
        descriptors = header["arrays"]
    except (ValueError, KeyError, TypeError) as exc:
        raise _bad(frame, f"its header is not valid ({exc})") from exc
    if not isinstance(message, dict) or not isinstance(descriptors, list):
        raise _bad(frame, "its header lacks 'message' or 'arrays'")
    base = end + _padding(end)
    for descriptor in descriptors:
        if isinstance(descriptor, dict) and "shm" in descriptor:
            _put_shared(frame, message, descriptor, shared)
            continue
        try:
            path = descriptor["path"]
            dtype = np.dtype(descriptor["dtype"])
            shape = tuple(int(n) for n in descriptor["shape"])
            start = base + int(descriptor["offset"])
            count = math.prod(shape)
            if dtype.kind not in _ARRAY_KINDS or start + count * dtype.itemsize > len(frame):
                raise ValueError(f"array {descriptor!r} does not fit the frame")
            array = np.frombuffer(frame, dtype=dtype, count=count, offset=start)
            parent: Any = message
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = array.reshape(shape).copy() if copy else array.reshape(shape)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise _bad(frame, f"an array descriptor is not valid ({exc})") from exc
    return message


def _put_shared(
    frame: bytes,
    message: dict[str, Any],
    descriptor: dict[str, Any],
    shared: SharedArrayReader | None,
) -> None:
    if shared is None:
        raise _bad(frame, "it names shared memory on a connection that did not agree to it")
    array = shared.array(descriptor)
    try:
        parent: Any = message
        path = descriptor["path"]
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = array
    except (KeyError, TypeError, IndexError) as exc:
        raise _bad(frame, f"a shared array descriptor is not valid ({exc})") from exc


def load_frame(
    raw: str | bytes,
    shared: SharedArrayReader | None = None,
    *,
    limit: int = CLIENT_INBOUND_LIMIT,
    copy: bool = True,
    compressed: bool = False,
) -> Any:
    """The message of one server frame: a binary frame's (arrays put back, those in shared
    memory read through ``shared``; with ``compressed``, the connection agreed to
    compression, and a compressed frame of :mod:`openenv_gym.wire.compressed` is unpacked
    first, to at most ``limit`` bytes), else the JSON text's. The one place that tells the
    frame kinds apart. ``copy=False``: a binary frame's arrays are read-only views (see
    :func:`decode_frame`).

    Raises:
        CompressedFrameError: A compressed frame came on a connection that did not agree to
            compression (refused before decompressing), or is corrupt, or would unpack past
            ``limit``.
        ProtocolError: The frame is neither a valid binary frame nor JSON.
    """
    if isinstance(raw, bytes) and is_compressed_frame(raw):
        if not compressed:
            raise refuse_unagreed(raw)
        raw = unpack_frame(raw, limit=limit)
        if not is_binary_frame(raw):
            raise _bad(raw, f"a compressed frame holds no {BINARY_SUBPROTOCOL} frame")
    if isinstance(raw, bytes) and is_binary_frame(raw):
        return decode_frame(raw, shared, copy=copy)
    return load_server_json(raw)


def parse_packed_frame(
    raw: str | bytes, *, url: str | None = None
) -> ObservationReply | StateReply:
    """:func:`parse_frame` on a session that agreed to compressed frames."""
    return parse_frame(raw, url=url, compressed=True)


def parse_frame(
    raw: str | bytes, *, url: str | None = None, compressed: bool = False
) -> ObservationReply | StateReply:
    """Parse one server frame: JSON text, or a binary observation frame of our servers
    (``compressed``: the session agreed to compressed frames, which are unpacked).

    Raises:
        ServerReplyError: The server sent an ``error`` message.
        CompressedFrameError: A compressed frame the session did not agree to, or a bad one.
        ProtocolError: The frame is not a valid OpenEnv server message.
    """
    message = load_frame(raw, compressed=compressed)
    binary = isinstance(raw, bytes) and is_binary_frame(raw)
    quoted = f"<binary frame, {len(raw)} bytes>" if binary else raw
    return parse_server_object(message, quoted, url=url)


__all__ = [
    "BINARY_SUBPROTOCOL",
    "MAGIC",
    "decode_frame",
    "encode_frame",
    "encode_observation_frame",
    "is_binary_frame",
    "load_frame",
    "parse_frame",
    "parse_packed_frame",
]
