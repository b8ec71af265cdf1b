"""How a client connects: :class:`ConnectOptions`, one frozen value instead of a dict of keywords.

Every connection an env, a vector env or a pool opens is described by one
:class:`ConnectOptions`: the encoding to ask for, the timeouts, busy-polling, the message-size
limit, extra HTTP headers, the bearer token and whether to compress observation frames. It
is built once (and checked once) where the user's keywords arrive, and passed down unchanged.

Example:
    >>> options = ConnectOptions(reply_timeout=5.0)
    >>> options.connect_timeout, options.reply_timeout
    (10.0, 5.0)
    >>> options.replace(token="secret").token
    'secret'
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from openenv_gym.busy_poll import DEFAULT_CLIENT_BUSY_POLL, check_busy_poll
from openenv_gym.client.http import DEFAULT_CONNECT_TIMEOUT
from openenv_gym.errors import EnvConfigError
from openenv_gym.wire.compressed import DEFAULT_COMPRESSION, check_compression
from openenv_gym.wire.encoding import DEFAULT_ENCODING, EncodingChoice, resolve_encoding
from openenv_gym.wire.messages import CLIENT_INBOUND_LIMIT

#: Seconds to wait for each reply by default.
DEFAULT_REPLY_TIMEOUT: Final = 60.0
#: The shapes of an HTTP ``POST /step`` body (``None``: found on the first step).
STEP_BODIES: Final = (None, "wrapped", "fields")
#: The ``form`` of a session over plain HTTP.
HTTP_FORM: Final = "http"


def _frozen_headers(headers: Mapping[str, str] | None) -> Mapping[str, str]:
    return MappingProxyType(dict(headers or {}))


@dataclass(frozen=True)
class ConnectOptions:
    """What every connection to a server is opened with.

    Attributes:
        encoding: ``"auto"``, ``"json"`` or ``"binary"`` (resolved through
            :mod:`openenv_gym.wire.encoding`; :attr:`encoding_choice` is what it asks for).
        connect_timeout: Seconds to open a connection (TCP, TLS, WebSocket handshake).
        reply_timeout: Seconds to wait for each reply; a late reply closes the session.
        busy_poll: Seconds to wait for a reply awake before sleeping in ``select`` (0 = never).
        max_message_size: The largest frame accepted from the server, in bytes
            (default :data:`~openenv_gym.wire.messages.CLIENT_INBOUND_LIMIT`).
        headers: Extra HTTP headers sent with the WebSocket handshake.
        token: The bearer token (``None``: no ``Authorization`` header).
        compression: ``"auto"`` (batch connections without shared memory and single
            sessions agree to compressed observation frames and measure, step by step,
            whether packed or raw frames cost less, whatever the peer's address; not a
            single session through a SOCKS proxy), ``"zstd"`` (on every connection, no
            shared memory) or
            ``"off"``; the rule is in :mod:`openenv_gym.wire.compressed` and
            :mod:`openenv_gym.wire.compression_policy`.
        step_body: How an HTTP session's ``POST /step`` takes the action, when a source
            said so (``space_sources.step_body``): ``"wrapped"`` (``{"action": {...}}``, a 422
            is the server's verdict) or ``"fields"`` (the action's fields directly, from the
            first step); ``None``: wrapped, retried as fields on a 422. WebSocket sessions
            ignore it.
        form: ``"http"`` opens HTTP sessions without trying ``/ws`` (a first-release
            server whose ``/ws`` is its web interface's); ``None``: WebSocket where ``/ws``
            speaks OpenEnv, else HTTP.
        session_fields: Required ``POST /step`` body fields that are the session's (e.g.
            ``game_id``, ``space_sources.session_fields``): an HTTP session sends each back
            as the last reset or step reply carried it. WebSocket sessions ignore it.

    Raises:
        EnvConfigError: A timeout, ``busy_poll``, the size limit or ``step_body`` is out of
            range.
        UnknownEncodingError: ``encoding`` is not one of the names above.
        UnknownCompressionError: ``compression`` is not one of the names above.
    """

    encoding: str = DEFAULT_ENCODING
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    reply_timeout: float = DEFAULT_REPLY_TIMEOUT
    busy_poll: float = DEFAULT_CLIENT_BUSY_POLL
    max_message_size: int = CLIENT_INBOUND_LIMIT
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    token: str | None = None
    compression: str = DEFAULT_COMPRESSION
    step_body: str | None = None
    form: str | None = None
    session_fields: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        resolve_encoding(self.encoding)
        check_compression(self.compression)
        object.__setattr__(self, "busy_poll", check_busy_poll(self.busy_poll))
        for name in ("connect_timeout", "reply_timeout"):
            value = getattr(self, name)
            if (
                not isinstance(value, int | float)
                or isinstance(value, bool)
                or not math.isfinite(value)
                or value <= 0
            ):
                raise EnvConfigError(
                    f"expected {name} to be a positive number of seconds, got {value!r}; "
                    f"pass e.g. {name}=30.0"
                )
        size = self.max_message_size
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            raise EnvConfigError(
                f"expected max_message_size to be a positive int (bytes), got {size!r}; "
                f"pass e.g. max_message_size={CLIENT_INBOUND_LIMIT}"
            )
        object.__setattr__(self, "headers", _frozen_headers(self.headers))
        if self.form not in (None, HTTP_FORM):
            raise EnvConfigError(
                f"expected form to be None or {HTTP_FORM!r}, got {self.form!r}; pass "
                f"form={HTTP_FORM!r} for a server whose /ws does not speak OpenEnv"
            )
        if self.step_body not in STEP_BODIES:
            raise EnvConfigError(
                f"expected step_body to be one of {STEP_BODIES}, got {self.step_body!r}; "
                "pass step_body='fields' for a server whose POST /step takes the action's "
                "fields directly"
            )

    @property
    def encoding_choice(self) -> EncodingChoice:
        """What :attr:`encoding` asks for: the subprotocols to offer, the one required."""
        return resolve_encoding(self.encoding)

    def replace(self, **changes: Any) -> ConnectOptions:
        """A copy with ``changes`` applied (and checked again)."""
        return dataclasses.replace(self, **changes)


__all__ = ["DEFAULT_REPLY_TIMEOUT", "HTTP_FORM", "STEP_BODIES", "ConnectOptions"]
