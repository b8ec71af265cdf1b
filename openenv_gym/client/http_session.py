"""A session over plain HTTP, for servers with no ``/ws``: the first release of OpenEnv
(``openenv-core`` 0.1) and FastAPI apps written to the same API.

Such a server holds ONE environment: ``POST /reset`` (body: the reset keys), ``POST /step``
(body ``{"action": {...}}``, or the action's fields directly on some apps: sent from the
first step when ``/openapi.json`` said so, ``ConnectOptions(step_body="fields")``; unsaid,
a 422 for the first shape makes the session retry with the second, and keep it),
``GET /state``. Replies to
reset and step are ``{"observation": {...}, "reward": ..., "done": ...}``, as in the
WebSocket protocol's ``observation`` message; Gymnasium-style replies are read too
(``terminated``/``truncated`` for ``done``, ``info`` into the metadata, which becomes the
env's ``info``), a reset reply without ``observation`` is the observation itself, a
string observation is one text field, ``{"text": ...}``, and a reward object holding one
number is that number. A required ``POST /step`` body
field that is the session's (``ConnectOptions.session_fields``, e.g. a ``game_id`` the
reset reply hands out) is sent back on every step, as the last reply carried it (at its
top level or in its ``info``). One session per server: two clients of the same
server would share (and reset) its one environment, so a second open session to a server in
the same process is refused (``CapacityReachedError``; other processes cannot be seen).

Requests go out on one keep-alive ``httpx.Client`` in the caller's thread: no thread hop, no
event loop.

Example:
    >>> from openenv_gym.wire.messages import reset_message
    >>> session = HttpSession("http://127.0.0.1:8000")  # doctest: +SKIP
    >>> reply = session.request(reset_message(seed=0))  # doctest: +SKIP
    >>> session.close()  # doctest: +SKIP
    >>> HttpSession.form
    'http'
"""

from __future__ import annotations

import logging
import weakref
from typing import Any, ClassVar, Final

from openenv_gym.client.http import auth_error, auth_headers, is_loopback_url, resolve_token
from openenv_gym.client.options import HTTP_FORM, ConnectOptions
from openenv_gym.errors import (
    CapacityReachedError,
    ConnectionLostError,
    NoStateRouteError,
    NotAnOpenEnvServerError,
    ProtocolError,
    ReplyTimeoutError,
    ServerReplyError,
    SessionClosedError,
    SessionFieldError,
)
from openenv_gym.wire.messages import (
    MessageType,
    ObservationReply,
    StateReply,
    expect_observation,
    parse_server_object,
    printable,
    ws_to_http_url,
)

logger = logging.getLogger(__name__)

#: The HTTP routes of the first release, by WebSocket message type.
ROUTES: Final = {
    MessageType.RESET.value: ("POST", "/reset"),
    MessageType.STEP.value: ("POST", "/step"),
    MessageType.STATE.value: ("GET", "/state"),
}
_INVALID_BODY: Final = 422
#: The field a string observation is decoded into.
TEXT_OBSERVATION_KEY: Final = "text"
#: The HTTP sessions of this process (one per server: its one environment).
_OPEN: Final[weakref.WeakSet[HttpSession]] = weakref.WeakSet()


class HttpSession:
    """One session over HTTP (see the module docstring); the interface of
    :class:`~openenv_gym.client.sync_session.SyncSession`.

    Args:
        base_url: The server, e.g. ``"http://127.0.0.1:8000"``.
        options: Timeouts, headers and the token (the encoding options do not apply).
    """

    #: The form of the protocol this session speaks.
    form: ClassVar[str] = HTTP_FORM
    #: The Unix socket it goes through: none (HTTP requests go over TCP).
    unix_path: ClassVar[str | None] = None
    #: Observation arrays never come as raw bytes over HTTP.
    binary: ClassVar[bool] = False
    #: Sessions a server of this form holds.
    capacity: ClassVar[int] = 1

    def __init__(self, base_url: str, options: ConnectOptions | None = None) -> None:
        options = options or ConnectOptions()
        self.url = ws_to_http_url(base_url)
        if any(not other.closed and other.url == self.url for other in _OPEN):
            raise CapacityReachedError(
                f"{self.url} speaks HTTP only and holds ONE environment, which an open "
                "session of this process already drives: a second would reset and step the "
                "same environment. Close the other env first, or start one server per env "
                "and pass each its own base_url (e.g. gym.vector.SyncVectorEnv([lambda u=u: "
                "gym.make('openenv/Remote-v0', base_url=u) for u in urls]))",
                code="CAPACITY_REACHED",
                url=self.url,
            )
        import httpx  # here: importing it (and the CLI packages it loads) costs 50-100 ms

        self._token = resolve_token(options.token)
        self._client = httpx.Client(
            base_url=self.url,
            timeout=httpx.Timeout(options.reply_timeout, connect=options.connect_timeout),
            headers={**auth_headers(self._token), **options.headers},
            trust_env=not is_loopback_url(self.url),
        )
        self._reply_timeout = options.reply_timeout
        #: Whether ``POST /step`` takes the action's fields directly (``None``: not tried).
        self.flat_step: bool | None = None
        self.take_step_body(options.step_body)
        #: Step body fields echoed from the replies (the session's id, e.g. ``game_id``).
        self.session_fields: tuple[str, ...] = options.session_fields
        self._echo: dict[str, Any] = {}
        self._closed = False
        _OPEN.add(self)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (or the connection broke)."""
        return self._closed

    def take_step_body(self, step_body: str | None) -> None:
        """Send ``POST /step`` in the shape a source stated (see
        :attr:`ConnectOptions.step_body <openenv_gym.client.options.ConnectOptions>`);
        ``None`` leaves the shape to find on the first step.

        Example:
            >>> session = HttpSession.__new__(HttpSession)
            >>> session.take_step_body("fields"); session.flat_step
            True
        """
        self.flat_step = None if step_body is None else step_body == "fields"

    def request(self, message: dict[str, Any]) -> ObservationReply | StateReply:
        """Send one OpenEnv message as its HTTP request; return the parsed reply.

        Raises:
            SessionClosedError: The session is closed.
            ServerReplyError: The server refused the request (4xx/5xx; ``code`` says which).
            NotAnOpenEnvServerError: The route does not exist.
            ProtocolError: The reply is not an OpenEnv reply.
            ConnectionLostError, ReplyTimeoutError: The server went away or did not answer.
        """
        if self._closed:
            raise SessionClosedError(f"the HTTP session to {self.url} is closed")
        kind = message.get("type")
        if kind not in ROUTES:
            raise ProtocolError(
                f"an HTTP session sends {sorted(ROUTES)} messages, got type {kind!r}",
                received=message,
            )
        method, path = ROUTES[kind]
        data = message.get("data") or {}
        if kind == MessageType.STATE.value:
            body = self._call(method, path, None)
            if not isinstance(body, dict):
                raise ProtocolError(
                    f"expected GET {self.url}{path} to answer a JSON object (the state), got "
                    f"{printable(repr(body), 200)}",
                    received=body,
                )
            return StateReply(state=body)
        if kind == MessageType.STEP.value:
            body = self._step(data)
        else:
            body = self._call(method, path, data)
            if isinstance(body, dict) and "observation" not in body:
                body = {"observation": body}  # a reset reply that is the observation itself
        self._learn_session(body, path)
        return parse_server_object(
            {"type": MessageType.OBSERVATION.value, "data": openenv_reply(body)}, body
        )

    def _learn_session(self, body: Any, path: str) -> None:
        """Keep the session fields a reply carries (top level, else its ``info``).

        Raises:
            SessionFieldError: A reset reply lacks one.
        """
        info = body.get("info") if isinstance(body, dict) else None
        for name in self.session_fields:
            if isinstance(body, dict) and name in body:
                self._echo[name] = body[name]
            elif isinstance(info, dict) and name in info:
                self._echo[name] = info[name]
            elif path == ROUTES[MessageType.RESET.value][1]:
                keys = sorted(body) if isinstance(body, dict) else type(body).__name__
                raise SessionFieldError(
                    f"POST {self.url}/step requires the body field {name!r} (GET "
                    "/openapi.json), which is not the action's: it names the session, and "
                    f"the reset reply does not carry it (top level or in 'info'; reply keys: "
                    f"{keys}), so no step can send it. If {name!r} is an action field, pass "
                    "an action class that declares it: gym.make('openenv/Remote-v0', "
                    f"base_url={self.url!r}, action_model=MyAction)",
                    field=name,
                    received=printable(repr(body), 300),
                )

    def request_observation(self, message: dict[str, Any]) -> ObservationReply:
        """A request whose reply must be an observation (reset, step)."""
        reply = self.request(message)
        if isinstance(reply, ObservationReply):  # the common case: no URL built
            return reply
        return expect_observation(reply, message, self.url)

    def _step(self, action: dict[str, Any]) -> Any:
        """``POST /step`` in the shape the server takes, found on the first step."""
        if self.flat_step:
            return self._call("POST", "/step", {**action, **self._echo})
        try:
            body = self._call("POST", "/step", {"action": action, **self._echo})
        except ServerReplyError as exc:
            if self.flat_step is not None or exc.data.get("status") != _INVALID_BODY:
                raise
            body = self._call("POST", "/step", {**action, **self._echo})
            logger.info("%s/step takes the action's fields directly, not {'action': ...}", self.url)
            self.flat_step = True
            return body
        self.flat_step = False
        return body

    def _call(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        import httpx  # imported by __init__: a look-up

        url = self.url + path
        try:
            response = self._client.request(method, path, json=body)
        except httpx.TimeoutException as exc:
            self.close()
            raise ReplyTimeoutError(
                f"{method} {url} did not answer within {self._reply_timeout:g}s "
                "(reply_timeout=...); the session is closed",
                url=url,
                timeout=self._reply_timeout,
            ) from exc
        except httpx.TransportError as exc:
            self.close()
            raise ConnectionLostError(
                f"{method} {url} failed: {exc or type(exc).__name__}; is the server up?",
                url=url,
            ) from exc
        status = response.status_code
        if status in (401, 403):
            raise auth_error(url, status, self._token)
        if status in (404, 405) and path == ROUTES[MessageType.STATE.value][1]:
            raise NoStateRouteError(
                f"{method} {url} answered HTTP {status}: this server has no state route, so "
                "state() is not available over its HTTP API (reset and step work without it)",
                url=url,
            )
        if status in (404, 405):
            raise NotAnOpenEnvServerError(
                f"{method} {url} answered HTTP {status}: the server has no OpenEnv WebSocket "
                f"endpoint (/ws) and no {method} {path} route either. Expected an OpenEnv "
                "server (POST /reset, POST /step, GET /state); is base_url right?",
                url=url,
            )
        if not 200 <= status < 300:
            code = "VALIDATION_ERROR" if status in (400, _INVALID_BODY) else "EXECUTION_ERROR"
            raise ServerReplyError(
                f"{method} {url} answered HTTP {status}: {printable(response.text, 300)}",
                code=code,
                url=url,
                data={"status": status, "body": response.text[:2000]},
            )
        try:
            return response.json()
        except ValueError as exc:
            raise ProtocolError(
                f"expected {method} {url} to answer JSON, got {printable(response.text, 200)}",
                received=response.text[:300],
            ) from exc

    def close(self) -> None:
        """Close the keep-alive connection. Idempotent, never raises (the server keeps its
        environment: HTTP has no ``close`` message)."""
        self._closed = True
        self._client.close()


def openenv_reply(body: Any) -> Any:
    """An HTTP reply in the OpenEnv shape: Gymnasium's ``terminated``/``truncated`` give
    ``done`` (when it is absent) and its ``info`` joins ``metadata``; a string observation
    becomes ``{"text": ...}``; a reward object holding one number (a reward model,
    ``{"score": 0.4}``) is that number. Anything else is returned unchanged (the parser
    judges it).

    Example:
        >>> openenv_reply({"observation": "3 patients", "reward": {"score": 1}, "terminated": False,
        ...                "truncated": True, "info": {"step": 4}})
        ... # doctest: +NORMALIZE_WHITESPACE
        {'observation': {'text': '3 patients'}, 'reward': 1, 'terminated': False,
         'truncated': True, 'info': {'step': 4}, 'done': True, 'metadata': {'step': 4}}
    """
    if not isinstance(body, dict):
        return body
    out = dict(body)
    if isinstance(out.get("observation"), str):
        out["observation"] = {TEXT_OBSERVATION_KEY: out["observation"]}
    reward = out.get("reward")
    if isinstance(reward, dict) and len(reward) == 1:  # a reward model: {"score": 0.4}
        (value,) = reward.values()
        if isinstance(value, int | float) and not isinstance(value, bool):
            out["reward"] = value
    flags = [out[k] for k in ("terminated", "truncated") if isinstance(out.get(k), bool)]
    if "done" not in out and flags:
        out["done"] = any(flags)
    info = out.get("info")
    if isinstance(info, dict) and isinstance(out.get("metadata", {}), dict):
        out["metadata"] = {**info, **(out.get("metadata") or {})}
    return out


__all__ = ["ROUTES", "TEXT_OBSERVATION_KEY", "HttpSession", "openenv_reply"]
