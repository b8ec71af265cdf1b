"""The client side of the wire: the event loop, WebSocket sessions, HTTP calls, capacity.

* :mod:`.blocking`: a WebSocket connection over a blocking socket (no event loop), and
  :mod:`.exchange`: one round trip on many of them (:func:`exchange_many`);
  :mod:`.keepalive`: the thread that answers the pings of idle connections.
* :mod:`.sync_session`: :class:`SyncSession`, a single env's session.
* :mod:`.session`: WebSocket sessions on an event loop (:class:`Session`), for HTTP proxies;
  :mod:`.loop`: event loops for them (:func:`background_loop`, :func:`run_sync`).
* :mod:`.http`: ``GET /health``, ``/schema``, ... and bearer tokens.
* :mod:`.capacity`: ``GET /capacity`` and the error for too few session slots.
"""

from openenv_gym.client.exchange import exchange_many
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
