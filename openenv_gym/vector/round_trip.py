"""The frames of one round trip of a vector env: what each sub-env does (an :data:`Op`) as
the plain OpenEnv message of one session, or as the ``batch_step`` of the K sessions of a
batch connection (``openenv-gym.batch.v1``), and the notes that name the sub-envs of a
failed reply. The channels (:mod:`openenv_gym.vector.channels`) pick which.

Example:
    >>> frame_of_plain(("reset", {"seed": 1}))
    '{"type":"reset","data":{"seed":1}}'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from openenv_gym.errors import ProtocolError, ServerReplyError
from openenv_gym.wire.batch import batch_step_message
from openenv_gym.wire.messages import encode_json, encode_message

#: What a sub-env does in a round trip: ``("step", action fields)`` or ``("reset", keys)``.
Op = tuple[str, dict[str, Any]]


def frame_of_plain(op: Op) -> str:
    """The plain OpenEnv message of one op (a connection of one session)."""
    return encode_message({"type": op[0], "data": op[1]})


def batch_step_frame(
    indices: Sequence[int],
    ops: Sequence[Op | None],
    *,
    same_step_reset: Mapping[str, Any] | None = None,
    last: Sequence[bool] | None = None,
    compress: bool | None = None,
) -> bytes | None:
    """The ``batch_step`` frame of the sub-envs ``indices`` of one batch connection
    (``ops[i]`` for sub-env i, ``None``: leave it alone), or ``None`` when none has an op.

    ``same_step_reset`` asks the server to reset an episode that ends in the same round trip
    (``last[i]``: the step is the last of sub-env ``i``'s episode by a client-side time
    limit); ``compress`` whether its result comes packed (a connection that agreed to
    compression).

    Example:
        >>> batch_step_frame([0, 1], [("step", {"x": 1}), None], last=[True, False])
        b'{"type":"batch_step","data":{"ops":[{"step":{"x":1},"last":true},null]}}'
        >>> batch_step_frame([0, 1], [None, None]) is None
        True
    """
    entries: list[dict[str, Any] | None] = []
    busy = False
    for i in indices:
        op = ops[i]
        if op is None:
            entries.append(None)
            continue
        busy = True
        entry: dict[str, Any] = {op[0]: op[1]}
        if last is not None and last[i] and op[0] == "step":
            entry["last"] = True
        entries.append(entry)
    if not busy:
        return None
    return encode_json(batch_step_message(entries, same_step_reset, compress))


def name_sub_envs(exc: BaseException, indices: Sequence[int], url: str) -> None:
    """Name the sub-env(s) in a reply error: a note on a ``ServerReplyError`` (the sub-env
    whose op failed, by its position in a batch), the message of a ``ProtocolError`` (a bad
    frame: every sub-env of the connection, and its URL). Called in an ``except`` clause
    (no context manager on the path of every reply), which re-raises.

    Example:
        >>> failed = ServerReplyError("bad action", code="VALIDATION_ERROR", data={"index": 1})
        >>> name_sub_envs(failed, [4, 5], "http://h")
        >>> failed.__notes__
        ['(from sub-env 5 of the vector env, at http://h)']
        >>> bad = ProtocolError("expected a batch_result")
        >>> name_sub_envs(bad, [4, 5], "http://h")
        >>> str(bad)
        'expected a batch_result (from sub-envs [4, 5] of the vector env, at http://h)'
    """
    if isinstance(exc, ServerReplyError):
        position = exc.data.get("index", 0) if isinstance(exc.data, dict) else 0
        index = indices[position] if position in range(len(indices)) else 0
        exc.add_note(f"(from sub-env {index} of the vector env, at {url})")
    elif isinstance(exc, ProtocolError):
        # In the message itself, as a lost session's error says it (a note is easy to miss).
        where = f"(from sub-envs {list(indices)} of the vector env, at {url})"
        exc.args = (f"{exc.args[0] if exc.args else exc} {where}", *exc.args[1:])


__all__ = ["Op", "batch_step_frame", "frame_of_plain", "name_sub_envs"]
