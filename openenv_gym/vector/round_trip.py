"""One round trip of a vector env: the sub-envs' ops become one frame per connection, and
each reply becomes a :class:`~openenv_gym.wire.batch.BatchResult`.

On a batch connection (``openenv-gym.batch.v1``) the ops of its K sub-envs travel in one
``batch_step`` and come back in one ``batch_result``; on a plain connection (an official
server) the op is the plain ``step`` or ``reset`` message and its reply a one-row result, so
the vector env handles both the same way.

Example:
    >>> frame_of_plain(("reset", {"seed": 1}))
    '{"type":"reset","data":{"seed":1}}'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openenv_gym.errors import OpenEnvGymError, ProtocolError, ServerReplyError
from openenv_gym.vector.opening import Channel
from openenv_gym.wire.batch import BatchResult, batch_step_message, parse_batch_result
from openenv_gym.wire.messages import ObservationReply, encode_json, encode_message

#: What a sub-env does in a round trip: ``("step", action fields)`` or ``("reset", keys)``.
Op = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Pending:
    """Frames of a round trip whose replies are not read yet.

    Attributes:
        channels: The connections that got a frame.
        frames: The frame of each.
        sent: What :func:`~openenv_gym.client.exchange.send_many` returned, or ``None``
            while the frames are not sent either (a ``step`` sends and reads in one go).
    """

    channels: list[Channel]
    frames: list[str | bytes]
    sent: list[OpenEnvGymError | None] | None


def frame_of_plain(op: Op) -> str:
    """The plain OpenEnv message of one op (a connection of one session)."""
    return encode_message({"type": op[0], "data": op[1]})


def build_frames(
    channels: Sequence[Channel],
    ops: Sequence[Op | None],
    *,
    same_step_reset: Mapping[str, Any] | None = None,
    last: Sequence[bool] | None = None,
) -> tuple[list[Channel], list[str | bytes]]:
    """One frame per connection that has an op (``ops[i]`` for sub-env i, ``None``: leave it
    alone): a ``batch_step`` on a batch connection, the plain message otherwise.

    ``same_step_reset`` asks batch connections to reset an episode that ends in the same
    round trip (``last[i]``: the step is the last of sub-env ``i``'s episode by a
    client-side time limit).
    """
    chosen: list[Channel] = []
    frames: list[str | bytes] = []
    for channel in channels:
        if not channel.batch:
            op = ops[channel.indices[0]]
            if op is not None:
                chosen.append(channel)
                frames.append(frame_of_plain(op))
            continue
        entries: list[dict[str, Any] | None] = []
        busy = False
        for i in channel.indices:
            op = ops[i]
            if op is None:
                entries.append(None)
                continue
            busy = True
            entry: dict[str, Any] = {op[0]: op[1]}
            if last is not None and last[i] and op[0] == "step":
                entry["last"] = True
            entries.append(entry)
        if busy:
            chosen.append(channel)
            frames.append(encode_json(batch_step_message(entries, same_step_reset)))
    return chosen, frames


def parse_reply(channel: Channel, raw: str | bytes, url: str) -> BatchResult:
    """The result of one connection's reply; errors name the sub-env(s).

    Raises:
        ServerReplyError: The server answered an op with an error (the note names the
            sub-env whose op failed).
        ProtocolError: The reply is not a valid OpenEnv (or batch) message.
    """
    try:
        if channel.batch:
            return parse_batch_result(
                raw, url=url, shared=channel.shared, sessions=len(channel.indices)
            )
        reply = channel.session.encoding.parse_reply(raw, url=url)
    except ServerReplyError as exc:
        position = exc.data.get("index", 0) if isinstance(exc.data, dict) else 0
        index = channel.indices[position] if position in range(len(channel.indices)) else 0
        exc.add_note(f"(from sub-env {index} of the vector env, at {url})")
        raise
    except ProtocolError as exc:
        exc.add_note(f"(from sub-envs {channel.indices} of the vector env, at {url})")
        raise
    if not isinstance(reply, ObservationReply):
        raise ProtocolError(
            f"expected an 'observation' reply from sub-env {channel.indices[0]} at {url}, "
            "got a 'state' reply",
            received=reply,
        )
    return BatchResult.of_reply(reply)


__all__ = ["Op", "Pending", "build_frames", "frame_of_plain", "parse_reply"]
