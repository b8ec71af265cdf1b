"""The ``openenv-gym.batch.v1`` frames: K sessions on one connection, one frame per step.

Plain OpenEnv carries one session per WebSocket connection, so a vector env of N sub-envs
pays N round trips per step. Between our client and our server, a connection that agreed on
the subprotocol :data:`BATCH_SUBPROTOCOL` carries K sessions instead, and one frame each way
steps all K. Official servers ignore the offer (no subprotocol is agreed and the client opens
one plain session per connection); official clients never offer it.

Client -> server (JSON text frames):

* ``{"type":"batch_open","data":{"sessions":K,"truncated_key":"truncated"|null,
  "shared_memory":{"probe":name,"token":hex},"compression":"zstd"}}`` (first frame;
  ``shared_memory`` and ``compression`` optional): the server takes K session slots (K
  count against ``--max-sessions``), builds K environments and answers
  ``{"type":"batch_opened","data":{"sessions":K,"shared_memory":true|false,
  "compression":"zstd"|null}}``, or an ``error`` (``CAPACITY_REACHED``, ``FACTORY_ERROR``)
  and closes. With ``shared_memory`` agreed, big stacked observation arrays travel in
  memory-mapped files (:mod:`openenv_gym.wire.shared_memory`); with ``compression``
  agreed (never together), result frames may come packed
  (:mod:`openenv_gym.wire.compressed`).
* ``{"type":"batch_step","data":{"ops":[op_0, ..., op_K-1],"same_step_reset":R}}``: one op per
  session, in session order: ``{"step": <action fields>}``, ``{"reset": <reset keys>}`` or
  ``null`` (leave that session alone). With ``same_step_reset`` (reset keys, or ``null``), a
  step that ends its episode (``done``, the ``truncated_key`` field true, or ``"last": true``
  in the op: a client-side time limit) is followed by a reset in the same round trip
  (Gymnasium's SAME_STEP autoreset); its last observation goes into ``final``.
* ``{"type":"batch_state"}`` -> ``{"type":"batch_states","data":{"states":[...K...]}}``.
* ``{"type":"close"}``: the K sessions end.

Server -> client: the reply to ``batch_step`` is a ``batch_result`` message (in the
:mod:`openenv_gym.wire.binary` frame layout: numeric arrays as raw bytes)::

    {"type": "batch_result", "data": {
        "indices": [i, ...],                    # the sessions that had an op, in order
        "observation": {field: value, ...},     # numpy-array fields stacked on a new axis 0,
                                                # any other field a list (one per index)
        "reward": [float | null, ...], "done": [bool, ...],
        "metadata": {"k": {...}},               # position k -> non-empty metadata only
        "final": {"k": <observation reply data>}}}  # SAME_STEP: the episode's last reply

With ``"repeat": true`` agreed, columns that repeat the last result come as ``null``
(:mod:`openenv_gym.wire.repeated_columns`); with ``"compact": true`` too, a result that is
as the last full one announced but for its numbers comes as a compact frame
(:mod:`openenv_gym.wire.compact_results`).

An op that fails (an invalid action, an environment that raises) makes the reply an
``error`` with the official code and ``"index"`` naming the session; the other ops were
carried out.

Example:
    >>> import numpy as np
    >>> from openenv_gym.wire.batch_results import encode_batch_result
    >>> from openenv_gym.wire.messages import observation_message
    >>> replies = [observation_message({"x": np.zeros(2, np.float32)}, 1.0, False)] * 3
    >>> result = parse_batch_result(encode_batch_result([0, 1, 2], replies, {}))
    >>> result.fields["x"].shape, result.reward, result.done
    ((3, 2), [1.0, 1.0, 1.0], [False, False, False])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import pydantic_core

from openenv_gym.errors import ProtocolError
from openenv_gym.wire.binary import load_frame
from openenv_gym.wire.client_frames import ClientMessage, ClientMessageError, parse_client_message
from openenv_gym.wire.compact_results import COMPACT
from openenv_gym.wire.compressed import ZSTD
from openenv_gym.wire.messages import (
    CLIENT_INBOUND_LIMIT,
    MessageType,
    ObservationReply,
    error_from_data,
    parse_server_object,
)
from openenv_gym.wire.repeated_columns import REPEAT, offer_accepted
from openenv_gym.wire.shared_memory import (
    SharedArrayReader,
)

#: The WebSocket subprotocol for K sessions on one connection (implies binary frames).
BATCH_SUBPROTOCOL: Final = "openenv-gym.batch.v1"
BATCH_OPEN: Final = "batch_open"
BATCH_OPENED: Final = "batch_opened"
BATCH_STEP: Final = "batch_step"
BATCH_RESULT: Final = "batch_result"
BATCH_STATE: Final = "batch_state"
BATCH_STATES: Final = "batch_states"
_ARRAY_KINDS: Final = frozenset("biuf")
_METADATA: Final = "metadata"
_BOOL_ONLY: Final = frozenset({bool})
_INT_ONLY: Final = frozenset({int})
_FLOAT_ONLY: Final = frozenset({float, type(None)})

__all__ = [
    "BATCH_SUBPROTOCOL",
    "BATCH_TYPES",
    "BatchResult",
    "batch_agreements",
    "batch_open_message",
    "batch_result_of",
    "batch_state_message",
    "batch_step_message",
    "check_batch_opened",
    "compact_agreed",
    "parse_batch_message",
    "parse_batch_open",
    "parse_batch_result",
    "parse_batch_states",
    "parse_batch_step",
    "repeat_agreed",
]


# --------------------------------------------------------------------------- client side


def batch_open_message(
    sessions: int,
    truncated_key: str | None,
    shared_memory: Mapping[str, str] | None = None,
    compression: str | None = None,
    *,
    repeat: bool = False,
    compact: bool = False,
) -> dict[str, Any]:
    """The first frame of a batch connection: open ``sessions`` sessions (offering shared
    memory with a :meth:`~openenv_gym.wire.shared_memory.ProbeFile.offer`, compressed
    frames with :func:`~openenv_gym.wire.compressed.compression_offer`'s value, columns
    sent once while they repeat with ``repeat``: :mod:`openenv_gym.wire.repeated_columns`,
    and with it compact frames with ``compact``: :mod:`openenv_gym.wire.compact_results`)."""
    data: dict[str, Any] = {"sessions": sessions, "truncated_key": truncated_key}
    if shared_memory is not None:
        data["shared_memory"] = dict(shared_memory)
    if compression is not None:
        data["compression"] = compression
    if repeat:
        data[REPEAT] = True
        if compact:
            data[COMPACT] = True
    return {"type": BATCH_OPEN, "data": data}


def batch_step_message(
    ops: Sequence[Mapping[str, Any] | None],
    same_step_reset: Mapping[str, Any] | None = None,
    compress: bool | None = None,
) -> dict[str, Any]:
    """One op per session (``{"step": action}``, ``{"reset": keys}`` or ``None``).

    ``compress``: on a connection that agreed to compression, whether the server packs this
    step's result frame (:class:`~openenv_gym.wire.compression_policy.CompressionPolicy`
    decides); ``None`` leaves it to the server (it packs what pays)."""
    data: dict[str, Any] = {"ops": list(ops)}
    if same_step_reset is not None:
        data["same_step_reset"] = dict(same_step_reset)
    if compress is not None:
        data["compress"] = compress
    return {"type": BATCH_STEP, "data": data}


def batch_state_message() -> dict[str, Any]:
    """Ask the state of every session of the connection."""
    return {"type": BATCH_STATE}


@dataclass(frozen=True, slots=True)
class BatchResult:
    """A parsed ``batch_result``.

    Attributes:
        indices: The connection's sessions that had an op, in order.
        fields: Observation fields: stacked arrays (axis 0 follows ``indices``) or lists.
        reward: One reward per index (``None`` when the server sent none).
        done: One ``done`` per index.
        metadata: Position -> non-empty metadata.
        final: Position -> the last reply of an episode reset in the same round trip.
    """

    indices: list[int]
    fields: dict[str, Any]
    reward: list[float | None]
    done: list[bool]
    metadata: dict[int, dict[str, Any]] = field(default_factory=dict)
    final: dict[int, ObservationReply] = field(default_factory=dict)

    #: Whether the observations have a ``metadata`` field (sent apart, non-empty only).
    metadata_field: bool = False

    @classmethod
    def of_reply(cls, reply: ObservationReply) -> BatchResult:
        """A one-row result holding a plain reply."""
        return cls(
            [0],
            {key: [value] for key, value in reply.observation.items()},
            [reply.reward],
            [reply.done],
            {0: reply.metadata} if reply.metadata else {},
        )

    def observation(self, position: int) -> dict[str, Any]:
        """The observation object of one position, as a plain reply would carry it."""
        row = {key: value[position] for key, value in self.fields.items()}
        if self.metadata_field:
            row[_METADATA] = self.metadata.get(position, {})
        return row

    def reply(self, position: int) -> ObservationReply:
        """The plain :class:`ObservationReply` of one position."""
        return ObservationReply(
            observation=self.observation(position),
            reward=self.reward[position],
            done=self.done[position],
            metadata=self.metadata.get(position, {}),
        )


def _bad(why: str, raw: Any) -> ProtocolError:
    return ProtocolError(f"expected a {BATCH_RESULT} reply, but {why}", received=repr(raw)[:300])


def parse_batch_result(
    raw: str | bytes,
    *,
    url: str | None = None,
    shared: SharedArrayReader | None = None,
    limit: int = CLIENT_INBOUND_LIMIT,
    sessions: int | None = None,
    copy: bool = True,
    compressed: bool = False,
) -> BatchResult:
    """Parse the reply to a ``batch_step`` (arrays in shared memory read through ``shared``;
    with ``compressed`` (the connection agreed to it), a compressed frame unpacked to at
    most ``limit`` bytes, the connection's message limit; without, refused unread);
    with ``sessions``, every index must name one of the connection's ``sessions``, once.
    ``copy=False``: the arrays of a binary frame are read-only views of it (the caller
    copies what it keeps).

    Raises:
        CompressedFrameError: A compressed frame is corrupt, would unpack past ``limit``, or
            came though compression was not agreed.
        ServerReplyError: The server answered with an ``error`` (``data["index"]`` names the
            session whose op failed).
        ProtocolError: The frame is not a valid ``batch_result``.
    """
    message = load_frame(raw, shared, limit=limit, copy=copy, compressed=compressed)
    return batch_result_of(message, url=url, sessions=sessions)


def batch_result_of(
    message: Any, *, url: str | None = None, sessions: int | None = None
) -> BatchResult:
    """The :class:`BatchResult` of a loaded reply message (:func:`parse_batch_result`
    without reading the frame), with its checks.

    Raises:
        ServerReplyError: The server answered with an ``error``.
        ProtocolError: The message is not a valid ``batch_result``.
    """
    if not isinstance(message, dict):
        raise _bad("it is not an object", message)
    if message.get("type") == MessageType.ERROR:
        data = message.get("data")
        raise error_from_data(data if isinstance(data, dict) else {}, url=url)
    data = message.get("data")
    if message.get("type") != BATCH_RESULT or not isinstance(data, dict):
        raise _bad(f"its type is {message.get('type')!r}", message)
    try:
        indices = data["indices"]
        if type(indices) is not list or not _INT_ONLY.issuperset(map(type, indices)):
            indices = [int(i) for i in indices]  # the usual list of ints is taken as it is
        if (
            sessions is not None
            and indices
            and (min(indices) < 0 or max(indices) >= sessions or len(set(indices)) != len(indices))
        ):
            raise ValueError(
                f"indices {indices[:20]} are not distinct sessions of 0..{sessions - 1}"
            )
        fields = data["observation"]
        reward = data["reward"]
        done = data["done"]
        count = len(indices)
        if not isinstance(fields, dict) or len(reward) != count or len(done) != count:
            raise ValueError("the lengths of indices, reward and done differ")
        if not {count}.issuperset(map(len, fields.values())):  # one C loop for the usual case
            key, value = next((k, v) for k, v in fields.items() if len(v) != count)
            raise ValueError(f"field {key!r} has {len(value)} entries for {count} indices")
        if not isinstance(done, list) or not _BOOL_ONLY.issuperset(map(type, done)):
            raise ValueError("'done' holds a non-boolean")
        if isinstance(reward, list) and _FLOAT_ONLY.issuperset(map(type, reward)):
            rewards = reward  # the usual case, no per-item conversion
        else:
            rewards = [None if r is None else float(r) for r in reward]
        sent_metadata = data.get(_METADATA)
        metadata = {int(k): v for k, v in (sent_metadata or {}).items()}
        final: dict[int, ObservationReply] = {}
        for k, reply in (data.get("final") or {}).items():
            parsed = parse_server_object({"type": MessageType.OBSERVATION, "data": reply}, url=url)
            assert isinstance(parsed, ObservationReply)  # an observation message by construction
            final[int(k)] = parsed
    except (KeyError, TypeError, ValueError, OverflowError) as exc:  # a reward past a float
        raise _bad(f"it is malformed ({exc})", data) from exc
    return BatchResult(indices, fields, rewards, done, metadata, final, sent_metadata is not None)


def _reply_data(raw: str | bytes, kind: str, *, url: str | None) -> dict[str, Any] | None:
    """The ``data`` of a ``kind`` reply (``None`` when it is something else).

    Raises:
        ServerReplyError: The server answered with an ``error``.
    """
    message = load_frame(raw)
    if not isinstance(message, dict):
        return None
    data = message.get("data")
    if message.get("type") == MessageType.ERROR:
        raise error_from_data(data if isinstance(data, dict) else {}, url=url)
    return data if message.get("type") == kind and isinstance(data, dict) else None


def check_batch_opened(raw: str | bytes, sessions: int, *, url: str | None = None) -> bool:
    """Check the reply to ``batch_open``; whether the server agreed to shared memory.

    Raises:
        CapacityReachedError: The server has not that many free session slots.
        ServerReplyError: Another ``error`` (e.g. ``FACTORY_ERROR``).
        ProtocolError: Not a ``batch_opened`` for ``sessions`` sessions.
    """
    return batch_agreements(raw, sessions, url=url)[0]


def batch_agreements(
    raw: str | bytes, sessions: int, *, url: str | None = None
) -> tuple[bool, bool]:
    """Check the reply to ``batch_open`` (the errors of :func:`check_batch_opened`); whether
    the server agreed to shared memory, and whether to compressed frames (``"zstd"``).

    Example:
        >>> opened = {"sessions": 2, "compression": "zstd"}
        >>> import json
        >>> batch_agreements(json.dumps({"type": "batch_opened", "data": opened}), 2)
        (False, True)
    """
    data = _reply_data(raw, BATCH_OPENED, url=url)
    if data is None or data.get("sessions") != sessions:
        raise ProtocolError(
            f"expected {{'type': {BATCH_OPENED!r}, 'data': {{'sessions': {sessions}}}}}, got "
            f"{str(raw)[:200]}",
            received=str(raw)[:200],
        )
    return data.get("shared_memory") is True, data.get("compression") == ZSTD


def repeat_agreed(raw: str | bytes) -> bool:
    """Whether a ``batch_opened`` reply (checked by :func:`batch_agreements`) agrees to
    columns sent once while they repeat (:mod:`openenv_gym.wire.repeated_columns`)."""
    data = _reply_data(raw, BATCH_OPENED, url=None)
    return data is not None and offer_accepted(data)


def compact_agreed(raw: str | bytes) -> bool:
    """Whether a ``batch_opened`` reply (checked by :func:`batch_agreements`) agrees to
    compact frames (:mod:`openenv_gym.wire.compact_results`)."""
    data = _reply_data(raw, BATCH_OPENED, url=None)
    return data is not None and data.get(COMPACT) is True and offer_accepted(data)


def parse_batch_states(raw: str | bytes, *, url: str | None = None) -> list[dict[str, Any]]:
    """Parse the reply to ``batch_state``: one state object per session.

    Raises:
        ServerReplyError: The server answered with an ``error``.
        ProtocolError: The frame is not a ``batch_states`` message.
    """
    data = _reply_data(raw, BATCH_STATES, url=url)
    if data is None or not isinstance(data.get("states"), list):
        raise ProtocolError(
            f"expected a {BATCH_STATES} reply, got {str(raw)[:200]}", received=str(raw)[:200]
        )
    return list(data["states"])


# --------------------------------------------------------------------------- server side

#: The message types of a batch connection.
BATCH_TYPES: Final = frozenset({BATCH_OPEN, BATCH_STEP, BATCH_STATE, MessageType.CLOSE.value})
_EXPECTED: Final = (
    f" (on a batch connection: {BATCH_OPEN!r} first, then {BATCH_STEP!r}, {BATCH_STATE!r} or "
    "'close')"
)


def parse_batch_message(raw: str | bytes) -> ClientMessage:
    """Parse one client frame of a batch connection (the plain parser, batch types).

    Raises:
        ClientMessageError: With the official code to answer with (``INVALID_JSON``,
            ``UNKNOWN_TYPE`` or ``VALIDATION_ERROR``).
    """
    return parse_client_message(raw, BATCH_TYPES, expected=_EXPECTED, loads=pydantic_core.from_json)


def parse_batch_open(data: Mapping[str, Any], max_sessions: int) -> tuple[int, str | None]:
    """The session count and truncation field of a ``batch_open``.

    Raises:
        ClientMessageError: ``VALIDATION_ERROR`` for a count that is not 1..``max_sessions``.
    """
    count = data.get("sessions")
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= max_sessions:
        raise ClientMessageError.invalid(
            f"{BATCH_OPEN} needs 'sessions' in 1..{max_sessions}, got {count!r}"
        )
    key = data.get("truncated_key")
    if key is not None and not isinstance(key, str):
        raise ClientMessageError.invalid(f"'truncated_key' must be a string or null, got {key!r}")
    return count, key


def parse_batch_step(
    data: Mapping[str, Any], sessions: int
) -> tuple[list[dict[str, Any] | None], dict[str, Any] | None]:
    """The ops and the SAME_STEP reset keys of a ``batch_step``.

    Raises:
        ClientMessageError: ``VALIDATION_ERROR``: not one op per session, or a malformed op.
    """
    ops = data.get("ops")
    if not isinstance(ops, list) or len(ops) != sessions:
        got = len(ops) if isinstance(ops, list) else repr(ops)[:50]
        raise ClientMessageError.invalid(
            f"{BATCH_STEP} needs 'ops', one per session ({sessions}), got {got}"
        )
    for k, op in enumerate(ops):
        if op is None or (type(op) is dict and len(op) == 1 and type(op.get("step")) is dict):
            continue  # the common case, checked cheaply
        if not (
            isinstance(op, dict)
            and len(op.keys() & {"step", "reset"}) == 1
            and isinstance(op.get("step", op.get("reset")), dict)
        ):
            raise ClientMessageError.invalid(
                f"op {k} must be {{'step': {{...}}}}, {{'reset': {{...}}}} "
                f"or null, got {str(op)[:100]}"
            )
    reset = data.get("same_step_reset")
    if reset is not None and not isinstance(reset, dict):
        raise ClientMessageError.invalid(
            f"'same_step_reset' must be an object or null, got {reset!r}"
        )
    return ops, reset
