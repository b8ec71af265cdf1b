"""The /ws session protocol of our server, over real WebSocket connections on 127.0.0.1.

Every bad input gets its official error code, and the session keeps working afterwards.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, ConnectionClosedOK

from openenv_gym.server import (
    HARD_CAP_FACTOR,
    IDLE_CLOSE_REASON,
    Action,
    Observation,
    OpenEnvServer,
    ServerThread,
)
from tests.conftest import wait_for

# --------------------------------------------------------------------------- happy path


def test_reset_step_state_round_trip(probe_url: str, wire: Any) -> None:
    with wire.open(probe_url) as ws:
        reset = wire.ask(ws, {"type": "reset", "data": {"seed": 3, "episode_id": "ep-1"}})
        assert reset == {
            "type": "observation",
            "data": {
                "observation": {"metadata": {}, "value": 0, "seed": 3, "episode_id": "ep-1"},
                "reward": None,
                "done": False,
            },
        }
        step = wire.ask(ws, {"type": "step", "data": {"value": 5}})
        # Like the official server: metadata stays in the observation and, when non-empty,
        # also goes beside it.
        assert step == {
            "type": "observation",
            "data": {
                "observation": {
                    "metadata": {"echo": 5},
                    "value": 5,
                    "seed": None,
                    "episode_id": None,
                },
                "reward": 5.0,
                "done": False,
                "metadata": {"echo": 5},
            },
        }
        final = wire.ask(ws, {"type": "step", "data": {"value": 100}})
        assert final["data"]["done"] is True
        state = wire.ask(ws, {"type": "state"})
        assert state == {"type": "state", "data": {"episode_id": "ep-1", "step_count": 2}}


def test_reset_without_data_and_with_unknown_keys(probe_url: str, wire: Any) -> None:
    with wire.open(probe_url) as ws:
        assert wire.ask(ws, {"type": "reset"})["type"] == "observation"
        # ProbeEnvironment.reset takes no **kwargs: unknown keys are dropped, as officially.
        reply = wire.ask(ws, {"type": "reset", "data": {"seed": 1, "not_a_parameter": [1, 2]}})
        assert reply["type"] == "observation"
        assert reply["data"]["observation"]["seed"] == 1


def test_reset_passes_every_key_when_reset_takes_kwargs(cartpole_url: str, wire: Any) -> None:
    # Gymnasium's reset options reach the env: CartPole reads "low"/"high".
    with wire.open(cartpole_url) as ws:
        reply = wire.ask(ws, {"type": "reset", "data": {"seed": 0, "low": 0.01, "high": 0.02}})
        observation = reply["data"]["observation"]["observation"]
        assert all(0.01 <= x <= 0.02 for x in observation)


def test_sessions_are_independent(probe_url: str, wire: Any, registry: Any) -> None:
    with wire.open(probe_url) as a, wire.open(probe_url) as b:
        wire.ask(a, {"type": "reset", "data": {"episode_id": "a"}})
        wire.ask(b, {"type": "reset", "data": {"episode_id": "b"}})
        for value in (1, 2, 3):
            wire.ask(a, {"type": "step", "data": {"value": value}})
        assert wire.ask(a, {"type": "state"})["data"] == {"episode_id": "a", "step_count": 3}
        assert wire.ask(b, {"type": "state"})["data"] == {"episode_id": "b", "step_count": 0}
    assert len(registry.created) == 2


def test_close_message_ends_the_session_without_reply(
    probe_url: str, wire: Any, registry: Any
) -> None:
    with wire.open(probe_url) as ws:
        wire.assert_session_works(ws)
        ws.send(json.dumps({"type": "close"}))
        with pytest.raises(ConnectionClosedOK):
            ws.recv(timeout=10)
    assert wait_for(lambda: len(registry.closed) == 1)
    assert registry.closed[0] is registry.created[0]


def test_env_closed_when_client_disconnects(probe_url: str, wire: Any, registry: Any) -> None:
    with wire.open(probe_url) as ws:
        wire.assert_session_works(ws)
        ws.close()
        assert wait_for(lambda: len(registry.closed) == 1)


def test_envs_closed_at_server_stop(start_probe: Any, wire: Any) -> None:
    url, registry, thread = start_probe()
    with wire.open(url) as ws:
        wire.assert_session_works(ws)
        thread.stop()
        assert [env.closed for env in registry.created] == [True]
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=10)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        pytest.param("{not json", "INVALID_JSON", id="malformed-json"),
        pytest.param("", "INVALID_JSON", id="empty-text"),
        pytest.param(b"\x00\xff\xfe binary", "INVALID_JSON", id="binary-not-utf8"),
        pytest.param(b"binary but not json", "INVALID_JSON", id="binary-not-json"),
        pytest.param("[1, 2]", "VALIDATION_ERROR", id="json-array"),
        pytest.param("42", "VALIDATION_ERROR", id="json-number"),
        pytest.param('"step"', "VALIDATION_ERROR", id="json-string"),
        pytest.param("null", "VALIDATION_ERROR", id="json-null"),
        pytest.param(
            '{"type": "step", "data": {"value": 1}, "extra": 1}',
            "VALIDATION_ERROR",
            id="unexpected-key",
        ),
        pytest.param('{"type": "step"}', "VALIDATION_ERROR", id="step-without-data"),
        pytest.param('{"type": "step", "data": [1]}', "VALIDATION_ERROR", id="data-not-object"),
        pytest.param('{"type": "reset", "data": 3}', "VALIDATION_ERROR", id="reset-data-int"),
        pytest.param('{"type": "jump"}', "UNKNOWN_TYPE", id="unknown-type"),
        pytest.param('{"data": {}}', "UNKNOWN_TYPE", id="missing-type"),
        pytest.param('{"type": "mcp", "data": {}}', "UNKNOWN_TYPE", id="mcp-not-served"),
    ],
)
def test_bad_frames_get_the_official_code_and_the_session_lives_on(
    probe_url: str, wire: Any, frame: str | bytes, code: str
) -> None:
    with wire.open(probe_url) as ws:
        wire.ask(ws, {"type": "reset"})
        reply = wire.ask(ws, frame)
        assert reply["type"] == "error"
        assert reply["data"]["code"] == code
        assert reply["data"]["message"]
        wire.assert_session_works(ws)


def test_binary_frame_with_json_is_served(probe_url: str, wire: Any) -> None:
    with wire.open(probe_url) as ws:
        reply = wire.ask(ws, b'{"type": "reset", "data": {"seed": 9}}')
        assert reply["data"]["observation"]["seed"] == 9


@pytest.mark.parametrize(
    ("action", "error_type"),
    [
        pytest.param({"value": 101}, "less_than_equal", id="out-of-range"),
        pytest.param({"value": "abc"}, "int_parsing", id="wrong-type"),
        pytest.param({}, "missing", id="missing-field"),
        pytest.param({"value": 1, "nope": 2}, "extra_forbidden", id="extra-field"),
    ],
)
def test_invalid_action_is_a_validation_error_with_json_errors(
    probe_url: str, wire: Any, action: dict[str, Any], error_type: str
) -> None:
    with wire.open(probe_url) as ws:
        wire.ask(ws, {"type": "reset"})
        reply = wire.ask(ws, {"type": "step", "data": action})
        assert reply["data"]["code"] == "VALIDATION_ERROR"
        errors = reply["data"]["errors"]
        assert isinstance(errors, list)
        assert errors
        assert errors[0]["type"] == error_type
        assert "ProbeAction" in reply["data"]["message"]
        wire.assert_session_works(ws)


@pytest.mark.parametrize(
    ("frame", "text"),
    [
        pytest.param(
            {"type": "step", "data": {"value": 1, "fail": True}},
            "step failed on purpose",
            id="step",
        ),
        pytest.param(
            {"type": "reset", "data": {"seed": 666}}, "reset failed on purpose", id="reset"
        ),
    ],
)
def test_env_exceptions_are_execution_errors(
    probe_url: str, wire: Any, frame: dict[str, Any], text: str
) -> None:
    with wire.open(probe_url) as ws:
        wire.ask(ws, {"type": "reset"})
        reply = wire.ask(ws, frame)
        assert reply["data"]["code"] == "EXECUTION_ERROR"
        assert text in reply["data"]["message"]
        wire.assert_session_works(ws)


@pytest.mark.parametrize("output", ["dict", "object"])
def test_unserializable_env_output_is_an_execution_error(
    probe_url: str, wire: Any, output: str
) -> None:
    with wire.open(probe_url) as ws:
        wire.ask(ws, {"type": "reset"})
        reply = wire.ask(ws, {"type": "step", "data": {"value": 1, "output": output}})
        assert reply["data"]["code"] == "EXECUTION_ERROR"
        assert reply["data"]["message"]
        wire.assert_session_works(ws)


def test_numpy_values_in_observations_are_served_as_lists(probe_url: str, wire: Any) -> None:
    with wire.open(probe_url) as ws:
        wire.ask(ws, {"type": "reset"})
        reply = wire.ask(ws, {"type": "step", "data": {"value": 1, "output": "numpy"}})
        assert reply["data"]["metadata"] == {"array": [0, 1, 2]}


def test_state_exception_is_an_execution_error(probe_url: str, wire: Any) -> None:
    with wire.open(probe_url) as ws:
        wire.ask(ws, {"type": "reset"})
        wire.ask(ws, {"type": "step", "data": {"value": 1, "break_state": True}})
        reply = wire.ask(ws, {"type": "state"})
        assert reply["data"]["code"] == "EXECUTION_ERROR"
        assert "state failed on purpose" in reply["data"]["message"]
        wire.assert_session_works(ws)
        assert wire.ask(ws, {"type": "state"})["type"] == "state"


def test_oversize_message_is_a_validation_error(start_probe: Any, wire: Any) -> None:
    url, _, _ = start_probe(max_message_size=1024)
    with wire.open(url) as ws:
        wire.ask(ws, {"type": "reset"})
        # Over the limit, under the hard cap (HARD_CAP_FACTOR x the limit): answered.
        big = {"type": "step", "data": {"value": 1, "metadata": {"pad": "x" * 1500}}}
        size = len(json.dumps(big).encode())
        reply = wire.ask(ws, big)
        assert reply["data"]["code"] == "VALIDATION_ERROR"
        assert str(size) in reply["data"]["message"]
        assert "1024" in reply["data"]["message"]
        assert reply["data"]["max_message_size"] == 1024
        # Just under the limit is served.
        fits = {"type": "step", "data": {"value": 2, "metadata": {"pad": "x" * 900}}}
        assert wire.ask(ws, fits)["type"] == "observation"
        wire.assert_session_works(ws)


def test_message_beyond_the_hard_cap_closes_only_that_connection(
    start_probe: Any, wire: Any
) -> None:
    url, registry, _ = start_probe(max_message_size=1024)
    with wire.open(url) as ws:
        ws.send("x" * (HARD_CAP_FACTOR * 1024 + 1))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == 1009  # message too big
    assert wait_for(lambda: len(registry.closed) == 1)
    with wire.open(url) as ws:
        wire.assert_session_works(ws)


def test_factory_error_replies_and_closes(start_probe: Any, wire: Any) -> None:
    url, registry, _ = start_probe(registry=None)
    registry.fail = True
    with wire.open(url) as ws:
        reply = json.loads(ws.recv(timeout=10))
        assert reply["data"]["code"] == "FACTORY_ERROR"
        assert "no environment today" in reply["data"]["message"]
        assert "factory" in reply["data"]["factory_name"]
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=10)
    registry.fail = False
    with wire.open(url) as ws:
        wire.assert_session_works(ws)


# --------------------------------------------------------------------------- limits


def test_capacity_reached_then_slot_freed(start_probe: Any, wire: Any) -> None:
    url, registry, thread = start_probe(max_sessions=2)
    with wire.open(url) as first, wire.open(url) as second:
        wire.assert_session_works(first)
        wire.assert_session_works(second)
        with wire.open(url) as third:
            reply = json.loads(third.recv(timeout=10))
            assert reply["type"] == "error"
            assert reply["data"]["code"] == "CAPACITY_REACHED"
            assert reply["data"]["active_sessions"] == 2
            assert reply["data"]["max_sessions"] == 2
            with pytest.raises(ConnectionClosed):
                third.recv(timeout=10)
        assert len(registry.created) == 2  # no env was built for the refused session
        first.close()
        assert wait_for(lambda: thread.server.active_sessions == 1)
        with wire.open(url) as fourth:
            wire.assert_session_works(fourth)
        wire.assert_session_works(second)


def test_idle_session_closed_active_session_kept(start_probe: Any, wire: Any) -> None:
    url, registry, thread = start_probe(idle_timeout=1.0)
    with wire.open(url) as idle, wire.open(url) as active:
        wire.ask(idle, {"type": "reset"})
        wire.ask(active, {"type": "reset"})
        deadline = time.monotonic() + 1.8
        while time.monotonic() < deadline:
            wire.assert_session_works(active)
            time.sleep(0.05)
        with pytest.raises(ConnectionClosed) as closed:
            idle.recv(timeout=10)
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code in (1000, 1001)
        assert closed.value.rcvd.reason == IDLE_CLOSE_REASON
        wire.assert_session_works(active)
        assert wait_for(lambda: len(registry.closed) == 1)
        assert thread.server.active_sessions == 1


def test_server_thread_port_url_and_errors(start_probe: Any, registry: Any) -> None:
    url, _, thread = start_probe()
    assert thread.port > 0
    assert url == f"http://127.0.0.1:{thread.port}"
    with pytest.raises(RuntimeError, match="already running"):
        thread.start()
    busy = ServerThread(
        OpenEnvServer(registry.factory, action_type=Action, observation_type=Observation),
        port=thread.port,
    )
    with pytest.raises(OSError, match=r"address already in use|Errno"):
        busy.start()


@pytest.mark.parametrize(
    "kwargs", [{"max_sessions": 0}, {"idle_timeout": 0}, {"max_message_size": 0}]
)
def test_server_rejects_invalid_limits(registry: Any, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="expected"):
        OpenEnvServer(registry.factory, action_type=Action, observation_type=Observation, **kwargs)
