"""Property-based fuzzing of the server's message handling, on every server we ship.

Random and mutated frames of every message type (``reset``, ``step``, ``state``, ``close``,
unknown types, broken JSON, deep nesting, huge numbers, lone surrogates, random bytes) go to
a real server over a real WebSocket on 127.0.0.1. The invariant, after every frame:

* the reply is an ``error`` with an official code, or the frame was valid and got its
  ``observation`` / ``state`` reply (a valid ``close`` gets none and ends the session), and
* the session still answers a valid ``reset`` + ``step``.

Bounded in time: a fixed number of examples per server (a few seconds each).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from openenv_gym.server import OpenEnvServer, ServerThread
from openenv_gym.wire.batch import BATCH_SUBPROTOCOL
from openenv_gym.wire.messages import ErrorCode, http_to_ws_url

OFFICIAL_CODES = {code.value for code in ErrorCode}
#: Examples per server: a few seconds each (an Atari reset costs milliseconds).
EXAMPLES = {"gymnasium": 400, "atari": 120, "chess": 400}


def _gymnasium() -> OpenEnvServer:
    from openenv_gym.envs.gymnasium import gymnasium_server

    return gymnasium_server("CartPole-v1", max_sessions=4)


def _atari() -> OpenEnvServer:
    pytest.importorskip("ale_py")
    from openenv_gym.envs.atari import atari_server

    return atari_server("pong", max_sessions=4)


def _chess() -> OpenEnvServer:
    pytest.importorskip("chess")
    from openenv_gym.envs.chess.server import chess_server

    return chess_server(max_sessions=4)


#: server name -> (builder, a valid step's data after a reset)
SERVERS: dict[str, tuple[Callable[[], OpenEnvServer], dict[str, Any]]] = {
    "gymnasium": (_gymnasium, {"action": 0}),
    "atari": (_atari, {"action_id": 0}),
    "chess": (_chess, {"move": "e2e4"}),
}


class Peer:
    """One WebSocket session to the server under test, reopened after a valid ``close``."""

    def __init__(self, name: str, url: str, valid_step: dict[str, Any]) -> None:
        self.name = name
        self.url = http_to_ws_url(url)
        self.valid_step = valid_step
        self._connections = contextlib.ExitStack()
        self.ws = self._open()

    def _open(self) -> ClientConnection:
        ws = connect(self.url, open_timeout=10, close_timeout=2, max_size=None)
        return self._connections.enter_context(ws)

    def send(self, frame: str | bytes) -> Any:
        """Send a frame; the parsed reply, or ``None`` when the server closed the session."""
        self.ws.send(frame)
        try:
            reply = self.ws.recv(timeout=20)
        except ConnectionClosed as closed:
            code = closed.rcvd.code if closed.rcvd is not None else None
            self.ws = self._open()
            if code != 1000:
                raise AssertionError(f"the session closed with {code}, not 1000") from closed
            return None
        assert isinstance(reply, str), f"expected a JSON text frame, got {reply!r:.200}"
        return json.loads(reply)

    def assert_alive(self) -> None:
        reset = self.send(json.dumps({"type": "reset"}))  # unseeded: ALE reloads on a seed
        assert reset is not None
        assert reset["type"] == "observation", reset
        step = self.send(json.dumps({"type": "step", "data": self.valid_step}))
        assert step is not None
        assert step["type"] == "observation", step

    def close(self) -> None:
        self._connections.close()


@pytest.fixture(scope="module", params=sorted(SERVERS))
def peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
    build, valid_step = SERVERS[request.param]
    with ServerThread(build()) as running:
        peer = Peer(request.param, running.url, valid_step)
        try:
            yield peer
        finally:
            peer.close()


# --------------------------------------------------------------------------- strategies

_odd_text = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["\ud800", "\udfff", "a\ud800b", "\x00", "\u2028", "é" * 40]),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**200), max_value=2**200),
    st.floats(allow_nan=True, allow_infinity=True),
    _odd_text,
)
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(_odd_text, inner, max_size=4)
    ),
    max_leaves=12,
)
_types = st.one_of(
    st.sampled_from(["reset", "step", "state", "close", "observation", "error", "", "STEP"]),
    _json,
)
_action_keys = st.sampled_from(["action", "action_id", "move", "seed", "episode_id", "value"])
_actions = st.dictionaries(st.one_of(_action_keys, _odd_text), _json, max_size=4)


def _dumps(value: Any) -> str:
    # allow_nan: NaN/Infinity are not JSON but Python's encoder writes them; servers meet them.
    return json.dumps(value, allow_nan=True)


@st.composite
def _messages(draw: st.DrawFn) -> str:
    """A message-shaped object: a known or random type, data of any shape, maybe extra keys."""
    message: dict[str, Any] = {"type": draw(_types)}
    if draw(st.booleans()):
        message["data"] = draw(st.one_of(_actions, _json))
    if draw(st.integers(0, 4)) == 0:
        message[draw(_odd_text)] = draw(_json)
    return _dumps(message)


@st.composite
def _deep(draw: st.DrawFn) -> str:
    depth = draw(st.sampled_from([10, 100, 500, 900, 990, 1100, 3000]))
    inner = "[" * depth + "]" * depth
    key = draw(_action_keys)
    kind = draw(st.sampled_from(["step", "reset"]))
    return draw(st.sampled_from([inner, f'{{"type":"{kind}","data":{{"{key}":{inner}}}}}']))


@st.composite
def _huge_numbers(draw: st.DrawFn) -> str:
    digits = "9" * draw(st.sampled_from([19, 20, 100, 4299, 4301, 6000]))
    number = draw(st.sampled_from([digits, "-" + digits, "1e400", "-1e400", "1" + "0" * 400]))
    key = draw(_action_keys)
    kind = draw(st.sampled_from(["step", "reset"]))
    return f'{{"type":"{kind}","data":{{"{key}":{number}}}}}'


_VALID = [
    '{"type":"reset","data":{"seed":1}}',
    '{"type":"step","data":{"action":1}}',
    '{"type":"step","data":{"action_id":3}}',
    '{"type":"step","data":{"move":"e2e4"}}',
    '{"type":"state"}',
]


@st.composite
def _mutated(draw: st.DrawFn) -> str | bytes:
    """A valid frame with bytes flipped, inserted, deleted or cut off."""
    frame = bytearray(draw(st.sampled_from(_VALID)).encode())
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, max(0, len(frame) - 1)))
        operation = draw(st.sampled_from(["flip", "insert", "delete", "cut"]))
        if operation == "flip" and frame:
            frame[position] = draw(st.integers(0, 255))
        elif operation == "insert":
            frame[position:position] = draw(st.binary(min_size=1, max_size=4))
        elif operation == "delete" and frame:
            del frame[position]
        elif operation == "cut":
            frame = frame[:position]
    data = bytes(frame)
    if draw(st.booleans()):
        return data  # a binary frame
    return data.decode("utf-8", "replace")


_frames = st.one_of(
    _messages(),
    _mutated(),
    _deep(),
    _huge_numbers(),
    st.binary(max_size=64),
    st.text(max_size=64),
    _json.map(_dumps),
)


def _is_valid_close(frame: str | bytes, *, strict_keys: bool = True) -> bool:
    """A ``close`` message (batch connections do not check for extra keys)."""
    try:
        message = json.loads(frame)
    except (ValueError, RecursionError):
        return False
    return (
        isinstance(message, dict)
        and message.get("type") == "close"
        and (not strict_keys or set(message) <= {"type", "data"})
        and isinstance(message.get("data", {}), dict)
    )


@pytest.mark.slow
def test_every_frame_gets_an_official_reply_and_the_session_lives_on(peer: Peer) -> None:
    @settings(
        max_examples=EXAMPLES[peer.name],
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(frame=_frames)
    def check(frame: str | bytes) -> None:
        reply = peer.send(frame)
        if reply is None:
            assert _is_valid_close(frame), f"the session closed on {frame!r:.300}"
        else:
            assert reply["type"] in {"error", "observation", "state"}, reply
            if reply["type"] == "error":
                assert reply["data"]["code"] in OFFICIAL_CODES, reply
        peer.assert_alive()

    check()


# --------------------------------------------------------------------------- batch connections

_BATCH_OPEN = '{"type":"batch_open","data":{"sessions":2}}'
_BATCH_RESET = '{"type":"batch_step","data":{"ops":[{"reset":{}},{"reset":{}}]}}'
_BATCH_STEP = '{"type":"batch_step","data":{"ops":[{"step":{"action":0}},{"step":{"action":1}}]}}'
_BATCH_VALID = [
    _BATCH_STEP,
    '{"type":"batch_state"}',
    '{"type":"batch_step","data":{"ops":[null,null]}}',
]


@st.composite
def _batch_messages(draw: st.DrawFn) -> str:
    kind = draw(
        st.one_of(st.sampled_from(["batch_open", "batch_step", "batch_state", "step"]), _types)
    )
    message: dict[str, Any] = {"type": kind}
    if draw(st.booleans()):
        ops = st.lists(
            st.one_of(st.none(), st.dictionaries(st.sampled_from(["step", "reset"]), _json)),
            max_size=3,
        )
        message["data"] = draw(
            st.one_of(
                st.fixed_dictionaries({"ops": ops}),
                st.fixed_dictionaries({"ops": ops, "same_step_reset": _json}),
                st.fixed_dictionaries({"sessions": _json}),
                _json,
            )
        )
    return _dumps(message)


@st.composite
def _batch_mutated(draw: st.DrawFn) -> str | bytes:
    frame = bytearray(draw(st.sampled_from(_BATCH_VALID)).encode())
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, max(0, len(frame) - 1)))
        frame[position : position + draw(st.integers(0, 2))] = draw(st.binary(max_size=3))
    data = bytes(frame)
    return data if draw(st.booleans()) else data.decode("utf-8", "replace")


_batch_frames = st.one_of(_batch_messages(), _batch_mutated(), _deep(), _huge_numbers(), _frames)


def test_every_batch_frame_gets_an_official_reply_and_the_connection_lives_on() -> None:
    """The same invariant on a batch connection (``openenv-gym.batch.v1``, K sessions)."""
    with ServerThread(_gymnasium()) as running, contextlib.ExitStack() as stack:
        url = http_to_ws_url(running.url)

        def reopen() -> ClientConnection:
            ws = stack.enter_context(
                connect(url, subprotocols=[BATCH_SUBPROTOCOL], open_timeout=10, max_size=None)  # type: ignore[list-item]
            )
            ws.send(_BATCH_OPEN)
            assert json.loads(ws.recv(timeout=20))["type"] == "batch_opened"
            return ws

        state = {"ws": reopen()}

        @settings(
            max_examples=300,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        )
        @given(frame=_batch_frames)
        def check(frame: str | bytes) -> None:
            ws = state["ws"]
            ws.send(frame)
            try:
                reply = ws.recv(timeout=20)
            except ConnectionClosed as closed:
                code = closed.rcvd.code if closed.rcvd is not None else None
                state["ws"] = reopen()
                if code != 1000 or not _is_valid_close(frame, strict_keys=False):
                    raise AssertionError(f"closed with {code} on {frame!r:.300}") from closed
                return
            if isinstance(reply, str):
                message = json.loads(reply)
                if message["type"] == "error":
                    assert message["data"]["code"] in OFFICIAL_CODES, message
            ws = state["ws"]
            for valid in (_BATCH_RESET, _BATCH_STEP):
                ws.send(valid)
                after = ws.recv(timeout=20)
                assert isinstance(after, bytes) or json.loads(after)["type"] != "error", after

        check()
