"""The connections of a vector env, two kinds behind one interface.

A :class:`PlainChannel` is one plain OpenEnv session on its own connection (an official
server, or ``encoding="json"``): one sub-env, the plain ``step``/``reset``/``state``
messages. A :class:`BatchChannel` carries K sessions on one connection
(``openenv-gym.batch.v1``): one ``batch_step`` frame for the ops of its K sub-envs, one
``batch_result`` back, and the observation arrays the server may put in shared memory
(read through its own :class:`~openenv_gym.wire.shared_memory.SharedArrayReader`, which
nothing outside this module sees). Both build their frame of a round trip, parse its
reply into a :class:`~openenv_gym.wire.batch.BatchResult`, ask for and read the sessions'
state, and close.

Example:
    >>> PlainChannel.batch, BatchChannel.batch
    (False, True)
"""

from __future__ import annotations

import contextlib
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

import numpy as np

from openenv_gym.client.blocking import BlockingConnection
from openenv_gym.errors import ProtocolError, ServerReplyError
from openenv_gym.vector.round_trip import (
    Op,
    batch_step_frame,
    frame_of_plain,
    name_sub_envs,
)
from openenv_gym.wire.batch import (
    BATCH_RESULT,
    BatchResult,
    batch_result_of,
    batch_state_message,
    parse_batch_states,
)
from openenv_gym.wire.binary import load_frame
from openenv_gym.wire.compact_reader import Announcement, CompactReader, as_lists
from openenv_gym.wire.compact_results import is_compact_frame
from openenv_gym.wire.compression_policy import BATCH_WARMUP_STEPS, CompressionPolicy
from openenv_gym.wire.messages import (
    ObservationReply,
    StateReply,
    close_message,
    encode_message,
    state_message,
)
from openenv_gym.wire.repeated_columns import RepeatedColumns
from openenv_gym.wire.shared_memory import SharedArrayReader

#: The OpenEnv ``close`` message, said to the server before a connection closes.
CLOSE_FRAME: Final = encode_message(close_message())
#: The ``state`` request of a plain session.
STATE_FRAME: Final = encode_message(state_message())
#: The ``batch_state`` request of a batch connection (every session's state).
BATCH_STATE_FRAME: Final = encode_message(batch_state_message())


class Channel(ABC):
    """One connection and the sub-envs on it (in the order of the server's sessions).

    Attributes:
        session: The connection.
        indices: The sub-envs it carries.
    """

    #: Whether the connection carries several sessions (``openenv-gym.batch.v1``).
    batch: ClassVar[bool]
    session: BlockingConnection
    indices: list[int]

    @abstractmethod
    def frame(
        self,
        ops: Sequence[Op | None],
        *,
        same_step_reset: Mapping[str, Any] | None = None,
        last: Sequence[bool] | None = None,
    ) -> str | bytes | None:
        """The frame that sends this connection's ops (``ops[i]`` for sub-env ``i``;
        ``None``: leave it alone), or ``None`` when none of its sub-envs has one.

        ``same_step_reset`` asks a batch connection to reset an episode that ends in the
        same round trip (``last[i]``: the step is the last of sub-env ``i``'s episode by a
        client-side time limit); a plain connection ignores both.
        """

    @abstractmethod
    def parse(self, raw: str | bytes, url: str) -> BatchResult:
        """The result of this connection's reply to :meth:`frame`; errors name the sub-env.

        Raises:
            ServerReplyError: The server answered an op with an error.
            ProtocolError: The reply is not a valid OpenEnv (or batch) message.
        """

    @abstractmethod
    def state_frame(self) -> str:
        """The request for the server-side state of this connection's sessions."""

    @abstractmethod
    def parse_states(self, raw: str | bytes, url: str) -> list[dict[str, Any]]:
        """The state of each sub-env (in :attr:`indices` order) from the reply to
        :meth:`state_frame`."""

    def skip(self, raw: str | bytes | BaseException) -> None:
        """A reply read and not taken (a round trip that failed, a drain): keep what the
        connection must know of it for the next one. Never raises."""
        return

    def close(self) -> None:
        """Say ``close`` to the server and close the connection. Idempotent, never raises."""
        self.session.close(CLOSE_FRAME)


class PlainChannel(Channel):
    """A connection of one plain OpenEnv session (sub-env ``index``)."""

    batch = False

    def __init__(self, session: BlockingConnection, index: int) -> None:
        self.session = session
        self.indices = [index]

    def frame(
        self,
        ops: Sequence[Op | None],
        *,
        same_step_reset: Mapping[str, Any] | None = None,
        last: Sequence[bool] | None = None,
    ) -> str | None:
        op = ops[self.indices[0]]
        return None if op is None else frame_of_plain(op)

    def parse(self, raw: str | bytes, url: str) -> BatchResult:
        try:
            reply = self.session.encoding.parse_reply(raw, url=url)
        except (ServerReplyError, ProtocolError) as exc:
            name_sub_envs(exc, self.indices, url)
            raise
        if not isinstance(reply, ObservationReply):
            raise ProtocolError(
                f"expected an 'observation' reply from sub-env {self.indices[0]} at {url}, "
                "got a 'state' reply",
                received=reply,
            )
        return BatchResult.of_reply(reply)

    def state_frame(self) -> str:
        return STATE_FRAME

    def parse_states(self, raw: str | bytes, url: str) -> list[dict[str, Any]]:
        reply = self.session.encoding.parse_reply(raw, url=url)
        return [reply.state if isinstance(reply, StateReply) else dict(reply.observation)]


class BatchChannel(Channel):
    """A connection of ``len(indices)`` sessions (``openenv-gym.batch.v1``).

    Args:
        session: The connection (its ``batch_open`` answered).
        indices: The sub-envs of its sessions, in the server's order.
        shared_memory: The server agreed to put observation arrays in shared memory.
        borrow: Read those arrays as views, valid until the next request on the connection
            (the caller copies every row out before then), instead of copies; the arrays of
            frames that come over the socket are then read-only views of the frame.
        compressed: The server agreed to compressed result frames (none are read without).
        measured: With ``compressed``, ask per step for packed or raw results as a
            :class:`~openenv_gym.wire.compression_policy.CompressionPolicy` measures
            (``compression="auto"``); without, the server packs what pays.
        repeated: The server agreed to send columns once while they repeat
            (:mod:`openenv_gym.wire.repeated_columns`): they are put back as each reply
            is read.
        compact: The server agreed to compact frames
            (:mod:`openenv_gym.wire.compact_results`): each is read as the full result it
            stands for.
    """

    batch = True

    def __init__(
        self,
        session: BlockingConnection,
        indices: list[int],
        *,
        shared_memory: bool = False,
        borrow: bool = False,
        compressed: bool = False,
        measured: bool = False,
        repeated: bool = False,
        compact: bool = False,
    ) -> None:
        self.session = session
        self.indices = indices
        #: The ``indices`` of a ``batch_result`` that answers every session, in order.
        self.every_session = list(range(len(indices)))
        #: Its positions as a ``batch_result``'s ``metadata`` names them.
        self.every_key = [str(k) for k in self.every_session]
        self._shared = SharedArrayReader(borrow=borrow) if shared_memory else None
        self._copy = not borrow
        self._compressed = compressed
        self._repeated = RepeatedColumns() if repeated else None
        self._compact = CompactReader() if compact and repeated else None
        #: Decides per step whether results come packed (``None``: not measured).
        self.policy = CompressionPolicy(BATCH_WARMUP_STEPS) if compressed and measured else None
        self._asked: bool | None = None
        self._sent = 0.0

    @property
    def repeats(self) -> bool:
        """Whether the server sends columns once while they repeat
        (:mod:`openenv_gym.wire.repeated_columns`)."""
        return self._repeated is not None

    @property
    def announcement(self) -> Announcement | None:
        """The announcement the next compact frames stand on
        (:mod:`openenv_gym.wire.compact_reader`; ``None``: none may come)."""
        return self._compact.announcement if self._compact is not None else None

    def shared_array(self, descriptor: Mapping[str, Any]) -> np.ndarray:
        """The array a shared-memory descriptor names (as the frames' arrays are read).

        Raises:
            ProtocolError: No shared memory was agreed, or the descriptor is bad.
        """
        if self._shared is None:
            raise ProtocolError("expected shared memory on this connection, none was agreed")
        return self._shared.array(descriptor)

    @property
    def shared_memory(self) -> bool:
        """Whether observation arrays come through shared memory on this connection."""
        return self._shared is not None

    def frame(
        self,
        ops: Sequence[Op | None],
        *,
        same_step_reset: Mapping[str, Any] | None = None,
        last: Sequence[bool] | None = None,
    ) -> bytes | None:
        policy = self.policy
        asked = self._asked = policy.choice() if policy is not None else None
        frame = batch_step_frame(
            self.indices, ops, same_step_reset=same_step_reset, last=last, compress=asked
        )
        self._sent = time.perf_counter()
        return frame

    def parse(self, raw: str | bytes, url: str) -> BatchResult:
        try:
            message = self.load(raw)
            if type(message) is dict and type(message.get("data")) is dict:
                as_lists(message["data"])  # a compact frame's numbers, as a full frame's
            return batch_result_of(message, url=url, sessions=len(self.indices))
        except (ServerReplyError, ProtocolError) as exc:
            name_sub_envs(exc, self.indices, url)
            raise

    def load(self, raw: str | bytes) -> Any:
        """The message of a reply with its arrays and repeated columns put back, read as
        :meth:`parse` reads it but not checked (for
        :class:`~openenv_gym.vector.steady_step.SteadyStep`, which checks what a plain
        result needs, and leaves anything else to :meth:`parse`). A compact frame's numbers
        are numpy arrays here (:meth:`CompactReader.unpack
        <openenv_gym.wire.compact_reader.CompactReader.unpack>`). Reading a reply twice
        gives the same message.

        Raises:
            CompressedFrameError, ProtocolError: The frame cannot be read.
        """
        repeated, compact = self._repeated, self._compact
        if compact is not None and is_compact_frame(raw):
            try:
                data = compact.unpack(raw, self._shared, copy=self._copy)
            except ProtocolError:
                self._forget()
                raise
            self._record()
            return {"type": BATCH_RESULT, "data": data}
        try:
            message = load_frame(
                raw,
                self._shared,
                limit=self.session.max_message_size,
                copy=self._copy,
                compressed=self._compressed,
            )
        except ProtocolError:
            self._forget()
            raise
        self._record()
        if repeated is not None and type(message) is dict:
            full = message.get("data")
            if message.get("type") == BATCH_RESULT and type(full) is dict:
                try:
                    repeated.restore(full)
                    if compact is not None:
                        compact.remember(full)
                except ProtocolError:
                    self._forget()
                    raise
        return message

    def _forget(self) -> None:
        """A result lost: nothing may repeat it, and no compact frame stand on it."""
        if self._repeated is not None:
            self._repeated.forget()
        if self._compact is not None:
            self._compact.forget()

    def skip(self, raw: str | bytes | BaseException) -> None:
        """A reply read and not taken: its repeated columns are remembered all the same
        (the server's next result may repeat them). Never raises."""
        if self._repeated is not None and isinstance(raw, bytes | str):
            with contextlib.suppress(Exception):
                self.load(raw)

    def _record(self) -> None:
        """Tell the compression policy how long the round trip took (once per reply)."""
        asked = self._asked
        if asked is not None and self.policy is not None:
            self.policy.record(asked, time.perf_counter() - self._sent)
            self._asked = None

    def state_frame(self) -> str:
        return BATCH_STATE_FRAME

    def parse_states(self, raw: str | bytes, url: str) -> list[dict[str, Any]]:
        return parse_batch_states(raw, url=url)

    def close(self) -> None:
        """Close the connection, then unmap its shared-memory files. Idempotent."""
        try:
            super().close()
        finally:
            if self._shared is not None:
                self._shared.close()


def close_channels(channels: Sequence[Channel]) -> None:
    """Close every channel (:meth:`Channel.close`). Never raises."""
    for channel in channels:
        channel.close()


__all__ = [
    "BATCH_STATE_FRAME",
    "CLOSE_FRAME",
    "STATE_FRAME",
    "BatchChannel",
    "Channel",
    "PlainChannel",
    "close_channels",
]
