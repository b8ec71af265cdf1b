"""Opening a single env's session in the form the server speaks.

A server with ``/ws`` (``openenv`` 0.2 and later, our servers) gets a WebSocket session
(:class:`~openenv_gym.client.sync_session.SyncSession`), with the fastest encoding both
sides agree to. A server that refuses the upgrade with no sign of authentication (HTTP 403
or 404, no ``WWW-Authenticate``, no token sent: what Starlette answers on an unknown path),
and whose ``GET /health`` answers 2xx, has no ``/ws``: it gets an HTTP session
(:class:`~openenv_gym.client.http_session.HttpSession`; the first release, ``openenv-core``
0.1, and plain FastAPI apps). The fallback is logged at INFO. A session's ``form`` says which
was agreed: ``"websocket"``, ``"websocket+binary"``, ..., or ``"http"``.

Example:
    >>> session = open_session("http://127.0.0.1:8000")  # doctest: +SKIP
    >>> session.form  # doctest: +SKIP
    'websocket+binary'
    >>> form_summary("http")
    'http (one session per server)'
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TypeAlias

from openenv_gym.client.http import auth_error, health, resolve_token
from openenv_gym.client.http_session import HttpSession
from openenv_gym.client.local_sockets import local_unix_socket
from openenv_gym.client.options import ConnectOptions
from openenv_gym.client.sync_session import SyncSession
from openenv_gym.errors import (
    BinaryEncodingRefusedError,
    NotAnOpenEnvServerError,
    NoWebSocketEndpointError,
    ServerConnectionError,
)

logger = logging.getLogger(__name__)

#: A single env's session, in either form.
Session: TypeAlias = SyncSession | HttpSession


def open_session(
    base_url: str, options: ConnectOptions | None = None, *, unix_sockets: Sequence[str] = ()
) -> Session:
    """A session to ``base_url``: WebSocket where ``/ws`` exists, else HTTP (see the module
    docstring). The WebSocket of a same-host server goes through one of its Unix sockets
    (``unix_sockets``, an embedded server's, else those its ``GET /health`` lists; see
    :mod:`~openenv_gym.client.local_sockets`), and over TCP where none can be reached.

    Raises:
        AuthenticationError: The server refused the token (or asks for one).
        NotAnOpenEnvServerError: No ``/ws``, and ``GET /health`` does not answer 2xx.
        BinaryEncodingRefusedError: ``encoding="binary"`` was required of a server that
            speaks HTTP only.
        ServerConnectionError: The server cannot be reached.
    """
    options = options or ConnectOptions()
    if options.form == HttpSession.form:  # its /ws is known not to speak OpenEnv
        return HttpSession(base_url, options)
    unix_path = local_unix_socket(
        base_url, unix_sockets, timeout=options.connect_timeout, token=options.token
    )
    try:
        if unix_path is not None:
            try:
                return SyncSession.connect(base_url, options, unix_path=unix_path)
            except ServerConnectionError as exc:
                if type(exc) is not ServerConnectionError:  # refused, not unreachable
                    raise
                logger.debug("%s unreachable (%s): over TCP", unix_path, exc)
        return SyncSession.connect(base_url, options)
    except NoWebSocketEndpointError as refused:
        token = resolve_token(options.token)
        status, body = health(base_url, timeout=options.connect_timeout, token=token)
        if status in (401, 403):
            raise auth_error(refused.url, status, token) from refused
        if not 200 <= status < 300:
            raise NotAnOpenEnvServerError(
                f"{refused.url} refused the WebSocket upgrade (no OpenEnv WebSocket endpoint) "
                f"and GET /health answered HTTP {status} ({body[:100]!r}): expected an OpenEnv "
                f"server, which answers 2xx there. Is base_url={base_url!r} right?",
                url=refused.url,
            ) from refused
        if options.encoding_choice.required is not None:
            raise BinaryEncodingRefusedError(
                f"encoding={options.encoding!r} needs a WebSocket session, but {base_url} has "
                "no OpenEnv WebSocket endpoint (it speaks HTTP only); pass encoding='auto'",
                url=refused.url,
            ) from refused
        logger.info(
            "%s has no OpenEnv WebSocket endpoint (the upgrade at /ws got HTTP 403/404 "
            "with no sign of authentication); speaking HTTP: POST /reset, POST /step, "
            "GET /state, one session per server",
            base_url,
        )
        return HttpSession(base_url, options)


def with_server_shape(
    session: Session | None,
    options: ConnectOptions,
    *,
    step_body: str | None,
    form: str | None,
    session_fields: tuple[str, ...] = (),
) -> ConnectOptions:
    """``options`` for the sessions opened from now on, with what the schema sources learnt
    of the server: ``step_body`` (how ``POST /step`` takes the action, as ``/openapi.json``
    stated), ``form`` (``"http"``: its ``/ws`` is not OpenEnv's) and ``session_fields``
    (step body fields echoed from the replies, e.g. ``game_id``); an HTTP ``session``
    already open takes the step body and the session fields too.

    Example:
        >>> with_server_shape(None, ConnectOptions(), step_body="fields", form="http").form
        'http'
    """
    if isinstance(session, HttpSession):
        session.take_step_body(step_body)
        session.session_fields = session_fields
    return options.replace(step_body=step_body, form=form, session_fields=session_fields)


def form_summary(form: str) -> str:
    """A session's ``form`` in words, with what it implies for capacity."""
    return f"{form} (one session per server)" if form == HttpSession.form else form


__all__ = ["Session", "form_summary", "open_session", "with_server_shape"]
