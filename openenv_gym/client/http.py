"""The HTTP side of the client: ``GET`` calls (``/health``, ``/schema``, ...) and bearer tokens.

Example:
    >>> auth_headers("secret")
    {'Authorization': 'Bearer secret'}
    >>> is_loopback_url("http://127.0.0.1:8000")
    True
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from openenv_gym.errors import (
    AuthenticationError,
    NotAnOpenEnvServerError,
    NoWebSocketEndpointError,
    ServerConnectionError,
)
from openenv_gym.wire.messages import HEALTH_PATH, SCHEMA_PATH, ws_to_http_url

if TYPE_CHECKING:
    import httpx

DEFAULT_CONNECT_TIMEOUT: Final = 10.0

#: The environment variable holding the bearer token (client and server side).
TOKEN_ENV_VAR: Final = "OPENENV_TOKEN"


def resolve_token(token: str | None = None) -> str | None:
    """``token``, else the ``OPENENV_TOKEN`` environment variable, else ``None``."""
    if token is not None:
        return token
    return os.environ.get(TOKEN_ENV_VAR) or None


def auth_headers(token: str | None) -> dict[str, str]:
    """``{"Authorization": "Bearer <token>"}``, or ``{}`` without a token."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def auth_error(url: str, status: int, token: str | None) -> AuthenticationError:
    sent = "a token that it refused" if token else "no token"
    return AuthenticationError(
        f"{url} answered HTTP {status}: the server requires a bearer token and we sent {sent}. "
        f"Pass token=... (or set {TOKEN_ENV_VAR}) to the token the server was started with "
        "(`openenv-gym serve ... --token` or its OPENENV_TOKEN).",
        url=url,
    )


def upgrade_refusal(
    url: str, status: int, headers: Mapping[str, str], token: str | None
) -> ServerConnectionError:
    """The error for a WebSocket upgrade to ``url`` that the server answered with HTTP
    ``status`` (and response ``headers``), ``token`` being what was sent.

    A 401, or a 403 with ``WWW-Authenticate`` or after a token was sent, is a refused token
    (:class:`~openenv_gym.errors.AuthenticationError`). A 403 or 404 with no sign of
    authentication is what Starlette answers on an unknown path: the server has no ``/ws``
    (:class:`~openenv_gym.errors.NoWebSocketEndpointError`; a single env then speaks HTTP).

    Example:
        >>> type(upgrade_refusal("ws://127.0.0.1:1/ws", 403, {}, None)).__name__
        'NoWebSocketEndpointError'
        >>> type(upgrade_refusal("ws://127.0.0.1:1/ws", 403, {}, "secret")).__name__
        'AuthenticationError'
    """
    challenged = any(name.lower() == "www-authenticate" for name in headers)
    if status == 401 or (status == 403 and (challenged or token)):
        return auth_error(url, status, token)
    if status in (403, 404):
        return NoWebSocketEndpointError(
            f"{url} answered HTTP {status} to the WebSocket upgrade, with no sign of "
            "authentication (no WWW-Authenticate header, no token sent): the server has no "
            "OpenEnv WebSocket endpoint (a first-release openenv-core 0.1 server or a plain "
            "FastAPI app speaks HTTP only). gym.make('openenv/Remote-v0', base_url=...) speaks "
            "HTTP to it (POST /reset, POST /step, GET /state).",
            url=url,
        )
    return NotAnOpenEnvServerError(
        f"{url} answered HTTP {status} instead of opening a WebSocket: this is not an "
        "OpenEnv server, or base_url is wrong. Expected an OpenEnv server whose WebSocket "
        "endpoint is {base_url}/ws.",
        url=url,
    )


def is_loopback_url(url: str) -> bool:
    """Whether the URL's host is on the loopback interface (no proxy is used for it)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def http_get(
    base_url: str,
    path: str,
    *,
    timeout: float = DEFAULT_CONNECT_TIMEOUT,
    token: str | None = None,
) -> httpx.Response:
    """``GET {base_url}{path}`` (``token``, default ``$OPENENV_TOKEN``, sent as
    ``Authorization: Bearer``); the response, whatever its status.

    Raises:
        ServerConnectionError: Connection refused, timed out, or the URL is malformed.
    """
    import httpx  # here: importing it (and the CLI packages it loads) costs 50-100 ms

    base = ws_to_http_url(base_url)  # no trailing slash
    url = base + path
    try:
        with httpx.Client(timeout=timeout, trust_env=not is_loopback_url(base)) as client:
            return client.get(url, headers=auth_headers(resolve_token(token)))
    except httpx.TimeoutException as exc:
        raise ServerConnectionError(
            f"GET {url} timed out after {timeout:g}s; is the server up?", url=url
        ) from exc
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
        raise ServerConnectionError(
            f"{base!r} is not a server URL ({str(exc).rstrip('.')}); expected one like "
            "http://127.0.0.1:8000",
            url=url,
        ) from exc
    except httpx.TransportError as exc:
        raise ServerConnectionError(
            f"could not reach {url}: {str(exc).rstrip('.')}. Is an OpenEnv server running at "
            f"{base}? Start one "
            "with `openenv-gym serve ...`, or leave base_url unset to start an embedded server.",
            url=url,
        ) from exc


def get_json(
    base_url: str,
    path: str,
    *,
    timeout: float = DEFAULT_CONNECT_TIMEOUT,
    token: str | None = None,
) -> Any:
    """``GET {base_url}{path}`` and return the JSON body.

    ``token`` (default: ``$OPENENV_TOKEN``) is sent as ``Authorization: Bearer``.

    Raises:
        AuthenticationError: The server refused the token (HTTP 401/403).
        ServerConnectionError: Connection refused, timed out, or the URL is malformed.
        NotAnOpenEnvServerError: A non-2xx status, or a body that is not JSON.
    """
    base = ws_to_http_url(base_url)
    url = base + path
    response = http_get(base, path, timeout=timeout, token=token)
    if response.status_code in (401, 403):
        raise auth_error(url, response.status_code, resolve_token(token))
    if response.status_code != 200:
        raise NotAnOpenEnvServerError(
            f"GET {url} answered HTTP {response.status_code}",
            url=url,
        )
    try:
        return response.json()
    except ValueError as exc:
        raise NotAnOpenEnvServerError(
            f"GET {url} did not return JSON: {response.text[:200]!r}", url=url
        ) from exc


def fetch_schema(
    base_url: str, *, timeout: float = DEFAULT_CONNECT_TIMEOUT, token: str | None = None
) -> dict[str, Any]:
    """``GET /schema``: ``{"action": JSONSchema, "observation": JSONSchema, "state": ...}``
    (``action_schema`` / ``observation_schema`` are read as ``action`` / ``observation``).

    Raises:
        AuthenticationError: The server refused the token.
        NotAnOpenEnvServerError: The reply lacks the action/observation schemas.
    """
    schema = get_json(base_url, SCHEMA_PATH, timeout=timeout, token=token)
    for role in ("action", "observation") if isinstance(schema, dict) else ():
        alias = schema.get(f"{role}_schema")  # hand-written servers' names
        if not isinstance(schema.get(role), dict) and isinstance(alias, dict):
            schema[role] = alias
    if not (
        isinstance(schema, dict)
        and isinstance(schema.get("action"), dict)
        and isinstance(schema.get("observation"), dict)
    ):
        raise NotAnOpenEnvServerError(
            f"GET {base_url}{SCHEMA_PATH} returned {str(schema)[:200]!r}; expected an object "
            "with 'action' and 'observation' JSON Schemas",
            url=base_url,
        )
    return schema


def health(
    base_url: str, *, timeout: float = DEFAULT_CONNECT_TIMEOUT, token: str | None = None
) -> tuple[int, str]:
    """``GET /health``: its HTTP status and body text. Any 2xx is healthy (official servers
    answer ``{"status": "healthy"}``, many FastAPI apps ``{"status": "ok"}`` or nothing).

    Raises:
        ServerConnectionError: Connection refused, timed out, or the URL is malformed.
    """
    response = http_get(base_url, HEALTH_PATH, timeout=timeout, token=token)
    return response.status_code, response.text


def is_healthy(base_url: str, *, timeout: float = 2.0) -> bool:
    """Whether ``GET /health`` answers any 2xx. Never raises."""
    try:
        status, _ = health(base_url, timeout=timeout)
    except ServerConnectionError:
        return False
    return 200 <= status < 300


__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "TOKEN_ENV_VAR",
    "auth_error",
    "auth_headers",
    "fetch_schema",
    "get_json",
    "health",
    "http_get",
    "is_healthy",
    "is_loopback_url",
    "resolve_token",
    "upgrade_refusal",
]
