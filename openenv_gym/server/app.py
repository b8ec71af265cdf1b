"""OpenEnvServer: serve an :class:`~openenv_gym.server.Environment` over the OpenEnv protocol.

Built on asyncio's stream server and ``websockets``' sans-I/O protocol
(:mod:`openenv_gym.server.connection`), not on an ASGI stack: a step is answered inside the
event loop's read callback, so a round trip costs little more than a bare WebSocket echo.
:meth:`OpenEnvServer.run` uses ``uvloop`` when it is installed. Official ``openenv`` clients
(``GenericEnvClient``, ``EnvClient`` subclasses) work against it unchanged.

* ``/ws``: one WebSocket connection = one session = one environment from the factory
  (see :mod:`openenv_gym.server.session`).
* ``GET /health``, ``/schema``, ``/metadata``, ``/state`` (see :mod:`openenv_gym.server.routes`).
  The official HTTP-only ``POST /reset`` and ``POST /step`` too (:mod:`.http_api`;
  requests with a body are read by :mod:`.http_requests`, websockets' parser takes ``GET``).
* The best WebSocket subprotocol of :mod:`openenv_gym.wire.encoding`'s registry that a
  client offers is accepted (``openenv-gym.batch.v1``, else ``openenv-gym.binary.v1``:
  observation arrays then travel as raw bytes); any other offer, or none, gets plain
  OpenEnv JSON, as an official client expects.
* permessage-deflate is off: it costs several times the step time on large frames.
* Frames up to ``max_message_size`` (1 MiB by default) are served; larger ones, up to a hard
  cap of ``2 * max_message_size``, get a ``VALIDATION_ERROR`` reply and the session lives on.
  Beyond the hard cap websockets closes the connection with code 1009 (message too big),
  because the frame would have to be buffered in full first.
* Memory per connection is bounded whatever the peer sends or fails to read (pings,
  pipelined frames, big frames): see :mod:`openenv_gym.server.connection`.

Example:
    >>> from openenv_gym.envs.gymnasium import gymnasium_server
    >>> server = gymnasium_server("CartPole-v1", max_sessions=8)
    >>> server.run("127.0.0.1", 8000)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

from pydantic import BaseModel
from websockets.datastructures import Headers
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

from openenv_gym.busy_poll import DEFAULT_BUSY_POLL, BusyPoller
from openenv_gym.server.admission import (
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_MAX_PENDING,
    Admission,
)
from openenv_gym.server.batch import BatchHandler
from openenv_gym.server.connection import (
    MessageHandler,
    ServerConnection,
    connection_factory,
    wait_closed,
)
from openenv_gym.server.environment import Environment
from openenv_gym.server.event_loop import new_server_loop
from openenv_gym.server.heartbeat import DEFAULT_PING_INTERVAL, DEFAULT_PING_TIMEOUT, Heartbeat
from openenv_gym.server.http_api import RESET_PATH, STEP_PATH, HttpEnvApi
from openenv_gym.server.models import EnvironmentMetadata, State
from openenv_gym.server.routes import HttpRoutes
from openenv_gym.server.session import SessionManager
from openenv_gym.server.turn_end import TurnEnd
from openenv_gym.wire.encoding import accept_subprotocol, encoding_of
from openenv_gym.wire.messages import CAPACITY_PATH, SERVER_INBOUND_LIMIT, WORKER_HEADER
from openenv_gym.wire.shared_memory import remove_stale_files

logger = logging.getLogger("openenv_gym.server")

DEFAULT_MAX_SESSIONS: Final = 64
#: Frames up to ``HARD_CAP_FACTOR * max_message_size`` are read and answered with an error;
#: larger ones close the connection (1009).
HARD_CAP_FACTOR: Final = 2


#: Seconds :meth:`OpenEnvServer.stop` waits for connections to close before dropping them.
STOP_TIMEOUT: Final = 10.0
#: Seconds a stop asked by SIGTERM/SIGINT or :meth:`OpenEnvServer.request_stop` waits for the
#: peers' close frames: a client that reads answers at once; one that does not (a parent
#: exiting without ``close()``) must not hold the exit for the full close timeout.
PROMPT_STOP_GRACE: Final = 0.25


def format_url(host: str, port: int) -> str:
    """``http://host:port``, with IPv6 hosts in brackets."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class OpenEnvServer:
    """An OpenEnv-protocol server for one environment class.

    Args:
        env_factory: Builds one environment per session (and one throwaway for ``GET /state``).
        action_type: The pydantic model a ``step`` message's data is validated with.
        observation_type: Its JSON Schema is published under ``GET /schema``.
        state_type: The state model published under ``GET /schema``.
        metadata: ``GET /metadata``; asked once from a fresh environment when ``None``.
        max_sessions: Concurrent sessions; the next connection gets ``CAPACITY_REACHED``.
        idle_timeout: Close sessions silent for this many seconds; ``None`` keeps them.
        max_message_size: Largest client frame in bytes that is processed.
        token: A bearer token clients must send (``Authorization: Bearer``) on every route
            but ``/health`` and on the WebSocket handshake; ``None`` (default) checks nothing.
        busy_poll: Seconds to spin on the connections after a loop turn's replies, waiting
            for the next request awake (:mod:`openenv_gym.busy_poll`), while the measured
            gaps between requests say it pays (:mod:`.turn_end`); ``0`` never spins.
        handshake_timeout: Seconds a new connection has to send its whole request head
            (handshake, route or body request) before it is dropped (:mod:`.admission`).
        max_pending: Connections per process that may wait for their request head at once;
            beyond it the oldest is dropped.
        ping_interval: Seconds between pings of silent WebSocket connections
            (:mod:`.heartbeat`); ``None``: never ping, silent clients keep their sessions.
        ping_timeout: Seconds a ping may go unanswered before the connection is dropped and
            its sessions freed.

    Raises:
        ValueError: A limit is not positive.
    """

    def __init__(
        self,
        env_factory: Callable[[], Environment[Any, Any, Any]],
        *,
        action_type: type[BaseModel],
        observation_type: type[BaseModel],
        state_type: type[BaseModel] = State,
        metadata: EnvironmentMetadata | None = None,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        idle_timeout: float | None = None,
        max_message_size: int = SERVER_INBOUND_LIMIT,
        token: str | None = None,
        busy_poll: float = DEFAULT_BUSY_POLL,
        handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
        max_pending: int = DEFAULT_MAX_PENDING,
        ping_interval: float | None = DEFAULT_PING_INTERVAL,
        ping_timeout: float = DEFAULT_PING_TIMEOUT,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"expected max_sessions >= 1, got {max_sessions}")
        if idle_timeout is not None and idle_timeout <= 0:
            raise ValueError(f"expected idle_timeout > 0 seconds or None, got {idle_timeout}")
        if max_message_size < 1:
            raise ValueError(f"expected max_message_size >= 1 byte, got {max_message_size}")
        if busy_poll < 0:
            raise ValueError(f"expected busy_poll >= 0 seconds, got {busy_poll}")
        self.env_factory = env_factory
        self.action_type = action_type
        self.observation_type = observation_type
        self.state_type = state_type
        self.max_message_size = max_message_size
        self.routes = HttpRoutes(
            env_factory,
            action_type=action_type,
            observation_type=observation_type,
            state_type=state_type,
            metadata=metadata,
            token=token,
        )
        self.sessions = SessionManager(
            env_factory,
            action_type=action_type,
            max_sessions=max_sessions,
            idle_timeout=idle_timeout,
            max_message_size=max_message_size,
        )
        self.routes.add_route(CAPACITY_PATH, self.capacity)
        http_api = HttpEnvApi(env_factory, action_type=action_type)
        self.routes.add_body_route("POST", RESET_PATH, http_api.reset)
        self.routes.add_body_route("POST", STEP_PATH, http_api.step)
        self._connections: set[ServerConnection] = set()
        self.admission = Admission(handshake_timeout=handshake_timeout, max_pending=max_pending)
        self.heartbeat = (
            Heartbeat(ping_interval=ping_interval, ping_timeout=ping_timeout)
            if ping_interval is not None
            else None
        )
        self._turn_end = TurnEnd(BusyPoller(busy_poll) if busy_poll > 0 else None)
        self._calibration: asyncio.Future[Any] | None = None
        self._server: asyncio.Server | None = None
        self._unix_server: asyncio.Server | None = None
        self.unix_path: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_requested: asyncio.Event | None = None
        self._stop_task: asyncio.Task[None] | None = None
        self._stop_grace = STOP_TIMEOUT
        self.host: str | None = None
        self.port: int | None = None
        #: Processes serving this port (a :class:`~openenv_gym.server.workers.WorkerGroup`
        #: sets it in each worker).
        self.workers = 1

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server.

        Raises:
            RuntimeError: The server is not started.
        """
        if self.host is None or self.port is None:
            raise RuntimeError("the server is not started; call start() first")
        return format_url(self.host, self.port)

    @property
    def active_sessions(self) -> int:
        """The number of open sessions."""
        return self.sessions.active_sessions

    def capacity(self) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        """What ``GET /capacity`` answers: ``{"max_sessions": M, "active_sessions": A,
        "workers": W, "pid": P, "step_seconds": S}`` (counts over all ``W`` worker
        processes; ``pid`` of the answering worker; ``S``: seconds per environment step in
        it, or ``null``, see :mod:`openenv_gym.server.step_cost`). A batching client opens
        one connection per worker whose share of the sessions is worth it.

        The first request has the step cost calibrated, in a worker thread as the routes
        that build an environment do (sessions are served meanwhile), and waits for it.
        """
        calibration = self._calibration
        if calibration is None:
            loop = asyncio.get_running_loop()
            calibration = loop.run_in_executor(None, self.sessions.calibrate_step_cost)
            self._calibration = calibration
        if not calibration.done():
            return self._capacity_after(calibration)
        return self._capacity_now()

    async def _capacity_after(self, calibration: asyncio.Future[Any]) -> dict[str, Any]:
        with contextlib.suppress(Exception):  # a failed calibration leaves the cost unknown
            await asyncio.shield(calibration)
        return self._capacity_now()

    def _capacity_now(self) -> dict[str, Any]:
        budget = self.sessions.budget
        return {
            "max_sessions": budget.limit,
            "active_sessions": budget.active,
            "workers": self.workers,
            "pid": os.getpid(),
            "step_seconds": self.sessions.step_cost.seconds,
        }

    async def start(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        reuse_port: bool = False,
        unix_path: str | None = None,
    ) -> int:
        """Listen on ``host:port`` (``port=0``: a free port) and return the bound port.

        Args:
            reuse_port: Set ``SO_REUSEPORT`` so several server processes share the port.
            unix_path: Also serve sessions on this Unix socket (same handler and routes):
                local clients skip the TCP stack, several times cheaper per message.

        Raises:
            RuntimeError: The server is already started.
            OSError: The address cannot be bound.
        """
        if self._server is not None:
            raise RuntimeError(f"the server is already listening on {self.url}")
        loop = asyncio.get_running_loop()
        remove_stale_files()  # shared-memory files of server processes that died
        self.admission.start()  # the descriptor budget, before the listening sockets
        # Frames up to the hard cap are read (and answered with an error above
        # max_message_size); larger ones close the connection with 1009.
        factory = connection_factory(self, max_size=HARD_CAP_FACTOR * self.max_message_size)
        self._server = await loop.create_server(factory, host, port, reuse_port=reuse_port)
        if unix_path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(unix_path)
            self._unix_server = await loop.create_unix_server(factory, unix_path)
            self.unix_path = unix_path
            self.routes.unix_sockets = self.routes.unix_sockets or [unix_path]
        self._loop = asyncio.get_running_loop()
        self._stop_requested = asyncio.Event()
        self._stop_task = None
        self.sessions.start()
        if self.heartbeat is not None:
            self.heartbeat.start(lambda: self._connections)
        sockname = next(iter(self._server.sockets)).getsockname()
        self.host, self.port = host, int(sockname[1])
        logger.info("OpenEnv server listening on %s", self.url)
        return self.port

    async def stop(self, grace: float = STOP_TIMEOUT) -> None:
        """Close every session and its environment, and stop listening. Idempotent.

        Args:
            grace: Seconds to wait for the peers to answer the close frames before their
                connections are dropped.
        """
        if self._server is None:
            return
        if self._stop_task is None:
            self._stop_task = asyncio.get_running_loop().create_task(self._shutdown(grace))
        await asyncio.shield(self._stop_task)

    async def _shutdown(self, grace: float) -> None:
        server = self._server
        assert server is not None  # stop() checked
        server.close()  # stop listening
        if self._unix_server is not None:
            self._unix_server.close()
        connections = list(self._connections)
        for connection in connections:
            connection.close(1001)  # going away
        await wait_closed(connections, grace)
        await server.wait_closed()
        if self._unix_server is not None:
            await self._unix_server.wait_closed()
            self._unix_server = None
            if self.unix_path is not None:
                with contextlib.suppress(OSError):
                    os.unlink(self.unix_path)
        if self.heartbeat is not None:
            await self.heartbeat.stop()
        await self.sessions.stop()
        if self._stop_requested is not None:
            self._stop_requested.set()
        self._server = None
        logger.info("OpenEnv server stopped")

    def request_stop(self, grace: float = PROMPT_STOP_GRACE) -> None:
        """Ask a running :meth:`serve_forever` to stop, waiting ``grace`` seconds for the
        peers' close frames (SIGTERM and SIGINT call it). Thread-safe; safe to call twice."""
        self._stop_grace = grace
        loop, event = self._loop, self._stop_requested
        if loop is None or event is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(event.set)

    async def serve_forever(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        on_ready: Callable[[str, int], None] | None = None,
        *,
        reuse_port: bool = False,
        unix_path: str | None = None,
    ) -> None:
        """Start, call ``on_ready(host, port)``, then serve until stopped.

        :meth:`stop` (from this loop) or :meth:`request_stop` (from any thread) ends it.
        """
        bound = await self.start(host, port, reuse_port=reuse_port, unix_path=unix_path)
        assert self._stop_requested is not None  # set by start()
        try:
            if on_ready is not None:
                on_ready(host, bound)
            await self._stop_requested.wait()
        finally:
            await self.stop(self._stop_grace)

    def run(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        on_ready: Callable[[str, int], None] | None = None,
        *,
        reuse_port: bool = False,
        unix_path: str | None = None,
    ) -> None:
        """Serve in the current thread until SIGINT/SIGTERM or :meth:`request_stop`.

        In the main thread, SIGINT and SIGTERM stop the server while it runs; the handlers
        that were there before come back when it returns or raises (a port in use), so a
        host process (pytest, a notebook) still stops on Ctrl-C afterwards.
        """
        in_main = threading.current_thread() is threading.main_thread()
        stop_signals = (signal.SIGINT, signal.SIGTERM)
        previous = [signal.getsignal(sig) for sig in stop_signals] if in_main else []

        async def main() -> None:
            loop = asyncio.get_running_loop()
            if in_main:
                for sig in stop_signals:
                    with contextlib.suppress(NotImplementedError, RuntimeError):
                        loop.add_signal_handler(sig, self.request_stop)
            await self.serve_forever(
                host, port, on_ready, reuse_port=reuse_port, unix_path=unix_path
            )

        try:
            with asyncio.Runner(loop_factory=new_server_loop) as runner:
                runner.run(main())
        finally:
            for sig, handler in zip(stop_signals, previous, strict=False):
                if handler is not None:  # None: set outside Python, cannot be put back
                    signal.signal(sig, handler)

    # ----------------------------------------------------------------- connection hooks

    def process_request(
        self, connection: ServerConnection, request: Request
    ) -> Response | Awaitable[Response] | None:
        """A route's response, or ``None`` to accept the WebSocket handshake on ``/ws``."""
        return self.routes.process_request(request)

    def process_response(self, connection: ServerConnection, response: Response) -> None:
        """Name this process in the handshake response (:data:`WORKER_HEADER`)."""
        response.headers[WORKER_HEADER] = str(os.getpid())

    def select_subprotocol(self, offered: Sequence[Subprotocol]) -> Subprotocol | None:
        """The best registered encoding offered (:func:`~openenv_gym.wire.encoding.
        accept_subprotocol`); none: plain JSON (never fail: official clients offer none)."""
        accepted = accept_subprotocol(offered)
        return Subprotocol(accepted) if accepted is not None else None

    def open_handler(self, connection: ServerConnection) -> MessageHandler | None:
        """A session (or K on a batch connection) for an accepted ``/ws`` connection."""
        if encoding_of(connection.subprotocol).multiplexed:
            return BatchHandler(self.sessions, connection)
        return self.sessions.open_handler(connection)

    def answer_body_request(
        self, method: str, target: str, headers: Headers, body: bytes
    ) -> Awaitable[Response]:
        """``POST /reset``, ``POST /step`` (see :mod:`openenv_gym.server.http_requests`)."""
        return self.routes.answer_with_body(method, target, headers, body)

    @property
    def turn_end(self) -> TurnEnd:
        """The end of each loop turn (deferred replies, the spin), shared by this process's
        connections."""
        return self._turn_end

    @property
    def handshake_timeout(self) -> float:
        """Seconds a new connection has to send its whole request head."""
        return self.admission.handshake_timeout

    def connection_opened(self, connection: ServerConnection) -> bool:
        """Track an accepted connection (:meth:`stop` closes them all); ``False`` when the
        process has no room for it (:mod:`.admission`)."""
        self._connections.add(connection)
        return self.admission.opened(connection)

    def request_received(self, connection: ServerConnection) -> None:
        """``connection`` sent its request head: it is no longer pending."""
        self.admission.request_received(connection)

    def connection_closed(self, connection: ServerConnection) -> None:
        """Forget a closed connection."""
        self._connections.discard(connection)
        self.admission.closed(connection)


def probed_server(
    env_factory: Callable[[], Environment[Any, Any, Any]],
    *,
    state_type: type[BaseModel],
    action_type: type[BaseModel] | None = None,
    observation_type: type[BaseModel] | None = None,
    **server_kwargs: Any,
) -> OpenEnvServer:
    """An :class:`OpenEnvServer` of ``env_factory`` whose metadata (and models, where not
    given: the probe's ``action_model`` and ``observation_model``) come from one probe
    environment built and closed up front, so a bad option fails at server start."""
    probe = env_factory()
    try:
        action_type = action_type or probe.action_model  # type: ignore[attr-defined]
        observation_type = observation_type or probe.observation_model  # type: ignore[attr-defined]
        metadata = probe.get_metadata()
    finally:
        probe.close()
    return OpenEnvServer(
        env_factory,
        action_type=action_type,
        observation_type=observation_type,
        state_type=state_type,
        metadata=metadata,
        **server_kwargs,
    )


__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "HARD_CAP_FACTOR",
    "PROMPT_STOP_GRACE",
    "STOP_TIMEOUT",
    "OpenEnvServer",
    "format_url",
    "probed_server",
]
