"""Error replies that always encode, and error logs that cannot flood.

A bad frame must get an error reply with an official code and leave the session alive, even
when the frame was built to break the reply itself: a lone surrogate (``"\\ud800"``) or a
900-deep list echoed back in a validation error cannot be encoded as UTF-8 JSON, and a
16 MiB input echoed back doubles the memory a frame costs. So every echo of client input is
cut short here (:func:`echo`) and an error reply that still fails to encode is rebuilt from
printable text (:func:`encode_error_reply`).

Logging: an environment that raises on every step must not turn 42 bytes in into 2 KB of log
out. :class:`ErrorLog` lets a session log a short burst of one-line warnings, then one line
per :data:`ERROR_LOG_PERIOD` seconds with the count of the lines it left out; tracebacks go
to ``DEBUG``.

Example:
    >>> echo("\\ud800"), echo([[[[[[[[1]]]]]]]])
    ('\\\\ud800', '[[[[[[[...]]]]]]]')
    >>> log = ErrorLog(burst=2, period=60.0)
    >>> [log.allow() for _ in range(4)], log.suppressed
    ([True, True, False, False], 2)
"""

from __future__ import annotations

import json
import logging
import reprlib
import time
from typing import Any, Final

from pydantic import ValidationError

from openenv_gym.wire.messages import ErrorCode, error_message, printable

#: Longest echo of client input (characters) in an error reply.
MAX_ECHO_CHARS: Final = 200
#: Warnings a session may log at once before it is throttled.
ERROR_LOG_BURST: Final = 5
#: Then one warning per this many seconds (with the count of the ones left out).
ERROR_LOG_PERIOD: Final = 10.0

_REPR = reprlib.Repr()
_REPR.maxlevel = 6
_REPR.maxstring = MAX_ECHO_CHARS
_REPR.maxother = MAX_ECHO_CHARS
_REPR.maxlong = 60


def echo(value: Any) -> Any:
    """``value`` if it is a short JSON scalar, else a short printable repr of it."""
    if value is None or type(value) is bool or type(value) is float:
        return value
    if type(value) is int:
        return value if -(2**63) <= value < 2**64 else printable(_REPR.repr(value))
    if type(value) is str:
        return printable(value, MAX_ECHO_CHARS)
    try:
        return printable(_REPR.repr(value), MAX_ECHO_CHARS)
    except Exception:  # a repr that fails (deep or hostile objects)
        return f"<{type(value).__name__}>"


def _location(parts: Any) -> list[Any]:
    return [p if type(p) is int else printable(str(p), 100) for p in parts]


def validation_error_reply(exc: ValidationError) -> dict[str, Any]:
    """The ``VALIDATION_ERROR`` reply to an invalid action, its input echoes cut short."""
    details = exc.errors(include_url=False, include_context=False, include_input=True)
    errors = [
        {
            "type": str(e.get("type", "")),
            "loc": _location(e.get("loc", ())),
            "msg": printable(str(e.get("msg", "")), 300),
            "input": echo(e.get("input")),
        }
        for e in details[:20]
    ]
    first = errors[0] if errors else {"loc": [], "msg": ""}
    where = ".".join(str(part) for part in first["loc"]) or "<root>"
    return error_message(
        ErrorCode.VALIDATION_ERROR,
        f"Invalid message: {exc.error_count()} validation error(s) for "
        f"{printable(exc.title, 100)}: {where}: {first['msg']}",
        errors=errors,
    )


def describe(exc: BaseException) -> str:
    """``Type: message`` of an exception, short and printable."""
    try:
        text = str(exc)
    except Exception:  # a __str__ that fails (or recurses) on hostile input
        text = ""
    return f"{type(exc).__name__}: {printable(text, 500)}" if text else type(exc).__name__


def execution_error_reply(exc: BaseException) -> dict[str, Any]:
    """The ``EXECUTION_ERROR`` reply to an environment that raised."""
    return error_message(ErrorCode.EXECUTION_ERROR, describe(exc))


def _printable_tree(value: Any, depth: int = 0) -> Any:
    if depth > 8:
        return echo(value)
    if isinstance(value, dict):
        return {printable(str(k), 100): _printable_tree(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_printable_tree(v, depth + 1) for v in value[:50]]
    return echo(value)


def encode_error_reply(message: dict[str, Any]) -> bytes:
    """Encode an error reply whose plain encoding failed: every string made printable.

    Never raises: a reply that cannot be rebuilt becomes a bare error with the same code.
    """
    data = message.get("data") or {}
    code = data.get("code", ErrorCode.EXECUTION_ERROR.value)
    try:
        return json.dumps(
            {"type": "error", "data": _printable_tree(data)}, separators=(",", ":")
        ).encode()
    except Exception:
        fallback = {"message": "the error reply could not be encoded", "code": str(code)}
        return json.dumps({"type": "error", "data": fallback}, ensure_ascii=True).encode()


class ErrorLog:
    """A per-session gate for warnings: ``burst`` at once, then one per ``period`` seconds.

    Call :meth:`allow` before logging; when it says ``True``, :attr:`suppressed` holds how many
    were left out since the last allowed one (mention it in the line, then it resets).
    """

    __slots__ = ("_last", "_tokens", "burst", "period", "suppressed")

    def __init__(self, burst: int = ERROR_LOG_BURST, period: float = ERROR_LOG_PERIOD) -> None:
        self.burst = burst
        self.period = period
        self._tokens = float(burst)
        self._last = time.monotonic()
        self.suppressed = 0

    def allow(self) -> bool:
        """Whether one more warning may be logged now."""
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._last) / self.period)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        self.suppressed += 1
        return False

    def warn(self, logger: logging.Logger, message: str, *args: Any) -> None:
        """Log ``message % args`` at WARNING (once allowed) and its traceback at DEBUG.

        Call it from an ``except`` block: the traceback is the exception being handled.
        """
        if not self.allow():
            return
        if self.suppressed:
            message += " (%d similar messages suppressed)"
            args = (*args, self.suppressed)
            self.suppressed = 0
        logger.warning(message, *args)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("traceback of the failure above", exc_info=True)


__all__ = [
    "ERROR_LOG_BURST",
    "ERROR_LOG_PERIOD",
    "MAX_ECHO_CHARS",
    "ErrorLog",
    "describe",
    "echo",
    "encode_error_reply",
    "execution_error_reply",
    "validation_error_reply",
]
