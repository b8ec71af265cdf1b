"""Encodings: how messages and observation arrays travel, and the one registry of them.

An :class:`Encoding` is one way a connection speaks: its WebSocket subprotocol (``None`` for
plain OpenEnv JSON), how a client reads a reply frame and how a server writes an
observation reply, and what it builds on. The registry below is the only place client and
server pick from: the client offers the subprotocols of :data:`REGISTRY` (through an
:class:`EncodingChoice`, what the user's ``encoding=`` resolves to) and the server accepts
the best one offered (:func:`accept_subprotocol`); each side then looks up the agreed
encoding with :func:`encoding_of`.

=================  ==========================  ==========================================
encoding           subprotocol                 builds on / implies
=================  ==========================  ==========================================
``json``           none (official OpenEnv)     (the baseline every peer speaks)
``binary``         ``openenv-gym.binary.v1``   observation arrays as raw bytes
                                               (:mod:`.binary`)
``binary_zstd``    ``openenv-gym.binary-zstd   ``binary``; one session's frames packed
                   .v1``                       with zstd where it pays (:mod:`.compressed`)
``binary_zstd_     ``openenv-gym.binary-zstd   ``binary``; packed where the client asks
measured``         .v2``                       (``"compress"`` per request, measured)
``batch``          ``openenv-gym.batch.v1``    ``binary``; K sessions per connection
                                               (:mod:`.batch`)
``shared_memory``  none: agreed in             ``batch``; same host only
                   ``batch_open`` by a probe   (:mod:`.shared_memory`)
``zstd``           none: agreed in             ``batch``; result frames packed with zstd
                   ``batch_open``              across a real link, never with shared
                                               memory (:mod:`.compressed`)
=================  ==========================  ==========================================

What an encoding implies is written once, as :attr:`Encoding.builds_on`: ``batch`` builds
on ``binary``, so a batch connection reads and writes binary frames, and ``encoding="json"``
(which offers nothing) never batches.

Adding an encoding (e.g. compressed frames) touches three places and nothing else:

1. its own module in :mod:`openenv_gym.wire` with its frame format: a function that reads
   a server frame (``(raw, url=...) -> reply``, usually by calling
   :func:`~openenv_gym.wire.binary.load_frame` on what it unpacked) and one that writes an
   observation reply (``message -> bytes | None``, ``None``: send JSON), and its
   subprotocol name;
2. one :class:`Encoding` in the registry below (what it builds on, where it ranks among
   the offers, and which ``encoding=`` choices offer it);
3. its tests in ``tests/wire/``.

Clients (:mod:`openenv_gym.client`, :mod:`openenv_gym.vector.opening`) and the server
(:mod:`openenv_gym.server.app`, :mod:`openenv_gym.server.session`) only call the registry
and the methods of the agreed :class:`Encoding`.

Example:
    >>> choice = resolve_encoding("auto")
    >>> choice.subprotocols(batch=True)
    ['openenv-gym.batch.v1', 'openenv-gym.binary.v1']
    >>> resolve_encoding("json").subprotocols(batch=True)
    []
    >>> agreed = encoding_of(accept_subprotocol(choice.subprotocols(batch=False)))
    >>> agreed.name, agreed.binary_frames, agreed.batch
    ('binary', True, False)
    >>> BATCH.implies(BINARY), encoding_of(None) is JSON
    (True, True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from openenv_gym.errors import BinaryEncodingRefusedError, UnknownEncodingError
from openenv_gym.wire.batch import BATCH_SUBPROTOCOL
from openenv_gym.wire.binary import (
    BINARY_SUBPROTOCOL,
    encode_observation_frame,
    parse_frame,
    parse_packed_frame,
)
from openenv_gym.wire.compressed import (
    BINARY_ZSTD_SUBPROTOCOL,
    COMPRESS_KEY,
    MEASURED_SUBPROTOCOL,
    pack_frame,
)
from openenv_gym.wire.messages import (
    ENVELOPE_KEYS,
    MessageType,
    ObservationReply,
    StateReply,
    encode_json,
    parse_server_message,
)

#: Reads one server reply frame: ``(raw, url=...) -> reply`` (raises the typed errors of
#: :func:`~openenv_gym.wire.messages.parse_server_message`).
ReplyReader = Callable[..., ObservationReply | StateReply]
#: Writes an ``observation`` reply as one binary frame, or ``None`` to send it as JSON.
ObservationWriter = Callable[[dict[str, Any]], bytes | None]

_OBSERVATION: Final = MessageType.OBSERVATION.value


@dataclass(frozen=True, eq=False)
class Encoding:
    """One way a connection speaks (see the module docstring).

    Attributes:
        name: The registry key.
        subprotocol: The WebSocket subprotocol that agrees it; ``None`` for plain JSON and
            for an encoding agreed inside another one's handshake (shared memory).
        summary: What it does, in one line (shown in errors and docs).
        builds_on: The encoding it extends, and so implies (``None``: plain JSON).
        read_reply: How a client reads a reply frame (inherited from ``builds_on``).
        write_observation: How a server writes an ``observation`` reply as a binary frame
            (inherited from ``builds_on``; ``None``: always JSON).
        multiplexed: Whether a connection carries K sessions (inherited).
        same_host: Whether it works only when client and server share a machine (inherited).
        compressed: Whether its observation frames may come packed (:mod:`.compressed`):
            offered only where ``compression=`` says so; :meth:`encode_reply` packs them.
        measured: Whether the client asks, request by request, for packed frames (a
            top-level ``"compress"`` its client messages may carry: :attr:`message_keys`).
    """

    name: str
    subprotocol: str | None
    summary: str
    builds_on: Encoding | None = None
    read_reply: ReplyReader | None = None
    write_observation: ObservationWriter | None = None
    multiplexed: bool = False
    same_host: bool = False
    compressed: bool = False
    measured: bool = False

    def __post_init__(self) -> None:
        base = self.builds_on
        if base is None:
            if self.read_reply is None:
                raise ValueError(f"encoding {self.name!r} builds on nothing: give read_reply")
            return
        if self.read_reply is None:
            object.__setattr__(self, "read_reply", base.read_reply)
        if self.write_observation is None:
            object.__setattr__(self, "write_observation", base.write_observation)
        object.__setattr__(self, "multiplexed", self.multiplexed or base.multiplexed)
        object.__setattr__(self, "same_host", self.same_host or base.same_host)

    def lineage(self) -> Iterator[Encoding]:
        """This encoding, then what it builds on, down to plain JSON's level."""
        encoding: Encoding | None = self
        while encoding is not None:
            yield encoding
            encoding = encoding.builds_on

    def implies(self, other: Encoding) -> bool:
        """Whether a connection speaking this encoding also speaks ``other``."""
        return any(encoding is other for encoding in self.lineage())

    @property
    def message_keys(self) -> frozenset[str]:
        """The top-level keys a client message may carry on a connection of this encoding."""
        return _MEASURED_KEYS if self.measured else ENVELOPE_KEYS

    @property
    def binary_frames(self) -> bool:
        """Whether observation replies may come as binary frames."""
        return self.write_observation is not None

    @property
    def batch(self) -> bool:
        """Whether a connection carries K sessions (:attr:`multiplexed`)."""
        return self.multiplexed

    def parse_reply(
        self, raw: str | bytes, *, url: str | None = None
    ) -> ObservationReply | StateReply:
        """Parse one server reply frame of a connection that agreed this encoding.

        Raises:
            ServerReplyError: The server sent an ``error`` message.
            ProtocolError: The frame is not a valid reply in this encoding.
        """
        read = self.read_reply
        assert read is not None  # set or inherited in __post_init__
        return read(raw, url=url)

    def encode_reply(self, message: dict[str, Any], *, pack: bool = True) -> tuple[bytes, bool]:
        """A server reply as one frame: the bytes and whether it is a text frame.

        ``observation`` replies go out binary when this encoding writes them so (and the
        observation is worth it), packed when it is :attr:`compressed`, ``pack`` holds (the
        client did not ask for raw) and it pays; everything else is JSON text
        (:func:`encode_json`).

        Raises:
            TypeError, ValueError: The message holds a value that cannot be encoded.
        """
        write = self.write_observation
        if write is not None and message["type"] == _OBSERVATION:
            frame = write(message)
            if frame is not None:
                return (pack_frame(frame) if pack and self.compressed else frame), False
        return encode_json(message), True

    def __repr__(self) -> str:
        return f"Encoding({self.name!r}, subprotocol={self.subprotocol!r})"


# --------------------------------------------------------------------------- the registry

JSON: Final = Encoding(
    "json",
    None,
    "plain OpenEnv JSON text frames (what official servers and clients speak)",
    read_reply=parse_server_message,
)
BINARY: Final = Encoding(
    "binary",
    BINARY_SUBPROTOCOL,
    "observation arrays as raw bytes in binary frames",
    builds_on=JSON,
    read_reply=parse_frame,
    write_observation=encode_observation_frame,
)


_MEASURED_KEYS: Final = ENVELOPE_KEYS | {COMPRESS_KEY}
BINARY_ZSTD: Final = Encoding(
    "binary_zstd",
    BINARY_ZSTD_SUBPROTOCOL,
    "one session's binary observation frames packed with zstd where it pays",
    builds_on=BINARY,
    read_reply=parse_packed_frame,
    compressed=True,
)
BINARY_ZSTD_MEASURED: Final = Encoding(
    "binary_zstd_measured",
    MEASURED_SUBPROTOCOL,
    "one session's binary observation frames packed with zstd where the client asks "
    "(it measures, request by request, whether packed or raw frames cost less)",
    builds_on=BINARY,
    read_reply=parse_packed_frame,
    compressed=True,
    measured=True,
)
BATCH: Final = Encoding(
    "batch",
    BATCH_SUBPROTOCOL,
    "K sessions on one connection, one frame per step (binary frames)",
    builds_on=BINARY,
    multiplexed=True,
)
SHARED_MEMORY: Final = Encoding(
    "shared_memory",
    None,
    "big stacked observation arrays through a shared-memory file (same host only; agreed "
    "in batch_open by a probe file)",
    builds_on=BATCH,
    same_host=True,
)

COMPRESSED: Final = Encoding(
    "zstd",
    None,
    "batch result frames packed with zstd level 1 where it pays (a peer not on loopback, "
    "no shared memory; agreed in batch_open, compression= switches it)",
    builds_on=BATCH,
)

#: Every encoding, by name.
REGISTRY: Final[Mapping[str, Encoding]] = MappingProxyType(
    {
        encoding.name: encoding
        for encoding in (
            JSON,
            BINARY,
            BINARY_ZSTD,
            BINARY_ZSTD_MEASURED,
            BATCH,
            SHARED_MEMORY,
            COMPRESSED,
        )
    }
)
#: The encodings agreed by a subprotocol, the server's preference first.
NEGOTIATED: Final = tuple(
    e for e in (BATCH, BINARY_ZSTD_MEASURED, BINARY_ZSTD, BINARY) if e.subprotocol is not None
)
_BY_SUBPROTOCOL: Final[Mapping[str, Encoding]] = MappingProxyType(
    {e.subprotocol: e for e in NEGOTIATED if e.subprotocol is not None}
)


def encoding_of(subprotocol: str | None) -> Encoding:
    """The encoding a connection agreed, from its WebSocket subprotocol (none: JSON)."""
    if subprotocol is None:
        return JSON
    return _BY_SUBPROTOCOL.get(subprotocol, JSON)


class EncodedLink:
    """The frames of a client connection, read from the :class:`Encoding` its server agreed
    (set as ``encoding`` when the connection opens)."""

    encoding: Encoding

    @property
    def binary(self) -> bool:
        """Whether observation replies may come as binary frames."""
        return self.encoding.binary_frames

    @property
    def batch(self) -> bool:
        """Whether this connection carries K sessions (``openenv-gym.batch.v1``)."""
        return self.encoding.multiplexed


def accept_subprotocol(offered: Sequence[str]) -> str | None:
    """The subprotocol a server accepts from a client's offer: the best registered one,
    or ``None`` (plain JSON; never a failure: official clients offer none)."""
    for encoding in NEGOTIATED:
        if encoding.subprotocol in offered:
            return encoding.subprotocol
    return None


# --------------------------------------------------------------------------- encoding=


@dataclass(frozen=True)
class EncodingChoice:
    """What a user's ``encoding=`` value asks for.

    Attributes:
        name: ``"auto"``, ``"json"`` or ``"binary"``.
        offers: The encodings a client offers, best first (multiplexed ones only on the
            connections that ask for several sessions).
        required: The encoding the server must agree to (``None``: any, JSON included).
    """

    name: str
    offers: tuple[Encoding, ...]
    required: Encoding | None = None

    @property
    def batches(self) -> bool:
        """Whether connections may carry K sessions under this choice."""
        return any(encoding.multiplexed for encoding in self.offers)

    def subprotocols(
        self,
        *,
        batch: bool = False,
        compressed: bool = False,
        measured: bool = False,
        extra: Sequence[str] = (),
    ) -> list[str]:
        """The WebSocket subprotocols a client offers, best first, then ``extra``.

        ``batch``: the connection may carry several sessions (offer multiplexed encodings).
        ``compressed``: offer the encoding whose frames come packed where it pays (by
        :func:`~openenv_gym.wire.compressed.compression_offer`); ``measured``: the one
        whose client asks for packed frames by measurement (by
        :func:`~openenv_gym.wire.compressed.measured_offer`).
        """
        offered = [
            encoding.subprotocol
            for encoding in self.offers
            if encoding.subprotocol is not None
            and (batch or not encoding.multiplexed)
            and (not encoding.compressed or (measured if encoding.measured else compressed))
        ]
        return [*offered, *(p for p in extra if p not in offered)]

    def check_agreed(self, agreed: Encoding, url: str) -> None:
        """Check what the server agreed to against :attr:`required`.

        Raises:
            BinaryEncodingRefusedError: The server did not agree to the required encoding.
        """
        required = self.required
        if required is not None and not agreed.implies(required):
            raise BinaryEncodingRefusedError(
                f"the server at {url} did not accept the {required.name} encoding ("
                f"{required.summary}; WebSocket subprotocol {required.subprotocol!r}); it is "
                "probably an official OpenEnv server. Use encoding='auto' (binary when "
                "available, JSON otherwise) or encoding='json'.",
                url=url,
            )


_CHOICES: Final[Mapping[str, EncodingChoice]] = MappingProxyType(
    {
        "auto": EncodingChoice("auto", NEGOTIATED),
        "json": EncodingChoice("json", ()),
        "binary": EncodingChoice("binary", NEGOTIATED, required=BINARY),
    }
)
#: The values of ``encoding=``.
ENCODINGS: Final = tuple(_CHOICES)
DEFAULT_ENCODING: Final = "auto"


def resolve_encoding(encoding: str) -> EncodingChoice:
    """What ``encoding=`` asks for.

    Raises:
        UnknownEncodingError: ``encoding`` is not one of :data:`ENCODINGS`.
    """
    choice = _CHOICES.get(encoding) if isinstance(encoding, str) else None
    if choice is None:
        raise UnknownEncodingError(
            f"expected encoding='auto', 'json' or 'binary', got {encoding!r}. 'auto' uses "
            "raw-byte observations when the server supports them and JSON otherwise."
        )
    return choice


def check_encoding(encoding: str) -> str:
    """Return ``encoding`` if it is one of :data:`ENCODINGS`.

    Raises:
        UnknownEncodingError: It is not.
    """
    resolve_encoding(encoding)
    return encoding


__all__ = [
    "BATCH",
    "BINARY",
    "BINARY_ZSTD",
    "BINARY_ZSTD_MEASURED",
    "COMPRESSED",
    "DEFAULT_ENCODING",
    "ENCODINGS",
    "JSON",
    "NEGOTIATED",
    "REGISTRY",
    "SHARED_MEMORY",
    "EncodedLink",
    "Encoding",
    "EncodingChoice",
    "accept_subprotocol",
    "check_encoding",
    "encoding_of",
    "resolve_encoding",
]
