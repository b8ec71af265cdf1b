"""OpenEnv wire messages: build and parse what travels over ``{base_url}/ws``.

This module is pure: no sockets, no Gymnasium. Both sides use it, the client
(:mod:`openenv_gym.client`, :mod:`openenv_gym.env`) and our server runtime
(:mod:`openenv_gym.server`), so both speak the exact JSON of the official ``openenv``
package (0.10.0):

* client -> server: ``{"type":"reset","data":{...}}``, ``{"type":"step","data":{...}}``,
  ``{"type":"state"}``, ``{"type":"close"}``
* server -> client: ``{"type":"observation","data":{"observation":{...},"reward":..,"done":..}}``
  (plus ``"metadata"`` beside them when non-empty), ``{"type":"state","data":{...}}`` and
  ``{"type":"error","data":{"message":..,"code":..}}``.

Example:
    >>> encode_message(reset_message(seed=3))
    '{"type":"reset","data":{"seed":3}}'
    >>> reply = parse_server_message('{"type":"observation","data":{"observation":{"x":1},'
    ...                              '"reward":null,"done":false}}')
    >>> reply.observation, reply.reward, reply.done
    ({'x': 1}, None, False)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

import pydantic_core

from openenv_gym.errors import (
    CapacityReachedError,
    ProtocolError,
    ServerReplyError,
)

WS_PATH: Final = "/ws"
HEALTH_PATH: Final = "/health"
SCHEMA_PATH: Final = "/schema"
METADATA_PATH: Final = "/metadata"
STATE_PATH: Final = "/state"
#: Our extension (official servers answer 404): {"max_sessions": M, "active_sessions": A}.
CAPACITY_PATH: Final = "/capacity"
#: Our extension: the key of ``GET /health``'s body listing the Unix sockets the server
#: also listens on (one per worker); same-host clients connect through them.
UNIX_SOCKETS_KEY: Final = "unix_sockets"
#: Our extension: the handshake response header naming the server process that took the
#: connection (a batching client spreads its connections over a server's processes by it).
WORKER_HEADER: Final = "X-OpenEnv-Gym-Worker"
#: The default ``max_message_size`` of our server: the largest client frame it serves.
#: Client frames are actions and reset options: 1 MiB is plenty, and it bounds what one
#: connection can make the server hold.
SERVER_INBOUND_LIMIT: Final = 1024 * 1024
#: The default ``max_message_size`` of our client: the largest server frame it reads.
#: Server frames carry observations (a batch of K Atari screens is several MiB).
CLIENT_INBOUND_LIMIT: Final = 64 * 1024 * 1024


class ErrorCode(StrEnum):
    """The error codes of the official protocol (``WSErrorCode``)."""

    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    FACTORY_ERROR = "FACTORY_ERROR"
    SESSION_ERROR = "SESSION_ERROR"


class MessageType(StrEnum):
    """The ``type`` of every message of the protocol."""

    RESET = "reset"
    STEP = "step"
    STATE = "state"
    CLOSE = "close"
    OBSERVATION = "observation"
    ERROR = "error"


# Plain strings for the hot path (an enum member's attribute access costs a descriptor call).
_OBSERVATION: Final = MessageType.OBSERVATION.value

# --------------------------------------------------------------------------- encoding


def _json_fallback(value: Any) -> Any:
    """What pydantic cannot serialize itself: numpy arrays and scalars (``tolist``)."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    raise TypeError(
        f"cannot serialize a {type(value).__name__} as JSON: {value!r:.100}; send numbers, "
        "strings, lists, dicts or numpy arrays"
    )


def encode_json(message: Any) -> bytes:
    """``message`` as compact UTF-8 JSON: the one JSON encoder of both sides.

    pydantic's serializer (several times faster than ``json.dumps``), the way the official
    package writes its messages: non-finite floats become ``null``; numpy arrays and
    scalars become lists and numbers.

    Raises:
        TypeError: A value is not JSON-serializable (e.g. an arbitrary object).
    """
    try:
        return pydantic_core.to_json(message, inf_nan_mode="null", fallback=_json_fallback)
    except pydantic_core.PydanticSerializationError as exc:
        raise TypeError(str(exc)) from exc


def encode_message(message: dict[str, Any]) -> str:
    """Serialize a message as compact JSON text (:func:`encode_json`, decoded)."""
    return encode_json(message).decode()


def printable(text: str, limit: int = 300) -> str:
    """``text`` cut to ``limit`` characters, lone surrogates escaped: safe to echo as JSON.

    >>> printable("\\ud800" + "x" * 10, 4)
    '\\\\ud800xxx... (11 chars)'
    """
    short = text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"
    return short.encode("utf-8", "backslashreplace").decode("utf-8")


def _shorten(raw: Any, limit: int = 300) -> str:
    text = raw if isinstance(raw, str) else repr(raw)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


# --------------------------------------------------------------------------- client side


def reset_message(
    seed: int | None = None, episode_id: str | None = None, **extra: Any
) -> dict[str, Any]:
    """Build a ``reset`` message. ``None`` values are left out; ``extra`` keys pass through."""
    data: dict[str, Any] = {}
    if seed is not None:
        data["seed"] = int(seed)
    if episode_id is not None:
        data["episode_id"] = str(episode_id)
    data.update(extra)
    return {"type": MessageType.RESET.value, "data": data}


def step_message(action: dict[str, Any]) -> dict[str, Any]:
    """Build a ``step`` message; ``action`` holds the action model's fields."""
    return {"type": MessageType.STEP.value, "data": action}


def state_message() -> dict[str, Any]:
    """Build a ``state`` request."""
    return {"type": MessageType.STATE.value}


def close_message() -> dict[str, Any]:
    """Build a ``close`` message (the server ends the session; no reply)."""
    return {"type": MessageType.CLOSE.value}


@dataclass(frozen=True, slots=True)
class ObservationReply:
    """A parsed ``observation`` reply.

    Attributes:
        observation: The observation fields (the official server keeps ``metadata`` here too).
        reward: The reward, ``None`` when the server sent none (e.g. after reset).
        done: The episode has ended.
        metadata: Top-level metadata sent beside the observation (empty when none).
        stated_flags: ``(terminated, truncated)`` when the server sent Gymnasium's own flags
            beside ``done`` (HTTP servers that answer as a Gymnasium env does); ``None`` when
            it sent only ``done``, as the OpenEnv protocol does.
    """

    observation: dict[str, Any]
    reward: float | None
    done: bool
    metadata: dict[str, Any] = field(default_factory=dict)
    stated_flags: tuple[bool, bool] | None = None


@dataclass(frozen=True, slots=True)
class StateReply:
    """A parsed ``state`` reply."""

    state: dict[str, Any]


def expect_observation(
    reply: ObservationReply | StateReply, message: dict[str, Any], url: str
) -> ObservationReply:
    """``reply`` to ``message`` (a reset or step), which must be an observation.

    Raises:
        ProtocolError: A ``state`` reply came instead.
    """
    if not isinstance(reply, ObservationReply):
        raise ProtocolError(
            f"expected an 'observation' reply to {message.get('type')!r} from {url}, "
            "got a 'state' reply",
            received=reply,
        )
    return reply


def parse_server_message(
    raw: str | bytes, *, url: str | None = None
) -> ObservationReply | StateReply:
    """Parse one server frame.

    Raises:
        ServerReplyError: The server sent an ``error`` message (``CapacityReachedError``
            for ``CAPACITY_REACHED``).
        ProtocolError: The frame is not a valid OpenEnv server message.
    """
    return parse_server_object(load_server_json(raw), raw, url=url)


def load_server_json(raw: str | bytes) -> Any:
    """The decoded JSON of one server text frame.

    Raises:
        ProtocolError: It is not UTF-8, or not valid JSON.
    """
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(
                f"expected a UTF-8 JSON text frame, got {len(raw)} undecodable bytes",
                received=_shorten(raw),
            ) from exc
    try:
        # pydantic's parser: 2-3x faster than json.loads on a list-ified Atari screen.
        return pydantic_core.from_json(raw)
    except ValueError as exc:
        raise ProtocolError(
            f"expected a JSON server message, got invalid JSON ({exc}): {_shorten(raw)}",
            received=_shorten(raw),
        ) from exc


def parse_server_object(
    message: Any, raw: Any = None, *, url: str | None = None
) -> ObservationReply | StateReply:
    """:func:`parse_server_message` for an already decoded message (e.g. from a binary frame).

    ``raw`` is only quoted in error messages (the message itself when ``None``).

    Raises:
        ServerReplyError: The server sent an ``error`` message.
        ProtocolError: The message is not a valid OpenEnv server message.
    """
    if raw is None:
        raw = message
    if not isinstance(message, dict) or "type" not in message:
        raise ProtocolError(
            f"expected a JSON object with a 'type' key, got {_shorten(raw)}",
            received=_shorten(raw),
        )
    kind = message["type"]
    data = message.get("data")
    if kind == MessageType.OBSERVATION:
        return _parse_observation_data(data, raw)
    if kind == MessageType.STATE:
        if not isinstance(data, dict):
            raise ProtocolError(
                f"expected 'data' of a state reply to be an object, got {_shorten(raw)}",
                received=_shorten(raw),
            )
        return StateReply(state=data)
    if kind == MessageType.ERROR:
        raise error_from_data(data if isinstance(data, dict) else {}, url=url)
    raise ProtocolError(
        f"expected a server message of type 'observation', 'state' or 'error', "
        f"got type {kind!r}: {_shorten(raw)}",
        received=_shorten(raw),
    )


def _parse_observation_data(data: Any, raw: Any) -> ObservationReply:
    if not isinstance(data, dict) or not isinstance(data.get("observation"), dict):
        raise ProtocolError(
            "expected an observation reply {'observation': {...}, 'reward': ..., 'done': ...}, "
            f"got {_shorten(raw)}",
            received=_shorten(raw),
        )
    reward = data.get("reward")
    if reward is not None:
        if isinstance(reward, bool) or not isinstance(reward, int | float):
            raise ProtocolError(
                f"expected 'reward' to be a number or null, got {reward!r}",
                received=_shorten(raw),
            )
        reward = float(reward)
    done = data.get("done", False)
    if not isinstance(done, bool):
        raise ProtocolError(
            f"expected 'done' to be true or false, got {done!r}", received=_shorten(raw)
        )
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ProtocolError(
            f"expected 'metadata' to be an object, got {metadata!r}", received=_shorten(raw)
        )
    terminated, truncated = data.get("terminated"), data.get("truncated")
    stated = None
    if isinstance(terminated, bool) or isinstance(truncated, bool):
        stated = (terminated is True, truncated is True)
    return ObservationReply(
        observation=data["observation"],
        reward=reward,
        done=done,
        metadata=metadata,
        stated_flags=stated,
    )


def error_from_data(data: dict[str, Any], *, url: str | None = None) -> ServerReplyError:
    """Turn the ``data`` of an error reply into the matching typed exception."""
    code = str(data.get("code", "UNKNOWN"))
    message = str(data.get("message", "no message"))
    where = f" from {url}" if url else ""
    if code == ErrorCode.CAPACITY_REACHED:
        active, limit = data.get("active_sessions"), data.get("max_sessions")
        counts = f" ({active} of {limit} sessions in use)" if limit is not None else ""
        return CapacityReachedError(
            f"the server{where} refused a new session: all its session slots are taken"
            f"{counts}. Close other sessions, start the server with more sessions "
            "(`openenv-gym serve ... --max-sessions N`; official servers: "
            "max_concurrent_envs), or spread sessions over more servers. "
            f"Server said: {message}",
            code=code,
            url=url,
            data=data,
        )
    detail = ""
    if data.get("errors"):
        detail = f"; details: {_shorten(json.dumps(data['errors'], default=str), 500)}"
    return ServerReplyError(
        f"server error {code}{where}: {message}{detail}", code=code, url=url, data=data
    )


# --------------------------------------------------------------------------- server side


#: A client message's top-level keys (a connection may agree to more).
ENVELOPE_KEYS: Final = frozenset({"type", "data"})


def observation_message(
    observation: dict[str, Any],
    reward: float | None,
    done: bool,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Build an ``observation`` reply exactly as the official ``serialize_observation`` does."""
    data: dict[str, Any] = {"observation": observation, "reward": reward, "done": done}
    if metadata:
        data["metadata"] = metadata
    return {"type": _OBSERVATION, "data": data}


def state_reply_message(state: dict[str, Any]) -> dict[str, Any]:
    """Build a ``state`` reply."""
    return {"type": MessageType.STATE.value, "data": state}


def error_message(code: ErrorCode, message: str, **extra: Any) -> dict[str, Any]:
    """Build an ``error`` reply with an official code; ``extra`` keys go into ``data``."""
    return {
        "type": MessageType.ERROR.value,
        "data": {"message": message, "code": code.value, **extra},
    }


def strip_base_url(base_url: str) -> str:
    """``base_url`` without its trailing slashes: the one spelling of a server's URL (a
    key of per-server tables, and the base every path is appended to).

    >>> strip_base_url("http://127.0.0.1:8000/")
    'http://127.0.0.1:8000'
    """
    return base_url.rstrip("/")


def http_to_ws_url(base_url: str) -> str:
    """``http://h:p/prefix`` -> ``ws://h:p/prefix/ws`` (``https`` -> ``wss``).

    Raises:
        ValueError: The URL is not an http(s) or ws(s) URL.
    """
    url = strip_base_url(base_url)
    if url.startswith("https://"):
        url = "wss://" + url[len("https://") :]
    elif url.startswith("http://"):
        url = "ws://" + url[len("http://") :]
    elif not url.startswith(("ws://", "wss://")):
        raise ValueError(
            f"expected a base URL starting with http://, https://, ws:// or wss://, "
            f"got {base_url!r}; e.g. base_url='http://127.0.0.1:8000'"
        )
    return url if url.endswith(WS_PATH) else url + WS_PATH


def ws_to_http_url(url: str) -> str:
    """The inverse of :func:`http_to_ws_url`, without the ``/ws`` path."""
    base = strip_base_url(url)
    if base.endswith(WS_PATH):
        base = base[: -len(WS_PATH)]
    for ws, http in (("wss://", "https://"), ("ws://", "http://")):
        if base.startswith(ws):
            return http + base[len(ws) :]
    return base
