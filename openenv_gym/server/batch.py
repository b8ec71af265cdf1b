"""Batch connections: K sessions on one WebSocket, one frame per step each way.

A client that offered (and was granted) the subprotocol ``openenv-gym.batch.v1`` opens K
sessions with its first frame and then steps all K with one ``batch_step`` frame; the
reply carries the K results with numeric observation arrays stacked (the frame format is
documented in :mod:`openenv_gym.wire.batch`). Each of the K sessions is an ordinary session
of the :class:`~openenv_gym.server.session.SessionManager`: it takes one slot of
``--max-sessions``, has its own environment, and every op is answered exactly like the
same message on a plain connection (:meth:`SessionManager.answer`). Autoreset in
Gymnasium's SAME_STEP mode happens here, in the same round trip.

A client that offers ``"repeat"`` (and ``"compact"``) in ``batch_open`` gets repeated
columns left out (:mod:`openenv_gym.wire.repeated_columns`) and steady results as compact
frames (:mod:`openenv_gym.wire.compact_results`; not with compressed frames).

A client may ask for compressed result frames in ``batch_open``; they are agreed unless the
connection agreed to shared memory, and then each result frame is packed while it pays,
unless its ``batch_step`` says ``"compress": false`` (the client measured raw frames to be
cheaper: :mod:`openenv_gym.wire.compression_policy`). Compression goes one way: a packed
client frame is never decompressed, agreed or not; it gets an ``INVALID_JSON`` error reply
at once and the connection lives on.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Final

from openenv_gym.server.connection import ServerConnection
from openenv_gym.server.session import EnvSession, SessionManager
from openenv_gym.wire.batch import (
    BATCH_OPEN,
    BATCH_OPENED,
    BATCH_STATE,
    BATCH_STATES,
    BATCH_STEP,
    parse_batch_message,
    parse_batch_open,
    parse_batch_step,
)
from openenv_gym.wire.batch_results import encode_batch_result
from openenv_gym.wire.client_frames import ClientMessageError
from openenv_gym.wire.compact_results import COMPACT, CompactWriter
from openenv_gym.wire.compressed import (
    ZSTD,
    FrameCompressor,
    compression_accepted,
    is_compressed_frame,
    refuse_unagreed,
)
from openenv_gym.wire.messages import (
    ErrorCode,
    MessageType,
    encode_json,
    error_message,
)
from openenv_gym.wire.repeated_columns import REPEAT, RepeatedColumns
from openenv_gym.wire.shared_memory import SharedArrayWriter, probe_matches

logger = logging.getLogger("openenv_gym.server")
# Plain strings for the hot path (an enum member's attribute access costs a descriptor call).
_STEP: Final = MessageType.STEP.value
_RESET: Final = MessageType.RESET.value
_OBSERVATION: Final = MessageType.OBSERVATION.value
_CLOSE: Final = MessageType.CLOSE.value


def _parse(manager: SessionManager, raw: bytes) -> tuple[str, dict[str, Any]]:
    manager.check_size(raw)
    if is_compressed_frame(raw):
        # Compression goes server -> client only: never spend a byte of work on a packed
        # client frame (a few KiB could ask for gigabytes of decompression per second).
        raise ClientMessageError(ErrorCode.INVALID_JSON, f"Invalid message: {refuse_unagreed(raw)}")
    message = parse_batch_message(raw)
    return message.type, message.data


class BatchHandler:
    """Serves one batch connection from its ``batch_open`` to its close."""

    def __init__(self, manager: SessionManager, connection: ServerConnection) -> None:
        self.manager = manager
        self.connection = connection
        self.sessions: list[EnvSession] | None = None
        self.truncated_key: str | None = None
        self.shared: SharedArrayWriter | None = None
        #: Packs result frames, when the client asked and no shared memory was agreed.
        self.compressor: FrameCompressor | None = None
        #: Sends columns once while they repeat, when the client offered it.
        self.repeated: RepeatedColumns | None = None
        #: Sends steady results as compact frames, when the client offered it.
        self.compact: CompactWriter | None = None
        self._taken = 0

    def on_message(self, message: bytes) -> None:
        """``batch_open`` first, then ``batch_step``, ``batch_state`` or ``close``."""
        if self.sessions is None:
            self._open(message)
            return
        sessions = self.sessions
        now = time.monotonic()
        for session in sessions:
            session.last_activity = now
        manager = self.manager
        try:
            kind, data = _parse(manager, message)
            if kind == _CLOSE:
                self.connection.close()
                return
            if kind == BATCH_STEP:
                ops, same_step_reset = parse_batch_step(data, len(sessions))
                frame, text = _step(
                    manager,
                    sessions,
                    ops,
                    same_step_reset,
                    self.truncated_key,
                    self.shared,
                    self.repeated,
                    self.compact,
                )
                if not text and self.compressor is not None and data.get("compress") is not False:
                    frame = self.compressor.pack(frame)
            elif kind == BATCH_STATE:
                states = [manager.answer(s, MessageType.STATE, {}) for s in sessions]
                frame, text = _states(states), True
            else:
                raise ClientMessageError.invalid(f"{BATCH_OPEN!r} was already received")
        except ClientMessageError as exc:
            frame, text = encode_json(exc.reply()), True
        self.connection.send(frame, text=text)

    def _open(self, message: bytes) -> None:
        manager, connection = self.manager, self.connection
        try:
            kind, data = _parse(manager, message)
            if kind != BATCH_OPEN:
                raise ClientMessageError.invalid(
                    f"the first frame of a batch connection must be {BATCH_OPEN!r}"
                )
            count, self.truncated_key = parse_batch_open(data, manager.budget.limit)
        except ClientMessageError as exc:
            manager.send_and_close(connection, exc.reply())
            return
        budget = manager.budget
        while self._taken < count and budget.try_acquire():
            self._taken += 1
        if self._taken < count:
            active = budget.active - self._taken
            self._release()
            manager.send_and_close(
                connection,
                error_message(
                    ErrorCode.CAPACITY_REACHED,
                    f"Server at capacity: {count} sessions asked, {budget.limit - active} of "
                    f"{budget.limit} free. Cannot accept new connections.",
                    active_sessions=active,
                    max_sessions=budget.limit,
                ),
            )
            return
        sessions = manager.open_sessions(connection, count)
        if sessions is None:
            self._release()
            return
        self.sessions = sessions
        if probe_matches(data.get("shared_memory")):
            try:
                self.shared = SharedArrayWriter()
            except OSError:
                self.shared = None
        if compression_accepted(data.get("compression"), shared_memory=self.shared is not None):
            self.compressor = FrameCompressor()
        if data.get(REPEAT) is True:
            self.repeated = RepeatedColumns()
            # Compact frames stand on repeated columns; packed frames are not read as them.
            if data.get(COMPACT) is True and self.compressor is None:
                self.compact = CompactWriter()
        opened = {
            "sessions": len(sessions),
            "shared_memory": self.shared is not None,
            "compression": ZSTD if self.compressor is not None else None,
            REPEAT: self.repeated is not None,
            COMPACT: self.compact is not None,
        }
        connection.send(encode_json({"type": BATCH_OPENED, "data": opened}), text=True)

    def _release(self) -> None:
        for _ in range(self._taken):
            self.manager.budget.release()
        self._taken = 0

    def on_close(self) -> None:
        """Close the K sessions and free their slots."""
        if self.sessions is not None:
            self.manager.close_sessions(self.sessions)
            self.sessions = None
        if self.shared is not None:
            self.shared.close()
            self.shared = None
        self._release()


def _states(replies: list[dict[str, Any]]) -> bytes:
    for k, reply in enumerate(replies):
        if reply["type"] == MessageType.ERROR:
            return encode_json({**reply, "data": {**reply["data"], "index": k}})
    return encode_json({"type": BATCH_STATES, "data": {"states": [r["data"] for r in replies]}})


def _step(
    manager: SessionManager,
    sessions: list[EnvSession],
    ops: list[dict[str, Any] | None],
    same_step_reset: dict[str, Any] | None,
    truncated_key: str | None,
    shared: SharedArrayWriter | None = None,
    repeated: RepeatedColumns | None = None,
    compact: CompactWriter | None = None,
) -> tuple[bytes, bool]:
    """Carry out every op; the encoded reply and whether it is a text frame."""
    started = time.perf_counter()
    answer = manager.answer
    indices: list[int] = []
    replies: list[dict[str, Any]] = []
    finals: dict[int, dict[str, Any]] = {}
    failed: tuple[int, dict[str, Any]] | None = None
    resetting = False  # a reset (a new episode: a ROM load, a first frame) is not a step
    for k, op in enumerate(ops):
        if op is None:
            continue
        session = sessions[k]
        action = op.get("step")
        if action is not None:
            reply = answer(session, _STEP, action)
            if same_step_reset is not None and reply["type"] == _OBSERVATION:
                data = reply["data"]
                if (
                    data["done"]
                    or op.get("last")
                    or (truncated_key is not None and data["observation"].get(truncated_key))
                ):
                    finals[len(indices)] = reply
                    reply = answer(session, _RESET, dict(same_step_reset))
                    resetting = True
        else:
            reply = answer(session, _RESET, op["reset"])
            resetting = True
        if reply["type"] != _OBSERVATION:
            if failed is None:
                failed = (k, reply)
            continue
        indices.append(k)
        replies.append(reply)
    if not resetting:
        manager.step_cost.record(time.perf_counter() - started, len(indices))
    if failed is not None:
        k, reply = failed
        return encode_json({**reply, "data": {**reply["data"], "index": k}}), True
    try:
        return encode_batch_result(indices, replies, finals, shared, repeated, compact), False
    except Exception as exc:
        logger.warning("cannot encode a batch result", exc_info=True)
        error = error_message(ErrorCode.EXECUTION_ERROR, f"{type(exc).__name__}: {exc}")
        return encode_json(error), True


__all__ = ["BatchHandler"]
