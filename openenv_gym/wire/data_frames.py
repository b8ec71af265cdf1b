"""Whole WebSocket data frames read off the byte stream before ``websockets``' parser.

Both ends frame their messages with ``websockets``' sans-I/O protocols (``receive_data``,
``events_received``). Their parser is a chain of generators that builds a ``Frame`` through
several layers: about 2 µs a frame when the caches are warm, and 8 µs for a vector env's
client woken after a millisecond of a server worker's emulator on its core (preprocessed
Pong N=8 on 2 cores: half the cost of reading a reply).

:class:`DataFrameReader` sits in front of a protocol. The frames a stepping loop exchanges,
whole unfragmented text or binary frames without extension bits, masked as the side
requires and within the size limit, it reads itself. Every other frame (pings, pongs,
close, fragments, compressed frames, anything malformed or too large) it hands to the
protocol byte for byte, so the protocol answers pings, runs the closing handshake and fails
the connection exactly as before. Events come back in stream order, a ``Frame`` for each
message read here. Like the protocol, the reader leaves text frames undecoded: whoever
takes the message decodes it.

The reader must start at a frame boundary, with no byte of a frame handed to the protocol
before it (:func:`ends_at_handshake`); once the protocol leaves the ``OPEN`` state,
everything goes to it.

Example (the protocols' handshake: ``open_pair`` in ``tests/wire/test_data_frames.py``):
    >>> from websockets.server import ServerProtocol
    >>> server = ServerProtocol()  # not OPEN yet: the reader hands everything to it
    >>> reader = DataFrameReader(server, masked=True, max_size=2**20)
    >>> request = b"GET /ws HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n"
    >>> [type(event).__name__ for event in reader.receive_data(request)]
    ['Request']
"""

from __future__ import annotations

import os
import struct
from typing import Any, Final

import numpy as np
from websockets.frames import Frame, Opcode
from websockets.protocol import Protocol, State

_TEXT_WHOLE: Final = 0x81  # FIN, no RSV bits, opcode 1
_BINARY_WHOLE: Final = 0x82  # FIN, no RSV bits, opcode 2
_FIN: Final = 0x80
_OPCODE: Final = 0x0F
_MASK_BIT: Final = 0x80
_SHORT: Final = struct.Struct("!H")
_LONG: Final = struct.Struct("!Q")
#: Payloads up to this size are unmasked with one integer XOR, larger ones with numpy.
_INT_UNMASK_BYTES: Final = 4096
_HANDSHAKE_END: Final = b"\r\n\r\n"
#: A data frame that has not come whole is waited for (its start kept, the rest appended)
#: up to this size; a larger one goes to the protocol, whose buffer joins its pieces with
#: fewer copies (measured: a 1.6 MB frame in 64 KiB reads, 0.16 ms there against 0.7 ms).
WAIT_FOR_BYTES: Final = 64 * 1024


def ends_at_handshake(received: bytes) -> bool:
    """Whether ``received``, every byte fed to a protocol until its handshake completed,
    ends exactly with the HTTP head: the protocol then holds no byte of a frame, and a
    :class:`DataFrameReader` can take the stream from there.

    Example:
        >>> head = b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\n\\r\\n"
        >>> ends_at_handshake(head)
        True
        >>> ends_at_handshake(head + b"\\x81\\x05he")  # a frame's first bytes behind it
        False
    """
    end = received.find(_HANDSHAKE_END)
    return end >= 0 and end + len(_HANDSHAKE_END) == len(received)


def data_frame(payload: bytes, *, text: bool, masked: bool) -> bytes:
    """One whole text (``text``) or binary frame of ``payload``, masked with a fresh random
    key when ``masked`` (a client's frames must be, RFC 6455 5.3): the bytes ``websockets``'
    ``send_text`` / ``send_binary`` queue, written without building a ``Frame``.

    Example:
        >>> data_frame(b"hi", text=True, masked=False)
        b'\\x81\\x02hi'
        >>> frame = data_frame(b"hi", text=False, masked=True)
        >>> first, start, length, mask = frame_header(frame, 0, len(frame))
        >>> hex(first), length, unmask(frame[start:], mask)
        ('0x82', 2, b'hi')
    """
    size = len(payload)
    first = _TEXT_WHOLE if text else _BINARY_WHOLE
    mask_bit = _MASK_BIT if masked else 0
    if size < 126:
        header = bytes((first, mask_bit | size))
    elif size < 1 << 16:
        header = bytes((first, mask_bit | 126)) + _SHORT.pack(size)
    else:
        header = bytes((first, mask_bit | 127)) + _LONG.pack(size)
    if not masked:
        return header + payload
    key = os.urandom(4)
    return header + key + unmask(payload, key)


def unmask(payload: bytes, mask: bytes) -> bytes:
    """``payload`` XOR the 4-byte ``mask`` repeated (RFC 6455, 5.3).

    Example:
        >>> unmask(unmask(b"hello", b"abcd"), b"abcd")
        b'hello'
    """
    size = len(payload)
    if size <= _INT_UNMASK_BYTES:
        key = (mask * (size // 4 + 1))[:size]
        value = int.from_bytes(payload, "little") ^ int.from_bytes(key, "little")
        return value.to_bytes(size, "little")
    data = np.frombuffer(payload, np.uint8)
    key_array = np.resize(np.frombuffer(mask, np.uint8), size)
    return np.bitwise_xor(data, key_array).tobytes()


class DataFrameReader:
    """Splits received bytes into the events of ``protocol`` (module docstring).

    Args:
        protocol: The connection's ``websockets`` protocol, in the ``OPEN`` state, with no
            byte of a frame fed to it yet.
        masked: Whether the peer masks its frames (a server reading a client: ``True``).
        max_size: The protocol's ``max_size``: larger frames go to the protocol, which
            closes the connection with 1009.
    """

    def __init__(self, protocol: Protocol, *, masked: bool, max_size: int | None) -> None:
        self._protocol = protocol
        self._masked = masked
        self._max_size = max_size
        self._buffer = b""  # the start of a frame not yet whole, at a frame boundary
        self._handing = 0  # bytes of the frame being handed to the protocol still to come
        self._fragmented = False  # a fragmented message is under way at the protocol
        self._bypass = False  # the protocol left OPEN: it reads everything from now on

    def receive_data(self, data: bytes) -> list[Any]:
        """Read ``data``: the events it completes, in stream order (``Frame`` objects and
        whatever the protocol's ``events_received`` gives)."""
        events: list[Any] = []
        if self._bypass:
            self._hand(data, events)
            return events
        if self._handing:
            take = min(len(data), self._handing)
            self._handing -= take
            self._hand(data[:take], events)
            data = data[take:]
        buffer = self._buffer + data if self._buffer else data
        size = len(buffer)
        at = 0
        while at < size:
            if self._protocol.state is not State.OPEN:
                self._bypass = True
                self._hand(buffer[at:], events)
                at = size
                break
            header = frame_header(buffer, at, size)
            if header is None:
                break  # the header is not whole yet
            first, start, length, mask = header
            end = start + length
            whole = end <= size
            if self._readable(first, length, mask is not None, whole):
                if not whole:
                    break  # a small frame: wait for the rest
                payload = buffer[start:end]
                if mask is not None:
                    payload = unmask(payload, mask)
                opcode = Opcode.TEXT if first == _TEXT_WHOLE else Opcode.BINARY
                events.append(Frame(opcode, payload))
                at = end
                continue
            self._note_fragments(first)
            if whole:
                self._hand(buffer[at:end], events)
                at = end
            else:
                self._hand(buffer[at:], events)
                self._handing = end - size
                at = size
        self._buffer = buffer[at:] if at < size else b""
        return events

    def receive_eof(self) -> list[Any]:
        """The stream ended: the protocol gets what is buffered, then the end."""
        events: list[Any] = []
        buffer, self._buffer = self._buffer, b""
        if buffer:
            self._hand(buffer, events)
        self._bypass = True
        self._protocol.receive_eof()
        events.extend(self._protocol.events_received())
        return events

    def _readable(self, first: int, length: int, masked: bool, whole: bool) -> bool:
        """Whether the frame is one to read here (module docstring): a large one only if
        it came whole (one that comes in pieces is joined better by the protocol)."""
        return (
            first in (_BINARY_WHOLE, _TEXT_WHOLE)
            and masked == self._masked
            and not self._fragmented
            and (self._max_size is None or length <= self._max_size)
            and (whole or length <= WAIT_FOR_BYTES)
        )

    def _note_fragments(self, first: int) -> None:
        """Follow the fragmented messages of the frames handed to the protocol."""
        opcode = first & _OPCODE
        if opcode in (Opcode.TEXT.value, Opcode.BINARY.value):
            self._fragmented = not first & _FIN
        elif opcode == Opcode.CONT.value and first & _FIN:
            self._fragmented = False

    def _hand(self, data: bytes, events: list[Any]) -> None:
        if data:
            self._protocol.receive_data(data)
            events.extend(self._protocol.events_received())


def frame_header(buffer: bytes, at: int, size: int) -> tuple[int, int, int, bytes | None] | None:
    """The header of the frame at ``buffer[at:]`` (``size``: ``len(buffer)``): its first
    byte, where its payload starts, its length and its mask; ``None`` while it is not whole.

    Example (a client's masked text frame):
        >>> frame = bytes([0x81, 0x85, 1, 2, 3, 4]) + unmask(b"hello", bytes([1, 2, 3, 4]))
        >>> frame_header(frame, 0, len(frame))
        (129, 6, 5, b'\\x01\\x02\\x03\\x04')
        >>> unmask(frame[6:11], frame[2:6]), frame_header(frame, 0, 4)
        (b'hello', None)
    """
    if size - at < 2:
        return None
    first, second = buffer[at], buffer[at + 1]
    length = second & 0x7F
    start = at + 2
    if length == 126:
        if size - start < 2:
            return None
        (length,) = _SHORT.unpack_from(buffer, start)
        start += 2
    elif length == 127:
        if size - start < 8:
            return None
        (length,) = _LONG.unpack_from(buffer, start)
        start += 8
    if not second & _MASK_BIT:
        return first, start, length, None
    if size - start < 4:
        return None
    return first, start + 4, length, buffer[start : start + 4]


__all__ = [
    "WAIT_FOR_BYTES",
    "DataFrameReader",
    "data_frame",
    "ends_at_handshake",
    "frame_header",
    "unmask",
]
