"""Client frames on the server: parse what a client sends over ``{base_url}/ws``.

The one parser of every client message (a plain session's and, with other ``kinds``, a
batch connection's, see :mod:`openenv_gym.wire.batch`). A bad frame raises
:class:`ClientMessageError`, whose :meth:`~ClientMessageError.reply` is the official
``error`` message the server answers with; the client never sees the exception.

Example:
    >>> parse_client_message('{"type":"step","data":{"action":1}}')
    ClientMessage(type='step', data={'action': 1}, compress=None)
    >>> try:
    ...     parse_client_message('{"type":"jump"}')
    ... except ClientMessageError as exc:
    ...     exc.reply()["data"]["code"]
    'UNKNOWN_TYPE'
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from openenv_gym.errors import PicklableError
from openenv_gym.wire.messages import (
    ENVELOPE_KEYS,
    ErrorCode,
    MessageType,
    error_message,
    printable,
)


@dataclass(frozen=True, slots=True)
class ClientMessage:
    """A parsed client message: ``type``, ``data`` (``{}`` when absent), ``compress`` (agreed)."""

    type: str
    data: dict[str, Any]
    compress: Any = None


class ClientMessageError(PicklableError):
    """A client frame the server answers with an error reply (``extra`` goes into its ``data``)."""

    def __init__(self, code: ErrorCode, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = extra

    @classmethod
    def invalid(cls, detail: str) -> ClientMessageError:
        """A ``VALIDATION_ERROR``: ``Invalid message: {detail}``."""
        return cls(ErrorCode.VALIDATION_ERROR, f"Invalid message: {detail}")

    @classmethod
    def bad_json(cls, detail: str) -> ClientMessageError:
        """An ``INVALID_JSON`` error: ``Invalid JSON: {detail}``."""
        return cls(ErrorCode.INVALID_JSON, f"Invalid JSON: {detail}")

    def reply(self) -> dict[str, Any]:
        """The ``error`` message that answers the frame."""
        return error_message(self.code, self.message, **self.extra)


#: The message types of a plain OpenEnv session.
CLIENT_TYPES: Final = frozenset(MessageType) - {MessageType.OBSERVATION, MessageType.ERROR}


def parse_client_message(
    raw: str | bytes,
    kinds: frozenset[str] = CLIENT_TYPES,
    *,
    expected: str = "",
    loads: Callable[[str], Any] = json.loads,
    keys: frozenset[str] = ENVELOPE_KEYS,
) -> ClientMessage:
    """Parse one client frame on the server: the one parser of every client message.

    ``kinds`` are the types this connection serves (a batch connection serves others, see
    :mod:`openenv_gym.wire.batch`); ``expected`` is added to an ``UNKNOWN_TYPE`` message.
    ``loads`` parses the JSON text (``json.loads``, as the official server; a batch
    connection, whose frames carry K actions, uses pydantic's faster parser). ``keys``: the
    top-level keys allowed (more than :data:`ENVELOPE_KEYS` where the connection agreed).

    Raises:
        ClientMessageError: With the official code to answer with (``INVALID_JSON``,
            ``UNKNOWN_TYPE`` or ``VALIDATION_ERROR``).
    """
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ClientMessageError.bad_json("binary frame is not UTF-8 text") from exc
    try:
        message = loads(raw)
    except json.JSONDecodeError as exc:
        raise ClientMessageError.bad_json(str(exc)) from exc
    except RecursionError:
        raise ClientMessageError.bad_json("nested too deeply to parse") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise ClientMessageError.bad_json(str(exc)) from None
    if not isinstance(message, dict):
        raise ClientMessageError.invalid(f"expected a JSON object, got {type(message).__name__}")
    kind = message.get("type", "")
    if type(kind) is not str or kind not in kinds:
        shown = kind if type(kind) is str else type(kind).__name__
        raise ClientMessageError(
            ErrorCode.UNKNOWN_TYPE, f"Unknown message type: {printable(shown, 100)}{expected}"
        )
    extra = set(message) - keys
    if extra:
        shown = printable(repr(sorted(extra)), 200)
        raise ClientMessageError.invalid(f"unexpected keys {shown} in a {kind!r} message")
    data = message.get("data", {})
    if kind == MessageType.STEP and "data" not in message:
        raise ClientMessageError.invalid("a 'step' message needs 'data'")
    if not isinstance(data, dict):
        raise ClientMessageError.invalid(f"'data' must be an object, got {type(data).__name__}")
    return ClientMessage(str(kind), data, message.get("compress"))
