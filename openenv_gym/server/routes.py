"""The plain HTTP GET endpoints of the server, answered during the WebSocket handshake.

The server hands every ``GET`` request to :meth:`HttpRoutes.process_request` first.
A WebSocket upgrade to ``/ws`` goes on to the session handler; everything else gets a JSON
response and the connection is closed (no keep-alive):

* ``GET /health``   -> ``{"status": "healthy"}`` (and ``"unix_sockets": [...]``, the Unix
  sockets same-host clients may connect through, when the server listens on some)
* ``GET /schema``   -> ``{"action": ..., "observation": ..., "state": ...,
  "reset_observation": ...}`` (JSON Schemas; ``reset_observation`` is the observation
  schema, as the official server sends by default)
* ``GET /metadata`` -> the ``EnvironmentMetadata`` fields, nulls included
* ``GET /state``    -> the state of a freshly built environment (as the official server does)

``/metadata`` (when no metadata is given) and ``/state`` build an environment, which may take
long (an Atari emulator: ~90 ms): that happens once, in a worker thread, never on the event
loop, and the answer is kept, so these routes cost a dictionary lookup afterwards and cannot
slow the sessions of the server down however often they are called. (Every fresh environment
has the same initial state, so one answer serves all.)
* ``GET /capacity`` -> ``{"max_sessions": M, "active_sessions": A, "workers": W,
  "step_seconds": S}`` (our extension, added by :class:`~openenv_gym.server.OpenEnvServer`;
  clients use it before opening many sessions)
* anything else     -> 404 ``{"detail": "Not Found"}`` (also for upgrades to other paths)

With a ``token``, every route but ``/health`` (and the WebSocket handshake) needs
``Authorization: Bearer <token>``; the header is compared in constant time and a missing or
wrong one gets 401 ``{"detail": ...}`` with ``WWW-Authenticate: Bearer``.

Requests with a body (``POST /reset``, ``POST /step`` of the official HTTP API) are
registered with :meth:`HttpRoutes.add_body_route` and answered by
:meth:`HttpRoutes.answer_with_body` (websockets' own HTTP parser takes only ``GET``: the
server's :class:`~openenv_gym.server.http_requests.BodyRequestConnection` reads them first);
the handler runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import email.utils
import hmac
import http
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic import BaseModel
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from openenv_gym.server.bind_policy import check_token
from openenv_gym.server.environment import Environment
from openenv_gym.server.models import EnvironmentMetadata
from openenv_gym.wire.messages import (
    HEALTH_PATH,
    METADATA_PATH,
    SCHEMA_PATH,
    STATE_PATH,
    UNIX_SOCKETS_KEY,
    WS_PATH,
    encode_json,
)

logger = logging.getLogger("openenv_gym.server")


def json_response(
    status: int, body: Any, extra_headers: Sequence[tuple[str, str]] = ()
) -> Response:
    """A complete HTTP response with a JSON body and ``Connection: close``."""
    payload = encode_json(body)
    status_enum = http.HTTPStatus(status)
    headers = Headers(
        [
            ("Date", email.utils.formatdate(usegmt=True)),
            ("Connection", "close"),
            ("Content-Length", str(len(payload))),
            ("Content-Type", "application/json"),
            *extra_headers,
        ]
    )
    return Response(status_enum.value, status_enum.phrase, headers, payload)


def _is_upgrade(request: Request) -> bool:
    return "websocket" in request.headers.get("Upgrade", "").lower()


class HttpRoutes:
    """The GET endpoints of one server.

    Args:
        env_factory: Builds a throwaway environment for ``/state`` (and ``/metadata``
            when no metadata is given).
        action_type: Its JSON Schema is ``/schema``'s ``action``.
        observation_type: Its JSON Schema is ``/schema``'s ``observation``.
        state_type: Its JSON Schema is ``/schema``'s ``state``.
        metadata: What ``/metadata`` answers; asked from a fresh environment (once) if ``None``.
        token: The bearer token every route but ``/health`` requires; ``None``: no check.

    Raises:
        InsecureBindError: ``token`` is empty (it would check nothing).
    """

    def __init__(
        self,
        env_factory: Callable[[], Environment[Any, Any, Any]],
        *,
        action_type: type[BaseModel],
        observation_type: type[BaseModel],
        state_type: type[BaseModel],
        metadata: EnvironmentMetadata | None = None,
        token: str | None = None,
    ) -> None:
        check_token(token)
        self._env_factory = env_factory
        self._token = token.encode() if token is not None else None
        self._schema = {
            "action": action_type.model_json_schema(),
            "observation": observation_type.model_json_schema(),
            "state": state_type.model_json_schema(),
        }
        self._schema["reset_observation"] = self._schema["observation"]
        self._metadata = metadata
        #: The Unix sockets of every process serving this port, listed by ``GET /health``
        #: (set by the server; :mod:`openenv_gym.server.unix_sockets`).
        self.unix_sockets: list[str] = []
        self._body_routes: dict[tuple[str, str], Callable[[bytes], tuple[int, Any]]] = {}
        self._routes: dict[str, Callable[[], Any]] = {
            HEALTH_PATH: self._health,
            SCHEMA_PATH: lambda: self._schema,
        }
        #: Routes that build an environment: run once in a thread, then answered from here.
        self._built_routes: dict[str, Callable[[], Any]] = {
            METADATA_PATH: self._get_metadata,
            STATE_PATH: self._get_state,
        }
        self._built: dict[str, asyncio.Future[Any]] = {}
        if metadata is not None:
            self._routes[METADATA_PATH] = self._get_metadata

    def _health(self) -> dict[str, Any]:
        """``{"status": "healthy"}`` as the official server, plus (our extension)
        ``"unix_sockets"`` while the server also listens on some: same-host clients
        connect through them."""
        if not self.unix_sockets:
            return {"status": "healthy"}
        return {"status": "healthy", UNIX_SOCKETS_KEY: list(self.unix_sockets)}

    def add_route(self, path: str, handler: Callable[[], Any]) -> None:
        """Serve ``GET path`` with the JSON of ``handler()`` (e.g. ``/capacity``), or of
        what it awaits when it returns an awaitable (the loop serves on meanwhile)."""
        self._routes[path] = handler

    @property
    def schema(self) -> dict[str, Any]:
        """What ``GET /schema`` answers."""
        return self._schema

    def _get_metadata(self) -> dict[str, Any]:
        if self._metadata is None:  # in a worker thread (see _answer_built)
            env = self._env_factory()
            try:
                self._metadata = env.get_metadata()
            finally:
                env.close()
        return self._metadata.model_dump(mode="json")

    def _get_state(self) -> dict[str, Any]:
        env = self._env_factory()
        try:
            state = env.state
            return state.model_dump(mode="json") if isinstance(state, BaseModel) else dict(state)
        finally:
            env.close()

    def add_body_route(
        self, method: str, path: str, handler: Callable[[bytes], tuple[int, Any]]
    ) -> None:
        """Serve ``method path`` (e.g. ``POST /reset``) with ``handler(body) -> (status,
        JSON body)``; it runs in a worker thread."""
        self._body_routes[(method.upper(), path)] = handler

    async def answer_with_body(
        self, method: str, target: str, headers: Headers, body: bytes
    ) -> Response:
        """The response to a request with a body (the token checked as for every route)."""
        path = target.split("?", 1)[0]
        if self._token is not None:
            refusal = self._refusal(headers, f"{method} {path}")
            if refusal is not None:
                return refusal
        handler = self._body_routes.get((method.upper(), path))
        if handler is None:
            allowed = any(p == path for _, p in self._body_routes) or path in self._routes
            if allowed:
                return json_response(405, {"detail": "Method Not Allowed"})
            return json_response(404, {"detail": "Not Found"})
        try:
            status, answer = await asyncio.get_running_loop().run_in_executor(None, handler, body)
        except Exception as exc:
            logger.warning("%s %s failed", method, path, exc_info=True)
            return json_response(500, {"detail": f"{type(exc).__name__}: {exc}"})
        return json_response(status, answer)

    def _refusal(self, headers: Headers, what: str) -> Response | None:
        """``None`` when ``headers`` carry the token; else the response refusing ``what``:
        400 for several ``Authorization`` headers, 401 for a missing or wrong one."""
        assert self._token is not None  # only called with a token
        given = headers.get_all("Authorization")
        if len(given) > 1:
            logger.info("refused %s: %d Authorization headers", what, len(given))
            return json_response(
                400,
                {
                    "detail": f"Bad Request: expected one Authorization header, got "
                    f"{len(given)}; send a single 'Authorization: Bearer <token>'"
                },
            )
        scheme, _, value = (given[0] if given else "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self._token):
            return None
        logger.info("refused %s: missing or wrong bearer token", what)
        return json_response(
            401,
            {
                "detail": "Unauthorized: send 'Authorization: Bearer <token>' with the "
                "server's token"
            },
            [("WWW-Authenticate", 'Bearer realm="openenv"')],
        )

    async def _answer_built(self, path: str) -> Response:
        """Answer a route that builds an environment: built once off the loop, then kept."""
        future = self._built.get(path)
        if future is None or (future.done() and future.exception() is not None):
            future = asyncio.ensure_future(asyncio.to_thread(self._built_routes[path]))
            self._built[path] = future
        try:
            body = await asyncio.shield(future)
        except Exception as exc:
            logger.warning("GET %s failed: %s: %s", path, type(exc).__name__, exc)
            logger.debug("traceback of the failure above", exc_info=exc)
            return json_response(500, {"detail": f"{type(exc).__name__}: {exc}"})
        return json_response(200, body)

    def process_request(self, request: Request) -> Response | Awaitable[Response] | None:
        """A response to the ``GET`` ``request``, or ``None`` to open a session.

        Routes that build an environment answer with an awaitable (the connection awaits it).
        """
        path = request.path.split("?", 1)[0]
        if self._token is not None and path != HEALTH_PATH:
            refusal = self._refusal(request.headers, path)
            if refusal is not None:
                return refusal
        if _is_upgrade(request):
            if path == WS_PATH:
                return None
            return json_response(404, {"detail": "Not Found"})
        route = self._routes.get(path)
        if route is None and path in self._built_routes:
            return self._answer_built(path)
        if route is None:
            if path == WS_PATH:
                return json_response(
                    426, {"detail": "Upgrade Required: /ws takes WebSocket connections"}
                )
            return json_response(404, {"detail": "Not Found"})
        try:
            body = route()
        except Exception as exc:
            return _failed(path, exc)
        if inspect.isawaitable(body):
            return _answer_later(path, body)
        return json_response(200, body)


def _failed(path: str, exc: Exception) -> Response:
    logger.warning("GET %s failed: %s: %s", path, type(exc).__name__, exc)
    logger.debug("traceback of the failure above", exc_info=exc)
    return json_response(500, {"detail": f"{type(exc).__name__}: {exc}"})


async def _answer_later(path: str, body: Awaitable[Any]) -> Response:
    """The response of a route whose handler answered with an awaitable."""
    try:
        return json_response(200, await body)
    except Exception as exc:
        return _failed(path, exc)


__all__ = ["HttpRoutes", "json_response"]
