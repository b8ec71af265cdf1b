"""The server's side of a ``batch_result``: one frame for the replies of K sessions.

Our server's batch connections (:mod:`openenv_gym.server.batch`) answer a ``batch_step``
with :func:`encode_batch_result`: the sessions' observation fields as columns (numeric
arrays stacked and sent as raw bytes or through shared memory, anything else as lists),
their rewards, flags and metadata, the last reply of each episode reset in the same round
trip, and, where the connection agreed to it, ``null`` for the columns that repeat the last
result (:mod:`openenv_gym.wire.repeated_columns`). The frame's layout is
:mod:`openenv_gym.wire.batch`'s; the client reads it with
:func:`~openenv_gym.wire.batch.parse_batch_result`.

Example:
    >>> import numpy as np
    >>> from openenv_gym.wire.batch import parse_batch_result
    >>> from openenv_gym.wire.messages import observation_message
    >>> replies = [observation_message({"x": np.ones(2), "n": k}, 0.0, False) for k in range(2)]
    >>> result = parse_batch_result(encode_batch_result([0, 1], replies, {}))
    >>> result.fields["x"].shape, result.fields["n"]
    ((2, 2), [0, 1])
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import numpy as np

from openenv_gym.wire.batch import BATCH_RESULT
from openenv_gym.wire.binary import encode_frame
from openenv_gym.wire.compact_results import COMPACT, CompactWriter, Result
from openenv_gym.wire.repeated_columns import SAME, RepeatedColumns
from openenv_gym.wire.shared_memory import MIN_SHARED_BYTES, SharedArrayWriter

_ARRAY_KINDS: Final = frozenset("biuf")
_METADATA: Final = "metadata"


def _columns(observations: Sequence[Mapping[str, Any]]) -> Iterator[tuple[str, Sequence[Any]]]:
    """Each field of any observation (in the order first seen) with its value in every
    observation (``None`` where one lacks it): transposed in one go when every observation
    has the same fields in the same order (a server's replies usually do), else field by
    field (sessions of one connection whose envs were reset with other options).

    Example:
        >>> list(_columns([{"a": 1, "b": 2}, {"a": 3, "b": 4}]))
        [('a', (1, 3)), ('b', (2, 4))]
        >>> list(_columns([{"a": 1, "b": 2}, {"b": 4, "c": 5}]))
        [('a', [1, None]), ('b', [2, 4]), ('c', [None, 5])]
    """
    if not observations:
        return iter(())
    keys = tuple(observations[0])
    if all(tuple(o) == keys for o in observations):
        return zip(keys, zip(*(o.values() for o in observations), strict=True), strict=True)
    every = dict.fromkeys(key for o in observations for key in o)
    return ((key, [o.get(key) for o in observations]) for key in every)


def encode_batch_result(
    indices: Sequence[int],
    replies: Sequence[Mapping[str, Any]],
    finals: Mapping[int, Mapping[str, Any]],
    shared: SharedArrayWriter | None = None,
    repeated: RepeatedColumns | None = None,
    compact: CompactWriter | None = None,
) -> bytes:
    """One ``batch_result`` frame for the ``observation`` replies of ``indices``.

    Fields that are numpy arrays of one dtype and shape in every reply are stacked and
    travel as raw bytes (through ``shared`` memory when given and the stack holds at least
    :data:`~openenv_gym.wire.shared_memory.MIN_SHARED_BYTES`); any other field as a list.
    ``finals`` maps a position to the ``observation`` reply of an episode that was reset in
    the same round trip. With ``repeated`` (the connection agreed to it), columns that
    repeat the connection's last result are sent once
    (:mod:`openenv_gym.wire.repeated_columns`); with ``compact`` too, a result that repeats
    its connection's announcement but for its numbers goes as a compact frame, and a full
    one announces its layout (:mod:`openenv_gym.wire.compact_results`).
    """
    datas = [reply["data"] for reply in replies]
    observations = [d["observation"] for d in datas]
    stacked: dict[str, Any] = {}
    arrays: list[tuple[Sequence[str], Any]] = []
    in_shared: list[dict[str, Any]] = []
    array_fields: dict[str, Any] = {}  # field -> its shared-memory descriptor or stacked array
    metadata: dict[str, Any] | None = None
    for key, values in _columns(observations):
        if key == _METADATA:
            metadata = {str(k): v for k, v in enumerate(values) if v}
            continue
        first = values[0]
        if (
            isinstance(first, np.ndarray)
            and first.dtype.kind in _ARRAY_KINDS
            and all(
                isinstance(v, np.ndarray) and v.dtype == first.dtype and v.shape == first.shape
                for v in values
            )
        ):
            path = ["data", "observation", key]
            if shared is not None and first.nbytes * len(values) >= MIN_SHARED_BYTES:
                array_fields[key] = {"path": path, **shared.put(key, values)}
                in_shared.append(array_fields[key])
            else:
                array_fields[key] = np.stack(values)
                arrays.append((path, array_fields[key]))
            stacked[key] = None
        else:
            stacked[key] = list(values)
    rewards = [d.get("reward") for d in datas]
    done = [bool(d.get("done")) for d in datas]
    layout = None
    if compact is not None:
        result = Result(indices, stacked, array_fields, metadata, rewards, done)
        if not finals:
            frame = compact.pack(result)
            if frame is not None:
                return frame
        layout = compact.announce(result, final=bool(finals))
    same: list[str] = []
    if repeated is not None:
        same, metadata = repeated.mark(indices, stacked, metadata)
    data = {
        "indices": list(indices),
        "observation": stacked,
        "reward": rewards,
        "done": done,
        _METADATA: metadata,
        "final": {str(k): dict(v["data"]) for k, v in finals.items()},
    }
    if same:
        data[SAME] = same
    if layout is not None:
        data[COMPACT] = layout
    try:
        return encode_frame({"type": BATCH_RESULT, "data": data}, arrays, in_shared)
    except Exception:
        if compact is not None:
            compact.forget()  # not sent: no compact frame may stand on it
        raise


__all__ = ["encode_batch_result"]
