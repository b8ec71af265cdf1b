"""Steady steps written straight from compact frames' bytes.

A server that agreed to compact frames (:mod:`openenv_gym.wire.compact_results`) answers a
steady step with each connection's rewards, done flags and numeric info fields as raw
columns, and every other field as its last announcement said. Read as messages, those
frames cost the client as much Python as full ones (a dict per reply, each column joined,
checked and cached in turn). So once a :class:`~openenv_gym.vector.steady_step.SteadyStep`
took a step whose replies were all compact frames, it compiles them into a
:class:`CompactStep`: for each connection, where its numbers lie in its frame and which
sub-env rows they fill; for the infos, which columns come from the frames and which the
announcements fix (built once, handed out as copies). Each next step whose replies are
compact frames of the same announcements is then written with a few numpy assignments per
connection; anything else (a full frame, another announcement, a flag byte that is not 0
or 1, an observation outside the space) leaves the step, unwritten, to the steady step's
reading, which raises what there is to raise.

It compiles only where that reading would be as plain: every connection's sub-envs in
order (in SAME_STEP mode it takes no step in which an episode ended without its server
resetting it, or reaches the client-side time limit), truncated and terminated fields
(if any) sent as boolean columns, legal actions (if any) fixed by the announcement, and no
info key that is both a frame's column and a metadata key.
``tests/vector/test_compact_step.py`` steps an env through it beside one whose connections
send full frames, and compares every step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from openenv_gym.vector.buffers import BatchBuffers
from openenv_gym.vector.channels import BatchChannel, Channel
from openenv_gym.wire.compact_reader import Announcement, Field
from openenv_gym.wire.compact_results import REWARD_AT, TYPED_DTYPES, is_compact_frame


class _Reply(NamedTuple):
    """One connection's reply as a compiled step reads it."""

    channel: BatchChannel
    announcement: Announcement
    rows: slice
    sessions: int
    observation: Field
    #: The frame's typed columns that are info keys, in the infos' order.
    columns: tuple[Field, ...]
    #: The byte ranges of its flags (done first): 0 or 1 each.
    flags: tuple[tuple[int, int], ...]
    #: Where its truncated and exact terminated flags start, if it has those fields.
    truncated_at: int | None
    terminated_at: int | None
    #: Its observations need no check (every value of their dtype is in the space), and
    #: their shape as rows of the space.
    unchecked: bool
    rows_shape: tuple[int, ...]


class CompactStep:
    """A steady step compiled for one set of announcements (module docstring).

    Build one with :meth:`compile`.
    """

    def __init__(
        self,
        buffers: BatchBuffers,
        replies: list[_Reply],
        order: list[tuple[str, int | None]],
        fixed: dict[str, np.ndarray],
        booleans: set[int],
    ) -> None:
        self.buffers = buffers
        self._replies = replies
        #: Each info key, with the index of its column in :attr:`_Reply.columns` (``None``:
        #: fixed by the announcements, in ``fixed``).
        self._order = order
        self._fixed = fixed
        #: The typed columns that are booleans (sent as bytes 0 or 1).
        self._booleans = booleans
        self._key: str = buffers.codec.key or ""
        self._same_step = buffers.same_step

    @classmethod
    def compile(
        cls,
        buffers: BatchBuffers,
        channels: Sequence[Channel],
        infos: Mapping[str, Any],
    ) -> CompactStep | None:
        """The compiled form of the step just taken from compact frames on ``channels``
        with ``infos``, or ``None`` where its reading would not be plain (module
        docstring)."""
        codec = buffers.codec
        key = codec.key
        if key is None:
            return None
        announced: list[tuple[BatchChannel, Announcement, dict[str, Field]]] = []
        start = 0
        for channel in channels:
            if not isinstance(channel, BatchChannel):
                return None
            announcement = channel.announcement
            if announcement is None or channel.indices != list(
                range(start, start + len(channel.indices))
            ):
                return None
            announced.append((channel, announcement, {f.name: f for f in announcement.fields}))
            start += len(channel.indices)
        if start != buffers.num_envs:
            return None
        # Each info key: a typed column of the same kind in every reply, or fixed by them all.
        order: list[tuple[str, int | None]] = []
        fixed: dict[str, np.ndarray] = {}
        typed_names: list[str] = []
        booleans: set[int] = set()
        for name in infos:
            if name.startswith("_"):
                continue
            kinds = {_typed_kind(fields.get(name)) for _, _, fields in announced}
            kind = kinds.pop() if len(kinds) == 1 else "mixed"
            if kind == "mixed" or (kind is not None and _in_metadata(announced, name)):
                return None
            if kind is None:
                order.append((name, None))
                fixed[name] = np.array(infos[name], copy=True)
                continue
            if kind == "b1":
                booleans.add(len(typed_names))
            order.append((name, len(typed_names)))
            typed_names.append(name)
        replies: list[_Reply] = []
        for channel, announcement, fields in announced:
            reply = _compile_reply(buffers, channel, announcement, fields, typed_names)
            if reply is None:
                return None
            replies.append(reply)
        if len({(r.truncated_at is None, r.terminated_at is None) for r in replies}) != 1:
            return None  # the replies differ in the flags they send
        return cls(buffers, replies, order, fixed, booleans)

    def take(self, channels: Sequence[Channel], raws: Sequence[Any]) -> dict[str, Any] | None:
        """Write the step of ``raws`` (one reply per channel) and return its infos; ``None``
        when it is not one this step was compiled for (nothing written)."""
        replies = self._replies
        if len(raws) != len(replies):
            return None
        buffers = self.buffers
        decode, key, limit = buffers.codec.decode_batch, self._key, buffers.max_episode_steps
        # The client-side time limit: the sub-envs whose episode this step truncates.
        over = buffers.elapsed + 1 >= limit if limit is not None else None
        if self._same_step and over is not None and over.any():
            return None  # SAME_STEP: the server resets those in the same round trip
        decoded: list[Any] = []
        for reply, channel, raw in zip(replies, channels, raws, strict=True):
            announcement = reply.announcement
            if (
                channel is not reply.channel
                or not is_compact_frame(raw)
                or channel.announcement is not announcement
                or not announcement.fits(raw)
            ):
                return None
            for start, stop in reply.flags:
                if max(raw[start:stop]) > 1:  # a flag byte that is neither 0 nor 1
                    return None
            start, stop = reply.flags[0]
            if self._same_step and max(raw[start:stop]):
                return None  # SAME_STEP: an episode its server did not reset (no final)
            try:
                observation = self._observation(reply, raw)
                decoded.append(
                    observation.reshape(reply.rows_shape)
                    if reply.unchecked
                    else decode({key: observation}, reply.sessions)
                )
            except Exception:  # outside the space: the steady step's reading raises it
                return None
        columns: list[list[np.ndarray]] = [[] for _ in replies[0].columns]
        for reply, raw, rows_decoded in zip(replies, raws, decoded, strict=True):
            rows, count = reply.rows, reply.sessions
            buffers.observations[rows] = rows_decoded
            buffers.rewards[rows] = np.frombuffer(raw, np.float64, count, REWARD_AT)
            # As the steady step's reading: the server's truncated flag or the time limit
            # truncates; the server's exact terminated flag wins, else done and not
            # truncated (the flag bytes are 0 or 1: booleans as they are).
            done = np.frombuffer(raw, np.bool_, count, reply.flags[0][0])
            truncated: np.ndarray | None = None
            if reply.truncated_at is not None:
                truncated = np.frombuffer(raw, np.bool_, count, reply.truncated_at)
            if over is not None:
                truncated = over[rows] if truncated is None else truncated | over[rows]
            if reply.terminated_at is not None:
                terminated = np.frombuffer(raw, np.bool_, count, reply.terminated_at)
            else:
                terminated = done if truncated is None else done & ~truncated
            buffers.terminations[rows] = terminated
            buffers.truncations[rows] = False if truncated is None else truncated
            for column, f in zip(columns, reply.columns, strict=True):
                column.append(np.frombuffer(raw, f.spec, count, f.offset))
        buffers.elapsed += 1
        if buffers.terminations.any() or buffers.truncations.any():
            buffers.note_ended()
        infos: dict[str, Any] = {}
        masks = np.ones((len(self._order), buffers.num_envs), np.bool_)
        booleans = self._booleans
        for m, (name, j) in enumerate(self._order):
            if j is None:
                infos[name] = self._fixed[name].copy()
            else:
                joined = np.concatenate(columns[j])
                infos[name] = joined.view(np.bool_) if j in booleans else joined
            infos["_" + name] = masks[m]
        return infos

    @staticmethod
    def _observation(reply: _Reply, raw: bytes) -> np.ndarray:
        """The stacked observation array of one reply (a view: it is copied into rows)."""
        field = reply.observation
        if field.kind == "shm":
            return reply.channel.shared_array(field.spec)
        dtype, shape = field.spec
        return np.frombuffer(raw, dtype, int(np.prod(shape)), field.offset).reshape(shape)


def _compile_reply(
    buffers: BatchBuffers,
    channel: BatchChannel,
    announcement: Announcement,
    fields: dict[str, Field],
    typed_names: list[str],
) -> _Reply | None:
    """How to read one connection's compact frames (``None``: not as plainly as the steady
    step would: an observation not stacked, flags or legal actions not as needed)."""
    codec = buffers.codec
    sessions = len(channel.indices)
    observation = fields.get(codec.key or "")
    legal = fields.get(codec.legal_key) if codec.legal_key is not None else None
    flags = [
        fields.get(name) if name else None for name in (codec.truncated_key, codec.terminated_key)
    ]
    if (
        observation is None
        or observation.kind not in ("shm", "raw")
        or any(flag is not None and flag.kind != "b1" for flag in flags)
        or (legal is not None and legal.kind != "same")
    ):
        return None
    truncated_at, terminated_at = (f.offset if f is not None else None for f in flags)
    dtype, shape = _array_of(observation)
    row_size = math.prod(shape[1:])
    rows_shape = (sessions, *codec.space.shape) if codec.space.shape else ()
    unchecked = (
        shape[:1] == (sessions,)
        and bool(rows_shape)
        and math.prod(rows_shape) == sessions * row_size
        and codec.batch_fits_every(dtype, row_size)
    )
    numbers = tuple(fields[name] for name in typed_names)
    done = announcement.done_at
    ranges = [(done, done + sessions)]
    ranges += [(f.offset, f.offset + sessions) for f in numbers if f.kind == "b1"]
    ranges += [(at, at + sessions) for at in (truncated_at, terminated_at) if at is not None]
    first = channel.indices[0]
    return _Reply(
        channel,
        announcement,
        slice(first, first + sessions),
        sessions,
        observation,
        numbers,
        tuple(ranges),
        truncated_at,
        terminated_at,
        unchecked,
        rows_shape,
    )


def _typed_kind(field: Field | None) -> str | None:
    """The typed column code of an announced field, ``None`` for any other field (or none)."""
    return field.kind if field is not None and field.kind in TYPED_DTYPES else None


def _array_of(field: Field) -> tuple[np.dtype[Any], tuple[int, ...]]:
    """The dtype and shape of an announced array field (``"shm"`` or ``"raw"``)."""
    if field.kind == "raw":
        dtype, shape = field.spec
        return dtype, tuple(shape)
    try:
        return np.dtype(field.spec["dtype"]), tuple(int(n) for n in field.spec["shape"])
    except (KeyError, TypeError, ValueError):
        return np.dtype(np.void), ()  # a bad descriptor: checked, and refused, when read


def _in_metadata(announced: Sequence[tuple[Any, Announcement, Any]], name: str) -> bool:
    """Whether any announcing result's metadata has key ``name`` (it wins over a field)."""
    for _, announcement, _ in announced:
        metadata = announcement.data.get("metadata")
        if isinstance(metadata, dict) and any(
            isinstance(row, dict) and name in row for row in metadata.values()
        ):
            return True
    return False


__all__ = ["CompactStep"]
