"""WebSocket sessions to OpenEnv servers on one background asyncio loop, and the HTTP calls.

Every session of the process lives on a single event loop that runs in a daemon thread
(:func:`background_loop`). Synchronous code (a Gymnasium ``step``) hands a coroutine to that
loop and blocks on its result with :func:`run_sync`; vectorized code can start many
requests on the loop at once and gather them, so N round trips overlap.

Every network call has a timeout: opening a connection (``connect_timeout``) and waiting
for each reply (``reply_timeout``). A reply that does not come in time closes the session:
a late reply would otherwise be paired with the next request.

Observation encoding (``encoding=``): ``"auto"`` (the default) offers the WebSocket
subprotocol ``openenv-gym.binary.v1`` and uses it when the server accepts it (our servers
do; official ones ignore the offer and speak plain JSON); ``"json"`` offers nothing;
``"binary"`` requires it and raises :class:`~openenv_gym.errors.BinaryEncodingRefusedError`
when the server does not accept it. See :mod:`openenv_gym.binary_frames`.

Per-message compression (permessage-deflate) is turned off: on a 100 KB observation frame
it costs 4-5x the time of sending it uncompressed over loopback.

Example:
    >>> session = SyncSession.connect("http://127.0.0.1:8000")  # doctest: +SKIP
    >>> reply = session.request(reset_message(seed=0))           # doctest: +SKIP
    >>> session.close()                                           # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ipaddress
import os
import threading
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, Final, TypeVar
from urllib.parse import urlsplit

import httpx
from websockets.asyncio.client import ClientConnection, connect, unix_connect
from websockets.exceptions import (
    ConnectionClosed,
    InvalidHandshake,
    InvalidStatus,
    InvalidURI,
)
from websockets.typing import Subprotocol

from openenv_gym.binary_frames import BINARY_SUBPROTOCOL, decode_frame, is_binary_frame
from openenv_gym.errors import (
    AuthenticationError,
    BinaryEncodingRefusedError,
    ConnectionLostError,
    NotAnOpenEnvServerError,
    OpenEnvGymError,
    ProtocolError,
    ReplyTimeoutError,
    ServerConnectionError,
    SessionClosedError,
    UnknownEncodingError,
)
from openenv_gym.protocol import (
    HEALTH_PATH,
    SCHEMA_PATH,
    ObservationReply,
    StateReply,
    close_message,
    encode_message,
    http_to_ws_url,
    parse_server_message,
    parse_server_object,
    ws_to_http_url,
)
from openenv_gym.wsframes import send_frame

T = TypeVar("T")

DEFAULT_CONNECT_TIMEOUT: Final = 10.0
DEFAULT_REPLY_TIMEOUT: Final = 60.0
DEFAULT_MAX_MESSAGE_SIZE: Final = 64 * 2**20
#: The values of ``encoding=``.
ENCODINGS: Final = ("auto", "json", "binary")
DEFAULT_ENCODING: Final = "auto"


def check_encoding(encoding: str) -> str:
    """Return ``encoding`` if it is one of :data:`ENCODINGS`.

    Raises:
        UnknownEncodingError: It is not.
    """
    if encoding not in ENCODINGS:
        raise UnknownEncodingError(
            f"expected encoding='auto', 'json' or 'binary', got {encoding!r}. 'auto' uses "
            "raw-byte observations when the server supports them and JSON otherwise."
        )
    return encoding


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


def _auth_error(url: str, status: int, token: str | None) -> AuthenticationError:
    sent = "a token that it refused" if token else "no token"
    return AuthenticationError(
        f"{url} answered HTTP {status}: the server requires a bearer token and we sent {sent}. "
        f"Pass token=... (or set {TOKEN_ENV_VAR}) to the token the server was started with "
        "(`openenv-gym serve ... --token` or its OPENENV_TOKEN).",
        url=url,
    )


# --------------------------------------------------------------------------- the loop


class _LoopThread:
    """An asyncio loop running forever in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        self.thread = threading.Thread(target=self._run, name="openenv-gym-loop", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()


_loop_thread: _LoopThread | None = None
_loop_lock = threading.Lock()


def background_loop() -> asyncio.AbstractEventLoop:
    """The process's one event loop for sessions, started on first use.

    A forked child gets a loop of its own (the parent's thread does not survive a fork).
    """
    global _loop_thread
    with _loop_lock:
        if _loop_thread is None or _loop_thread.pid != os.getpid():
            _loop_thread = _LoopThread()
        return _loop_thread.loop


def _forget_loop_after_fork() -> None:
    global _loop_thread, _loop_lock
    _loop_thread = None
    _loop_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_loop_after_fork)


def run_sync(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coro`` on the background loop and block until it is done.

    Raises:
        RuntimeError: Called from the background loop's own thread (it would deadlock).
    """
    loop = background_loop()
    owner = _loop_thread
    if owner is not None and threading.current_thread() is owner.thread:
        coro.close()
        raise RuntimeError(
            "run_sync() was called from the openenv-gym event loop thread; "
            "await the coroutine instead"
        )
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise


def is_loopback_url(url: str) -> bool:
    """Whether the URL's host is on the loopback interface (no proxy is used for it)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --------------------------------------------------------------------------- sessions


class Session:
    """One OpenEnv WebSocket session (one env instance on the server), used on the loop.

    Create it with :meth:`open`. Requests are strictly one at a time: send, then await
    the reply.
    """

    def __init__(
        self,
        connection: ClientConnection,
        *,
        url: str,
        reply_timeout: float,
    ) -> None:
        self._connection = connection
        self.url = url
        self.reply_timeout = reply_timeout
        self.closed = False
        #: Whether observation replies may come as binary frames (the subprotocol was agreed).
        self.binary = connection.subprotocol == BINARY_SUBPROTOCOL

    @property
    def subprotocol(self) -> str | None:
        """The WebSocket subprotocol the server agreed to, if any."""
        return self._connection.subprotocol

    @classmethod
    async def open(
        cls,
        base_url: str,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        reply_timeout: float = DEFAULT_REPLY_TIMEOUT,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        headers: Mapping[str, str] | None = None,
        subprotocols: Sequence[str] | None = None,
        encoding: str = DEFAULT_ENCODING,
        token: str | None = None,
        unix_path: str | None = None,
    ) -> Session:
        """Open a session at ``{base_url}/ws``.

        ``token`` (default: ``$OPENENV_TOKEN``) is sent as ``Authorization: Bearer``.
        With ``unix_path`` the connection goes to that Unix socket of the same server
        (``openenv-gym serve --unix-socket``); ``base_url`` still names the session.

        Args:
            encoding: ``"auto"``, ``"json"`` or ``"binary"`` (see the module docstring).

        Raises:
            AuthenticationError: The server refused the token (HTTP 401/403).
            ServerConnectionError: Nothing accepts connections there, or not in time.
            NotAnOpenEnvServerError: Something answered, but refused the WebSocket at ``/ws``.
            BinaryEncodingRefusedError: ``encoding="binary"`` and the server refused it.
            UnknownEncodingError: ``encoding`` is not a known value.
        """
        check_encoding(encoding)
        url = _ws_url_or_raise(base_url)
        offered = list(subprotocols or ())
        if encoding != "json" and BINARY_SUBPROTOCOL not in offered:
            offered.insert(0, BINARY_SUBPROTOCOL)
        token = resolve_token(token)
        options: dict[str, Any] = {
            "compression": None,
            "open_timeout": connect_timeout,
            "max_size": max_message_size,
            "additional_headers": {**auth_headers(token), **dict(headers or {})},
            "subprotocols": [Subprotocol(p) for p in offered] if offered else None,
            "ping_interval": None,
            "close_timeout": 2,
        }
        try:
            if unix_path is not None:
                connection = await unix_connect(unix_path, uri=url, **options)
            elif is_loopback_url(url):
                connection = await connect(url, proxy=None, **options)
            else:
                connection = await connect(url, proxy=True, **options)
        except InvalidStatus as exc:
            status = exc.response.status_code
            if status in (401, 403):
                raise _auth_error(url, status, token) from exc
            raise NotAnOpenEnvServerError(
                f"{url} answered HTTP {status} instead of opening a WebSocket: this is not an "
                f"OpenEnv server, or base_url is wrong. Expected an OpenEnv server whose "
                f"WebSocket endpoint is {{base_url}}/ws (base_url={base_url!r}).",
                url=url,
            ) from exc
        except InvalidURI as exc:
            raise ServerConnectionError(
                f"{base_url!r} is not a valid server URL ({exc}); expected e.g. "
                "'http://127.0.0.1:8000'",
                url=url,
            ) from exc
        except InvalidHandshake as exc:
            raise NotAnOpenEnvServerError(
                f"{url} did not complete a WebSocket handshake ({exc}): this is not an "
                "OpenEnv server, or base_url is wrong.",
                url=url,
            ) from exc
        except TimeoutError as exc:
            raise ServerConnectionError(
                f"could not open {url} within {connect_timeout:g}s. Check that the server is "
                "up and reachable, or raise connect_timeout.",
                url=url,
            ) from exc
        except OSError as exc:
            raise ServerConnectionError(
                f"could not connect to {url}: {exc.strerror or exc}. Is an OpenEnv server "
                "running there? Start one with `openenv-gym serve ...`, or leave base_url "
                "unset to let openenv-gym start an embedded server.",
                url=url,
            ) from exc
        session = cls(connection, url=url, reply_timeout=reply_timeout)
        if encoding == "binary" and not session.binary:
            await session.close()
            raise BinaryEncodingRefusedError(
                f"the server at {url} did not accept the binary observation encoding "
                f"(WebSocket subprotocol {BINARY_SUBPROTOCOL!r}); it is probably an official "
                "OpenEnv server. Use encoding='auto' (binary when available, JSON otherwise) "
                "or encoding='json'.",
                url=url,
            )
        return session

    async def request(self, message: dict[str, Any]) -> ObservationReply | StateReply:
        """Send one message and return the parsed reply.

        Raises:
            ServerReplyError: The server answered with an error (the session lives on).
            ReplyTimeoutError: No reply within ``reply_timeout`` (the session is closed).
            ConnectionLostError: The connection closed (the session is closed).
            ProtocolError: The reply is not an OpenEnv message.
            SessionClosedError: The session was closed before.
        """
        raw = await self.request_raw(encode_message(message))
        if self.binary and isinstance(raw, bytes) and is_binary_frame(raw):
            message = decode_frame(raw)
            return parse_server_object(message, f"<binary frame, {len(raw)} bytes>", url=self.url)
        return parse_server_message(raw, url=self.url)

    async def request_raw(self, frame: str | bytes) -> str | bytes:
        """Send one frame and return the raw reply frame (see :meth:`request`)."""
        if self.closed:
            raise SessionClosedError(
                f"the session to {self.url} is closed; create a new env (or call reset on a "
                "reconnecting env) to go on"
            )
        # A refused session sends an error frame, then closes: read what is queued.
        with contextlib.suppress(ConnectionClosed):
            await send_frame(self._connection, frame)
        try:
            # asyncio.timeout, not wait_for: no task per reply (it costs ~10% of a CartPole step).
            async with asyncio.timeout(self.reply_timeout):
                return await self._connection.recv()
        except TimeoutError as exc:
            await self._abort()
            raise ReplyTimeoutError(
                f"no reply from {self.url} within {self.reply_timeout:g}s; the session was "
                "closed (a late reply would be paired with the wrong request). Raise "
                "reply_timeout if the environment is slow.",
                url=self.url,
                timeout=self.reply_timeout,
            ) from exc
        except ConnectionClosed as exc:
            await self._abort()
            rcvd = exc.rcvd
            why = f"code {rcvd.code}, reason {rcvd.reason!r}" if rcvd else "no close frame"
            raise ConnectionLostError(
                f"the connection to {self.url} closed while waiting for a reply ({why}). "
                "The server may have stopped or dropped the session.",
                url=self.url,
            ) from exc

    async def _abort(self) -> None:
        self.closed = True
        await self._connection.close()

    async def close(self) -> None:
        """Say ``close`` to the server and close the connection. Idempotent, never raises."""
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(ConnectionClosed, OSError):
            await self._connection.send(encode_message(close_message()))
        with contextlib.suppress(TimeoutError, OSError):
            await asyncio.wait_for(self._connection.close(), 2.0)


async def exchange_many(
    sessions: Sequence[Session], frames: Sequence[str | bytes], timeout: float
) -> list[str | bytes | OpenEnvGymError]:
    """Send ``frames[i]`` on ``sessions[i]`` for every i, then collect every reply.

    All frames go out before the first reply is awaited, so the N round trips overlap; a
    vector env calls this once per batch (one hop to the loop thread per batch, no task or
    future per session). Failures are returned in place of the reply, never raised, so one
    broken session does not hide the others' replies:

    * ``SessionClosedError``: the session was closed before (nothing sent);
    * ``ReplyTimeoutError``: no reply within ``timeout`` seconds of the batch's start (the
      session is closed: a late reply would be paired with the next request);
    * ``ConnectionLostError``: the connection closed (the session is closed).
    """
    results: list[str | bytes | OpenEnvGymError | None] = [None] * len(sessions)
    for i, session in enumerate(sessions):
        if session.closed:
            results[i] = SessionClosedError(f"the session to {session.url} is closed")
            continue
        # A refused session sends an error frame, then closes: its reply is still queued.
        with contextlib.suppress(ConnectionClosed):
            await send_frame(session._connection, frames[i])
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    pending = 0
    try:
        # One deadline for the whole batch (a timeout context per reply costs more than a
        # CartPole step); on expiry the current await is cancelled and the rest time out.
        async with asyncio.timeout_at(deadline):
            for pending, session in enumerate(sessions):
                if results[pending] is not None:
                    continue
                try:
                    results[pending] = await session._connection.recv()
                except ConnectionClosed as exc:
                    await session._abort()
                    results[pending] = _lost(session, exc)
            pending = len(sessions)
    except TimeoutError:
        for i in range(pending, len(sessions)):
            session = sessions[i]
            if results[i] is not None:
                continue
            # Drop the connection at once: a closing handshake with a server that does not
            # answer would add close_timeout per session to the batch's timeout.
            session.closed = True
            session._connection.transport.abort()
            results[i] = ReplyTimeoutError(
                f"no reply from {session.url} within {timeout:g}s; the session was closed",
                url=session.url,
                timeout=timeout,
            )
    return results  # type: ignore[return-value]  # every slot is filled above


def _lost(session: Session, exc: ConnectionClosed) -> ConnectionLostError:
    rcvd = exc.rcvd
    why = f"code {rcvd.code}, reason {rcvd.reason!r}" if rcvd else "no close frame"
    return ConnectionLostError(
        f"the connection to {session.url} closed while waiting for a reply ({why}); "
        "the server may have stopped or dropped the session",
        url=session.url,
    )


def _ws_url_or_raise(base_url: str) -> str:
    try:
        return http_to_ws_url(base_url)
    except ValueError as exc:
        raise ServerConnectionError(str(exc), url=str(base_url)) from exc


class SyncSession:
    """Blocking facade over a :class:`Session` on the background loop."""

    def __init__(self, session: Session, *, call_timeout: float) -> None:
        self.session = session
        self._call_timeout = call_timeout

    @classmethod
    def connect(
        cls,
        base_url: str,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        reply_timeout: float = DEFAULT_REPLY_TIMEOUT,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        headers: Mapping[str, str] | None = None,
        subprotocols: Sequence[str] | None = None,
        encoding: str = DEFAULT_ENCODING,
        token: str | None = None,
    ) -> SyncSession:
        """Open a session (see :meth:`Session.open`) from synchronous code."""
        session = run_sync(
            Session.open(
                base_url,
                connect_timeout=connect_timeout,
                reply_timeout=reply_timeout,
                max_message_size=max_message_size,
                headers=headers,
                subprotocols=subprotocols,
                encoding=encoding,
                token=token,
            )
        )
        # The loop enforces the real timeouts; this outer bound only guards against a hang.
        return cls(session, call_timeout=reply_timeout + connect_timeout + 5.0)

    @property
    def url(self) -> str:
        """The session's ``ws://`` URL."""
        return self.session.url

    @property
    def closed(self) -> bool:
        """Whether the session is closed."""
        return self.session.closed

    def request(self, message: dict[str, Any]) -> ObservationReply | StateReply:
        """Blocking :meth:`Session.request`."""
        return run_sync(self.session.request(message), self._call_timeout)

    def request_observation(self, message: dict[str, Any]) -> ObservationReply:
        """A request whose reply must be an observation (reset, step).

        Raises:
            ProtocolError: A ``state`` reply came instead.
        """
        reply = self.request(message)
        if not isinstance(reply, ObservationReply):
            raise ProtocolError(
                f"expected an 'observation' reply to {message.get('type')!r} from {self.url}, "
                "got a 'state' reply",
                received=reply,
            )
        return reply

    def close(self) -> None:
        """Close the session. Idempotent."""
        if not self.session.closed:
            run_sync(self.session.close(), 10.0)


# --------------------------------------------------------------------------- HTTP


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
    base = ws_to_http_url(base_url).rstrip("/")
    url = base + path
    token = resolve_token(token)
    try:
        with httpx.Client(timeout=timeout, trust_env=not is_loopback_url(base)) as client:
            response = client.get(url, headers=auth_headers(token))
    except httpx.TimeoutException as exc:
        raise ServerConnectionError(
            f"GET {url} timed out after {timeout:g}s; is the server up?", url=url
        ) from exc
    except (httpx.TransportError, httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
        raise ServerConnectionError(
            f"could not reach {url}: {exc}. Is an OpenEnv server running at {base}? Start one "
            "with `openenv-gym serve ...`, or leave base_url unset to start an embedded server.",
            url=url,
        ) from exc
    if response.status_code in (401, 403):
        raise _auth_error(url, response.status_code, token)
    if response.status_code != 200:
        raise NotAnOpenEnvServerError(
            f"GET {url} answered HTTP {response.status_code}; an OpenEnv server answers 200 "
            f"there. Is {base} an OpenEnv server (and base_url without a path suffix)?",
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
    """``GET /schema``: ``{"action": JSONSchema, "observation": JSONSchema, "state": ...}``.

    Raises:
        AuthenticationError: The server refused the token.
        NotAnOpenEnvServerError: The reply lacks the action/observation schemas.
    """
    schema = get_json(base_url, SCHEMA_PATH, timeout=timeout, token=token)
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


def is_healthy(base_url: str, *, timeout: float = 2.0) -> bool:
    """Whether ``GET /health`` answers ``{"status": "healthy"}``. Never raises."""
    try:
        body = get_json(base_url, HEALTH_PATH, timeout=timeout)
    except ServerConnectionError:
        return False
    return isinstance(body, dict) and body.get("status") == "healthy"
