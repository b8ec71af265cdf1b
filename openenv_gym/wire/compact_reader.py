"""The client's side of compact batch results (:mod:`openenv_gym.wire.compact_results`).

A :class:`CompactReader` remembers the last announcement of its connection (from each full
``batch_result``, its repeated columns put back) and reads each compact frame as the data of
the full result it stands for: the announcing result's objects for its ``"same"`` fields
and metadata, numpy arrays for its numbers (:data:`TYPED` lists the typed fields; a reader
of plain results takes them as lists with :func:`as_lists`).

Example:
    >>> from openenv_gym.wire.compact_results import CompactWriter, Result
    >>> writer, reader = CompactWriter(), CompactReader()
    >>> fields = {"score": [1.5, 2.0]}
    >>> for _ in range(2):  # the second full frame for the same sessions announces
    ...     layout = writer.announce(Result([0, 1], fields, {}, None, [0.0, 0.0], []), final=False)
    >>> reader.remember({"indices": [0, 1], "observation": fields, "reward": [0.0, 0.0],
    ...                  "done": [False, False], "metadata": None, "final": {},
    ...                  "compact": layout})
    >>> scores = {"score": [2.5, 0.5]}
    >>> frame = writer.pack(Result([0, 1], scores, {}, None, [1.0, 0.0], [True, False]))
    >>> data = as_lists(reader.unpack(frame))
    >>> data["observation"], data["reward"], data["done"], data["final"]
    ({'score': [2.5, 0.5]}, [1.0, 0.0], [True, False], {})
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import numpy as np

from openenv_gym.errors import ProtocolError
from openenv_gym.wire.compact_results import (
    COMPACT,
    RAW,
    REWARD_AT,
    SAME,
    SESSION_COUNT,
    SHM,
    TYPED_DTYPES,
    done_at,
    padded,
)

if TYPE_CHECKING:
    from openenv_gym.wire.shared_memory import SharedArrayReader

#: The key of the data :meth:`CompactReader.unpack` gives, listing its typed fields.
TYPED: Final = "typed"
_ARRAY_KINDS: Final = frozenset("biuf")


class Field(NamedTuple):
    """One field of an announcement, as the client reads compact frames by it."""

    name: str
    #: ``"f8"``, ``"i8"``, ``"b1"``, ``"same"``, ``"shm"`` or ``"raw"``.
    kind: str
    #: The dtype of a typed column, the announcing frame's value of a ``"same"`` field, the
    #: shared-memory descriptor, or the ``(dtype, shape)`` of a raw array.
    spec: Any
    #: Where a typed column or raw array starts in a compact frame.
    offset: int


class Announcement(NamedTuple):
    """What a client remembers of the last announcement (its ``data``: the announcing
    result's, repeated columns put back)."""

    data: dict[str, Any]
    fields: tuple[Field, ...]
    #: The number of sessions every compact frame answers.
    sessions: int
    #: A compact frame's length in bytes.
    size: int

    @property
    def done_at(self) -> int:
        """Where a compact frame's done flags start."""
        return done_at(self.sessions)

    def fits(self, frame: bytes) -> bool:
        """Whether ``frame`` (a compact frame) has this announcement's size and count."""
        return len(frame) == self.size and SESSION_COUNT.unpack_from(frame, 4)[0] == self.sessions


class CompactReader:
    """A connection's last announcement, and the reading of compact frames by it."""

    def __init__(self) -> None:
        self._announced: Announcement | None = None

    def remember(self, data: dict[str, Any]) -> None:
        """Take the announcement out of the ``data`` of a full ``batch_result`` (its
        repeated columns put back) and remember both; without one, the last announcement
        stays in force.

        Raises:
            ProtocolError: The announcement does not describe the result.
        """
        layout = data.pop(COMPACT, None)
        if layout is None:
            return  # the last announcement stays in force
        self._announced = None
        fields = data.get("observation")
        indices = data.get("indices")
        if (
            type(layout) is not list
            or type(fields) is not dict
            or type(indices) is not list
            or data.get("final")
        ):
            raise _bad_announcement(layout, "it is not one for a batch_result without final")
        names = [entry[0] if type(entry) is list and entry else None for entry in layout]
        if names != list(fields):
            raise _bad_announcement(layout, f"its names are not the fields {list(fields)}")
        count = len(indices)
        parts: list[Field] = []
        offset = done_at(count) + padded(count)
        raw: list[tuple[int, str, np.dtype[Any], tuple[int, ...]]] = []  # placed at the end
        for entry in layout:  # the typed columns first, then the raw arrays
            if len(entry) < 2 or type(entry[1]) is not str:
                raise _bad_announcement(layout, f"{entry!r:.60} is not [name, kind, ...]")
            name, kind, *extra = entry
            if kind in TYPED_DTYPES and not extra:
                parts.append(Field(name, kind, TYPED_DTYPES[kind], offset))
                offset += padded(TYPED_DTYPES[kind].itemsize * count)
            elif kind == SAME and not extra:
                parts.append(Field(name, kind, fields[name], 0))
            elif kind == SHM and len(extra) == 1 and type(extra[0]) is dict:
                parts.append(Field(name, kind, extra[0], 0))
            elif kind == RAW and len(extra) == 2:
                raw.append((len(parts), name, *_raw_array(extra)))
                parts.append(Field(name, kind, None, 0))
            else:
                raise _bad_announcement(layout, f"[{name!r}, {kind!r}, ...] is not a field entry")
        for at, name, dtype, shape in raw:
            parts[at] = Field(name, RAW, (dtype, shape), offset)
            offset += padded(dtype.itemsize * math.prod(shape))
        self._announced = Announcement(data, tuple(parts), count, offset)

    @property
    def announcement(self) -> Announcement | None:
        """The announcement compact frames stand on now (``None``: none may come)."""
        return self._announced

    def forget(self) -> None:
        """Forget the announcement (a frame was lost): a compact frame is an error now."""
        self._announced = None

    def unpack(
        self, frame: bytes, shared: SharedArrayReader | None = None, *, copy: bool = True
    ) -> dict[str, Any]:
        """The ``data`` of the ``batch_result`` a compact frame stands for: the announcing
        one's, with the frame's numbers as numpy arrays (:data:`TYPED` names the typed
        fields) and its arrays read as :func:`~openenv_gym.wire.binary.decode_frame` reads
        them (``copy=False``: read-only views, valid until the next request; ``shared``
        reads the connection's shared memory).

        Raises:
            ProtocolError: No announcement came before it, or the frame does not fit it.
        """
        announced = self._announced
        if announced is None:
            raise ProtocolError(
                "expected a compact batch_result only after a batch_result announcing its "
                f"layout under {COMPACT!r}, got one without",
                received=repr(frame[:64]),
            )
        count = announced.sessions
        if not announced.fits(frame):
            self.forget()
            raise ProtocolError(
                f"expected a compact batch_result of {announced.size} bytes for {count} "
                f"sessions as announced, got {len(frame)} bytes",
                received=repr(frame[:64]),
            )
        rewards = np.frombuffer(frame, np.float64, count, REWARD_AT).copy()
        done = self._flags(frame, count, announced.done_at)
        fields: dict[str, Any] = {}
        typed: list[str] = []
        for name, kind, spec, offset in announced.fields:
            if kind == SAME:
                fields[name] = spec
            elif kind == SHM:
                if shared is None:
                    self.forget()
                    raise ProtocolError(
                        "expected no shared memory on a connection that did not agree to it, "
                        f"got a compact batch_result announcing {name!r} there"
                    )
                fields[name] = shared.array(spec)
            elif kind == RAW:
                dtype, shape = spec
                view = np.frombuffer(frame, dtype, math.prod(shape), offset).reshape(shape)
                fields[name] = view.copy() if copy else view
            else:
                if kind == "b1":
                    fields[name] = self._flags(frame, count, offset)
                else:
                    fields[name] = np.frombuffer(frame, spec, count, offset).copy()
                typed.append(name)
        data = announced.data
        return {
            "indices": data["indices"],
            "observation": fields,
            "reward": rewards,
            "done": done,
            "metadata": data.get("metadata"),
            "final": {},
            TYPED: typed,
        }

    def _flags(self, frame: bytes, count: int, offset: int) -> np.ndarray:
        """``count`` booleans sent as bytes 0 or 1.

        Raises:
            ProtocolError: A byte is neither (the announcement is forgotten).
        """
        raw = np.frombuffer(frame, np.uint8, count, offset)
        if raw.max(initial=0) > 1:
            self.forget()
            raise ProtocolError(
                f"expected flags of 0 or 1 in a compact batch_result, got {raw.tolist()}",
                received=repr(frame[:64]),
            )
        return raw.astype(np.bool_)


def as_lists(data: dict[str, Any]) -> dict[str, Any]:
    """The ``data`` of :meth:`CompactResults.unpack` as a full frame's: numbers in lists
    (for readers of plain results; the typed columns are the only arrays it changes).

    Example:
        >>> as_lists({"observation": {"n": np.arange(2)}, "reward": np.zeros(2),
        ...           "done": np.zeros(2, bool), "typed": ["n"]})
        {'observation': {'n': [0, 1]}, 'reward': [0.0, 0.0], 'done': [False, False]}
    """
    typed = data.pop(TYPED, None)
    if typed is None:
        return data
    fields = data["observation"]
    for name in typed:
        fields[name] = fields[name].tolist()
    data["reward"] = data["reward"].tolist()
    data["done"] = data["done"].tolist()
    return data


def _raw_array(extra: list[Any]) -> tuple[np.dtype[Any], tuple[int, ...]]:
    """The dtype and shape of a ``"raw"`` entry.

    Raises:
        ProtocolError: They are not a numeric dtype and a shape.
    """
    try:
        dtype = np.dtype(extra[0])
        shape = tuple(int(n) for n in extra[1])
    except (TypeError, ValueError) as exc:
        raise _bad_announcement(extra, f"not a dtype and a shape ({exc})") from exc
    if dtype.kind not in _ARRAY_KINDS or dtype.fields is not None or min(shape, default=0) < 0:
        raise _bad_announcement(extra, "not a numeric dtype and a non-negative shape")
    return dtype, shape


def _bad_announcement(layout: Any, why: str) -> ProtocolError:
    return ProtocolError(
        f"expected {COMPACT!r} in a batch_result to list its fields as [name, kind, ...] "
        f"entries, got {layout!r:.200}: {why}",
        received=repr(layout)[:300],
    )


__all__ = ["TYPED", "Announcement", "CompactReader", "Field", "as_lists"]
