"""The client side of the wire: the event loop, WebSocket sessions, HTTP calls, capacity.

* :mod:`.loop`: the process's one background event loop (:func:`background_loop`,
  :func:`run_sync`).
* :mod:`.session`: WebSocket sessions on an event loop (:class:`Session`,
  :func:`exchange_many`); :mod:`.sync_session`: :class:`SyncSession` for synchronous code,
  over a blocking socket (:mod:`.blocking`).
* :mod:`.http`: ``GET /health``, ``/schema``, ... and bearer tokens.
* :mod:`.capacity`: ``GET /capacity`` and the error for too few session slots.
"""

from openenv_gym.client.http import (
    DEFAULT_CONNECT_TIMEOUT,
    TOKEN_ENV_VAR,
    auth_headers,
    fetch_schema,
    get_json,
    is_healthy,
    is_loopback_url,
    resolve_token,
)
from openenv_gym.client.loop import background_loop, run_sync
from openenv_gym.client.session import (
    DEFAULT_ENCODING,
    DEFAULT_MAX_MESSAGE_SIZE,
    DEFAULT_REPLY_TIMEOUT,
    ENCODINGS,
    Session,
    check_encoding,
    exchange_many,
)
from openenv_gym.client.sync_session import SyncSession

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_ENCODING",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "DEFAULT_REPLY_TIMEOUT",
    "ENCODINGS",
    "TOKEN_ENV_VAR",
    "Session",
    "SyncSession",
    "auth_headers",
    "background_loop",
    "check_encoding",
    "exchange_many",
    "fetch_schema",
    "get_json",
    "is_healthy",
    "is_loopback_url",
    "resolve_token",
    "run_sync",
]
