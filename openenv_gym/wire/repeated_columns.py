"""Batch-result columns that repeat the connection's last result, sent once.

Many observation fields outside the space do not change from one step to the next: an Atari
session's screen shape, legal actions and game metadata every step, its lives most steps.
Sent in every ``batch_result`` (``openenv-gym.batch.v1``), they made up half of a
preprocessed Pong frame's header, for the server to encode and the client to parse, check
and merge into infos each step.

A client that offers ``"repeat": true`` in ``batch_open`` to a server that answers
``"repeat": true`` in ``batch_opened`` gets them once: the server sends a column (or the
``metadata`` object) as ``null`` when its JSON is byte for byte the one of the connection's
previous ``batch_result``, which answered the same sessions, and lists its name under
``"same"``::

    {"type": "batch_result", "data": {"indices": [0, 1],
     "observation": {"screen": null, "legal_actions": null, "lives": [3, 2]},
     "reward": [0.0, 1.0], "done": [false, false], "metadata": null, "final": {},
     "same": ["legal_actions", "metadata"]}}

The client puts the previous values back (:meth:`RepeatedColumns.restore`) before anything
reads the result: the same Python objects, so a reader can tell an unchanged column by
identity. Servers that do not know the key never answer it and send every column; clients
that do not offer it never see ``"same"``.

Example:
    >>> server, client = RepeatedColumns(), RepeatedColumns()
    >>> first = {"legal_actions": [[0, 1], [0, 1]], "lives": [3, 3]}
    >>> server.mark([0, 1], first, None), first
    (([], None), {'legal_actions': [[0, 1], [0, 1]], 'lives': [3, 3]})
    >>> client.restore({"indices": [0, 1], "observation": dict(first)})
    >>> second = {"legal_actions": [[0, 1], [0, 1]], "lives": [3, 2]}
    >>> server.mark([0, 1], second, None), second
    ((['legal_actions'], None), {'legal_actions': None, 'lives': [3, 2]})
    >>> data = {"indices": [0, 1], "observation": second, "same": ["legal_actions"]}
    >>> client.restore(data)
    >>> data["observation"]
    {'legal_actions': [[0, 1], [0, 1]], 'lives': [3, 2]}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from openenv_gym.errors import ProtocolError
from openenv_gym.wire.messages import encode_json

#: The ``batch_open`` / ``batch_opened`` key of the agreement.
REPEAT: Final = "repeat"
#: The ``batch_result`` key listing the columns sent as ``null`` because they repeat.
SAME: Final = "same"
#: The name ``"same"`` gives the ``metadata`` object.
METADATA: Final = "metadata"


class RepeatedColumns:
    """One end's memory of its connection's last ``batch_result`` (module docstring)."""

    def __init__(self) -> None:
        self._indices: list[int] | None = None
        self._encoded: dict[str, bytes] = {}
        self._fields: dict[str, Any] = {}
        self._metadata: Any = None

    # ------------------------------------------------------------------ server side

    def mark(
        self, indices: Sequence[int], columns: dict[str, Any], metadata: dict[str, Any] | None
    ) -> tuple[list[str], dict[str, Any] | None]:
        """Put ``None`` in place of each column of ``columns`` (``None`` ones are arrays,
        sent apart) whose JSON repeats the last result's, for the same ``indices``; the
        names put back by the client, and the ``metadata`` to send (``None`` when it
        repeats too)."""
        encoded = {name: encode_json(v) for name, v in columns.items() if v is not None}
        if metadata is not None:
            encoded[METADATA] = encode_json(metadata)
        same: list[str] = []
        if self._indices == list(indices):
            last = self._encoded
            same = [name for name, raw in encoded.items() if last.get(name) == raw]
        self._indices, self._encoded = list(indices), encoded
        for name in same:
            if name == METADATA:
                metadata = None
            else:
                columns[name] = None
        return same, metadata

    # ------------------------------------------------------------------ client side

    def restore(self, data: dict[str, Any]) -> None:
        """Put back, in the ``data`` of a ``batch_result``, the columns its ``"same"`` names
        (the last result's objects), and remember its columns for the next one.

        Raises:
            ProtocolError: ``"same"`` names a column the last result did not have, or the
                last result answered other sessions.
        """
        fields = data.get("observation")
        same = data.pop(SAME, None)
        if same:
            self._put_back(data, fields, same)
        indices = data.get("indices")
        self._indices = indices if isinstance(indices, list) else None
        self._fields = dict(fields) if isinstance(fields, Mapping) else {}
        self._metadata = data.get(METADATA)

    def forget(self) -> None:
        """A result was lost (a frame that could not be read): later ones cannot repeat
        anything of it, and a ``"same"`` that tries is a :class:`ProtocolError`."""
        self._indices, self._fields, self._metadata = None, {}, None

    def _put_back(self, data: dict[str, Any], fields: Any, same: Any) -> None:
        """Put back the columns ``same`` names (forgets everything when it cannot).

        Raises:
            ProtocolError: As :meth:`restore`.
        """
        try:
            if (
                type(same) is not list
                or not isinstance(fields, dict)
                or data.get("indices") != self._indices
            ):
                raise ProtocolError(
                    f"expected {SAME!r} only after a batch_result for the same sessions, "
                    f"got {SAME!r}: {same!r:.100} for indices {data.get('indices')!r:.100}",
                    received=repr(data)[:300],
                )
            for name in same:
                if name == METADATA and self._metadata is not None:
                    data[METADATA] = self._metadata
                elif type(self._fields.get(name)) is list:  # arrays are never repeated
                    fields[name] = self._fields[name]
                else:
                    raise ProtocolError(
                        f"expected {SAME!r} to name a column of the last batch_result "
                        f"({sorted(self._fields)}), got {name!r}",
                        received=repr(same)[:300],
                    )
        except ProtocolError:
            self.forget()
            raise


def offer_accepted(opened: Mapping[str, Any]) -> bool:
    """Whether the ``data`` of a ``batch_opened`` agrees to repeated columns.

    Example:
        >>> offer_accepted({"sessions": 2, "repeat": True}), offer_accepted({"sessions": 2})
        (True, False)
    """
    return opened.get(REPEAT) is True


__all__ = ["METADATA", "REPEAT", "SAME", "RepeatedColumns", "offer_accepted"]
