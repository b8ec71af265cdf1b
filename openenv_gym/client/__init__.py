"""The client side of the wire: the event loop, WebSocket sessions, HTTP calls, capacity.

* :mod:`.blocking`: a WebSocket connection over a blocking socket (no event loop; the socket
  from :mod:`.sockets`: TCP or Unix, HTTP proxy, TLS), and
  :mod:`.exchange`: one round trip on many of them (:func:`exchange_many`);
  :mod:`.keepalive`: the thread that answers the pings of idle connections.
* :mod:`.options`: :class:`ConnectOptions`, what every connection is opened with.
* :mod:`.sync_session`: :class:`SyncSession`, a single env's WebSocket session;
  :mod:`.http_session`: :class:`HttpSession`, one over plain HTTP (servers with no ``/ws``);
  :mod:`.session`: :func:`open_session`, which opens the form the server speaks.
* :mod:`.async_session`: WebSocket sessions on an event loop (:class:`AsyncSession`), for
  SOCKS proxies; :mod:`.loop`: event loops for them (:func:`background_loop`,
  :func:`run_sync`).

Encodings (``encoding=``) and the message-size limits live in :mod:`openenv_gym.wire`.
* :mod:`.http`: ``GET /health``, ``/schema``, ... and bearer tokens.
* :mod:`.capacity`: ``GET /capacity`` and the error for too few session slots.
"""

from openenv_gym.client.async_session import AsyncSession
from openenv_gym.client.exchange import exchange_many
from openenv_gym.client.http import (
    DEFAULT_CONNECT_TIMEOUT,
    TOKEN_ENV_VAR,
    auth_headers,
    fetch_schema,
    get_json,
    health,
    is_healthy,
    is_loopback_url,
    resolve_token,
)
from openenv_gym.client.http_session import HttpSession
from openenv_gym.client.loop import background_loop, run_sync
from openenv_gym.client.options import DEFAULT_REPLY_TIMEOUT, ConnectOptions
from openenv_gym.client.session import Session, form_summary, open_session, with_server_shape
from openenv_gym.client.sync_session import SyncSession

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_REPLY_TIMEOUT",
    "TOKEN_ENV_VAR",
    "AsyncSession",
    "ConnectOptions",
    "HttpSession",
    "Session",
    "SyncSession",
    "auth_headers",
    "background_loop",
    "exchange_many",
    "fetch_schema",
    "form_summary",
    "get_json",
    "health",
    "is_healthy",
    "is_loopback_url",
    "open_session",
    "resolve_token",
    "run_sync",
    "with_server_shape",
]
