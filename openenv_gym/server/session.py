"""WebSocket sessions: one connection, one environment instance, one message at a time.

:class:`SessionManager` is the connection handler behind ``/ws``. For each connection it
checks capacity, builds an environment with the factory, then answers every frame with
exactly one reply, the way the official ``openenv`` server (0.10.0) does:

==========================================  ==================================================
client frame                                 reply
==========================================  ==================================================
``{"type":"reset","data":{...}}``            ``observation`` (reset keys the env's ``reset``
                                             signature does not accept are dropped)
``{"type":"step","data":{<action>}}``        ``observation``
``{"type":"state"}``                         ``state``
``{"type":"close"}``                         none; the session ends
invalid JSON / non-UTF-8 binary frame        ``error`` ``INVALID_JSON``
not an object, wrong keys, invalid action    ``error`` ``VALIDATION_ERROR`` (with ``errors``
                                             for an invalid action)
unknown ``type``                             ``error`` ``UNKNOWN_TYPE``
env raises in reset/step/state               ``error`` ``EXECUTION_ERROR``
(env raises ``CodecError`` in step)          ``error`` ``VALIDATION_ERROR``
frame larger than ``max_message_size``       ``error`` ``VALIDATION_ERROR`` naming both sizes
==========================================  ==================================================

Encoding: each session writes its replies in the encoding its connection agreed
(:mod:`openenv_gym.wire.encoding`): with ``openenv-gym.binary.v1``, observation replies
whose observation holds numpy arrays go out as one binary frame (packed with zstd where a
compressed subprotocol was agreed; with ``openenv-gym.binary-zstd.v2`` a frame may say
``"compress": false`` for a raw reply, see :mod:`openenv_gym.wire.compressed`); everything
else stays JSON text. A batch connection (K sessions) is served by
:mod:`openenv_gym.server.batch`, on top of this module.

After any error reply the session lives on. Two cases end it: all session slots taken
(``CAPACITY_REACHED`` with ``active_sessions``/``max_sessions``, then close) and a factory
that raises (``FACTORY_ERROR``, then close). A session without a message for
``idle_timeout`` seconds is closed with code 1000 and reason ``"idle timeout"``.

Environment calls run inline on the event loop, inside the connection's ``data_received``
(:mod:`openenv_gym.server.connection`): no thread hop, no task per step. CPU-bound scaling
comes from several server processes, not from threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Callable
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from openenv_gym.errors import CodecError
from openenv_gym.server.budget import LocalSessionBudget, SessionBudget
from openenv_gym.server.connection import MessageHandler, ServerConnection
from openenv_gym.server.environment import Environment
from openenv_gym.server.fault_replies import (
    ErrorLog,
    describe,
    encode_error_reply,
    execution_error_reply,
    validation_error_reply,
)
from openenv_gym.server.step_cost import StepCost
from openenv_gym.wire.client_frames import ClientMessageError, parse_client_message
from openenv_gym.wire.compressed import check_compress_flag
from openenv_gym.wire.encoding import Encoding, encoding_of
from openenv_gym.wire.messages import (
    ErrorCode,
    MessageType,
    encode_json,
    error_message,
    observation_message,
    printable,
    state_reply_message,
)

logger = logging.getLogger("openenv_gym.server")

#: Close reason sent to a session closed for inactivity.
IDLE_CLOSE_REASON: Final = "idle timeout"
_OBSERVATION_EXCLUDE: Final = frozenset({"reward", "done"})
# Plain strings for the hot path (an enum member's attribute access costs a descriptor call).
_STEP: Final = MessageType.STEP.value
_RESET: Final = MessageType.RESET.value


def _factory_name(factory: Callable[..., Any]) -> str:
    return str(getattr(factory, "__qualname__", None) or getattr(factory, "__name__", factory))


def _describe(exc: BaseException) -> str:
    text = printable(str(exc), 1000)
    return text if text else type(exc).__name__


def _reset_kwargs_filter(env: Environment[Any, Any, Any]) -> Callable[[dict[str, Any]], Any]:
    """A function keeping the reset keys ``env.reset`` accepts (official ``_get_valid_kwargs``)."""
    try:
        parameters = inspect.signature(env.reset).parameters
    except (TypeError, ValueError):
        return lambda data: data
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return lambda data: data
    accepted = frozenset(parameters)
    return lambda data: {k: v for k, v in data.items() if k in accepted}


def serialize_observation(observation: Any) -> dict[str, Any]:
    """An ``observation`` reply for ``observation`` exactly like the official server's.

    The observation dict keeps ``metadata`` (the official ``serialize_observation`` only
    excludes ``reward`` and ``done``); a non-empty ``metadata`` also goes beside it.
    """
    if not isinstance(observation, BaseModel):
        raise TypeError(
            "expected the environment to return an Observation (a pydantic model), "
            f"got {type(observation).__name__}"
        )
    # warnings=False: environments may put numpy arrays into list fields (built without
    # validation); they pass through unchanged and are serialized by ``encode_json`` (as
    # lists) or sent as raw bytes on a binary session.
    fields = observation.model_dump(exclude=_OBSERVATION_EXCLUDE, warnings=False)  # type: ignore[arg-type]
    reward = getattr(observation, "reward", None)
    done = bool(getattr(observation, "done", False))
    return observation_message(fields, reward, done, fields.get("metadata"))


def _serialize_state(state: Any) -> dict[str, Any]:
    if isinstance(state, BaseModel):
        return state_reply_message(state.model_dump())
    return state_reply_message(dict(state) if state else {})


class EnvSession:
    """One live session: its connection, its env and when it last heard from the client.

    Attributes:
        encoding: The encoding its connection agreed (it writes the replies).
    """

    __slots__ = (
        "connection",
        "encoding",
        "env",
        "error_log",
        "filter_reset",
        "idle_closing",
        "last_activity",
    )

    def __init__(self, connection: ServerConnection, env: Environment[Any, Any, Any]) -> None:
        self.connection = connection
        self.env = env
        self.filter_reset = _reset_kwargs_filter(env)
        self.last_activity = time.monotonic()
        self.idle_closing = False
        self.encoding: Encoding = encoding_of(connection.subprotocol)
        self.error_log = ErrorLog()


class SessionManager:
    """Runs the ``/ws`` sessions of one server: capacity, dispatch, idle reaping, cleanup.

    Args:
        env_factory: Builds one environment per session.
        action_type: The pydantic model ``step`` data is validated with.
        max_sessions: Concurrent sessions; one more gets ``CAPACITY_REACHED``.
        idle_timeout: Seconds without a message before a session is closed; ``None``: never.
        max_message_size: Frames larger than this (bytes) get a ``VALIDATION_ERROR`` reply.
    """

    def __init__(
        self,
        env_factory: Callable[[], Environment[Any, Any, Any]],
        *,
        action_type: type[BaseModel],
        max_sessions: int,
        idle_timeout: float | None,
        max_message_size: int,
    ) -> None:
        self.env_factory = env_factory
        self.action_type = action_type
        self.max_sessions = max_sessions
        #: Counts sessions; a multi-worker server swaps in a SharedSessionBudget.
        self.budget: SessionBudget = LocalSessionBudget(max_sessions)
        self.idle_timeout = idle_timeout
        self.max_message_size = max_message_size
        self._sessions: set[EnvSession] = set()
        self._reaper: asyncio.Task[None] | None = None
        #: Open connections with a handler; with more than one, replies to single sessions
        #: are written at the end of the loop iteration (one wake-up of a client stepping
        #: many sessions at once, instead of one per reply).
        self.connections = 0
        #: Seconds per step of this process's environments, for ``GET /capacity``.
        self.step_cost = StepCost()
        #: Server-wide: a client reconnecting in a loop to a failing factory must not flood.
        self._factory_log = ErrorLog()

    @property
    def active_sessions(self) -> int:
        """The number of sessions holding an environment right now."""
        return len(self._sessions)

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Start the idle reaper (when an ``idle_timeout`` is set); needs a running loop."""
        if self.idle_timeout is not None and self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap_idle_sessions())

    async def stop(self) -> None:
        """Stop the reaper and close every environment still open."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        for session in list(self._sessions):
            self._sessions.discard(session)
            _close_env(session.env)

    async def _reap_idle_sessions(self) -> None:
        assert self.idle_timeout is not None  # only started with a timeout
        timeout = self.idle_timeout
        period = max(0.01, min(1.0, timeout / 4))
        while True:
            await asyncio.sleep(period)
            deadline = time.monotonic() - timeout
            for session in list(self._sessions):
                if session.last_activity <= deadline and not session.idle_closing:
                    session.idle_closing = True
                    logger.info("closing a session idle for %.1f s", timeout)
                    session.connection.close(1000, IDLE_CLOSE_REASON)

    # ----------------------------------------------------------------- connections

    def open_handler(self, connection: ServerConnection) -> MessageHandler | None:
        """The handler of a new plain ``/ws`` connection (one session); ``None`` when it
        was refused (the reply is sent and the connection closes). Batch connections are
        opened by :class:`~openenv_gym.server.batch.BatchHandler`."""
        budget = self.budget
        if not budget.try_acquire():
            active = budget.active
            self.send_and_close(
                connection,
                error_message(
                    ErrorCode.CAPACITY_REACHED,
                    f"Server at capacity: {active}/{budget.limit} sessions active. "
                    "Cannot accept new connections.",
                    active_sessions=active,
                    max_sessions=budget.limit,
                ),
            )
            return None
        opened = self.open_sessions(connection, 1)
        if opened is None:
            budget.release()
            return None
        return _SessionHandler(self, opened[0])

    def open_sessions(self, connection: ServerConnection, count: int) -> list[EnvSession] | None:
        """``count`` sessions on ``connection`` (slots already taken), each with its own
        environment; ``None`` after a factory failure (answered with ``FACTORY_ERROR``)."""
        envs: list[Environment[Any, Any, Any]] = []
        try:
            for _ in range(count):
                envs.append(self.env_factory())
        except Exception as exc:
            for env in envs:
                _close_env(env)
            name = _factory_name(self.env_factory)
            self._factory_log.warn(logger, "environment factory %s failed: %s", name, describe(exc))
            self.send_and_close(
                connection,
                error_message(
                    ErrorCode.FACTORY_ERROR,
                    f"Environment factory '{name}' failed to create instance: {describe(exc)}",
                    factory_name=name,
                ),
            )
            return None
        sessions = [EnvSession(connection, env) for env in envs]
        self._sessions.update(sessions)
        self.connections += 1
        return sessions

    def close_sessions(self, sessions: list[EnvSession]) -> None:
        """Forget ``sessions`` (all of one connection) and close their environments."""
        if sessions and any(s in self._sessions for s in sessions):
            self.connections -= 1
        for session in sessions:
            if session in self._sessions:
                self._sessions.discard(session)
                _close_env(session.env)

    def send_and_close(self, connection: ServerConnection, message: dict[str, Any]) -> None:
        """Send ``message`` (JSON text), then close ``connection``."""
        connection.send(encode_json(message), text=True)
        connection.close()

    # ----------------------------------------------------------------- messages

    def check_size(self, raw: bytes) -> None:
        """Refuse a frame over ``max_message_size``.

        Raises:
            ClientMessageError: ``VALIDATION_ERROR`` naming both sizes.
        """
        if len(raw) > self.max_message_size:
            raise ClientMessageError(
                ErrorCode.VALIDATION_ERROR,
                f"Message too large: {len(raw)} bytes exceeds this server's limit of "
                f"{self.max_message_size} bytes (max_message_size). Send smaller messages "
                "or start the server with a larger --max-message-size.",
                size=len(raw),
                max_message_size=self.max_message_size,
            )

    def dispatch(self, session: EnvSession, raw: bytes) -> tuple[bytes, bool] | None:
        """The encoded reply to one frame and whether it is text; ``None`` for ``close``.

        On a connection whose encoding is ``measured`` a frame may say ``"compress":
        false`` (send this reply raw) or ``true`` (:mod:`openenv_gym.wire.compressed`)."""
        encoding, pack = session.encoding, True
        try:
            self.check_size(raw)
            message = parse_client_message(raw, keys=encoding.message_keys)
            pack = check_compress_flag(message.compress) is not False
        except ClientMessageError as exc:
            logger.debug("bad client frame: %s", exc.message)
            reply = exc.reply()
        except ValueError as exc:  # a "compress" that is neither true nor false
            reply = error_message(ErrorCode.VALIDATION_ERROR, f"Invalid message: {exc}")
        else:
            if message.type == MessageType.CLOSE:
                return None
            reply = self.answer(session, message.type, message.data)
        try:
            return encoding.encode_reply(reply, pack=pack)
        except Exception as exc:
            if reply["type"] == MessageType.ERROR:  # an echo of hostile input: make it printable
                return encode_error_reply(reply), True
            session.error_log.warn(
                logger,
                "cannot encode the reply of %s: %s",
                type(session.env).__name__,
                describe(exc),
            )
            return encode_error_reply(execution_error_reply(exc)), True

    def step(self, env: Environment[Any, Any, Any], data: dict[str, Any]) -> dict[str, Any]:
        """The ``observation`` reply to ``step`` data on ``env``; raises what the action
        model and the environment raise."""
        # Environments not derived from ours (e.g. official ones) have no fast path.
        step_reply = getattr(env, "step_reply", None)
        fast = step_reply(data) if step_reply is not None else None
        if fast is not None:
            return fast
        return serialize_observation(env.step(self.action_type.model_validate(data)))

    def calibrate_step_cost(self) -> float | None:
        """Time a throwaway environment's steps once (:mod:`openenv_gym.server.step_cost`);
        the server runs it in a worker thread on the first ``GET /capacity``."""
        return self.step_cost.calibrate(self.env_factory, self.step)

    def answer(self, session: EnvSession, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        """The reply message to a ``reset``, ``step`` or ``state`` with ``data`` on ``session``
        (an ``error`` message when the data is invalid or the environment raises)."""
        env = session.env
        try:
            if kind == _STEP:
                reply = self.step(env, data)
            elif kind == _RESET:
                reply = serialize_observation(env.reset(**session.filter_reset(data)))
            else:
                reply = _serialize_state(env.state)
            return reply
        except ValidationError as exc:
            return validation_error_reply(exc)
        except CodecError as exc:
            return error_message(ErrorCode.VALIDATION_ERROR, _describe(exc))
        except Exception as exc:
            session.error_log.warn(
                logger, "environment %s failed in %s: %s", type(env).__name__, kind, describe(exc)
            )
            return execution_error_reply(exc)


class _SessionHandler:
    """A plain ``/ws`` connection: one session, one reply per frame."""

    __slots__ = ("manager", "session")

    def __init__(self, manager: SessionManager, session: EnvSession) -> None:
        self.manager = manager
        self.session = session

    def on_message(self, message: bytes) -> None:
        session = self.session
        session.last_activity = time.monotonic()
        reply = self.manager.dispatch(session, message)
        connection = session.connection
        if reply is None:
            connection.close()
        else:
            connection.send(reply[0], text=reply[1], defer=self.manager.connections > 1)

    def on_close(self) -> None:
        self.manager.close_sessions([self.session])
        self.manager.budget.release()


def _close_env(env: Environment[Any, Any, Any]) -> None:
    try:
        env.close()
    except Exception as exc:
        logger.warning("closing environment %s failed: %s", type(env).__name__, describe(exc))
        logger.debug("traceback of the failure above", exc_info=True)


__all__ = ["IDLE_CLOSE_REASON", "EnvSession", "SessionManager", "serialize_observation"]
