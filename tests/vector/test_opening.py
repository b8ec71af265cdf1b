"""Opening a vector env's connections (:mod:`openenv_gym.vector.opening`) and one round trip
on them (:mod:`openenv_gym.vector.round_trip`), against real servers on 127.0.0.1: ours
(batch agreed), one built on the official ``openenv`` package (batch refused: one plain
session per sub-env), and both at capacity."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from openenv.core.env_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

from openenv_gym.client import ConnectOptions
from openenv_gym.client.exchange import exchange_many
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.errors import BinaryEncodingRefusedError, ServerReplyError
from openenv_gym.server import ServerThread
from openenv_gym.vector.channels import Channel, close_channels
from openenv_gym.vector.opening import Opener, SessionsRefusedError
from openenv_gym.wire.batch import BATCH_SUBPROTOCOL
from openenv_gym.wire.encoding import BATCH, BINARY, JSON
from tests.conftest import wait_for
from tests.official_peer import serve_official_app


class CountAction(Action):
    add: int


class CountObservation(Observation):
    total: int = 0


class CountEnvironment(Environment):
    """Adds the action to a running total; the reward is the total."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._total = 0
        self._state = State(step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> CountObservation:
        self._total = seed or 0
        self._state = State(episode_id=episode_id, step_count=0)
        return CountObservation(total=self._total, reward=None, done=False)

    def step(self, action: CountAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        self._state.step_count += 1
        self._total += action.add
        return CountObservation(total=self._total, reward=float(self._total), done=False)

    @property
    def state(self) -> State:
        return self._state


@pytest.fixture(scope="module")
def official_url() -> Iterator[str]:
    app = create_fastapi_app(CountEnvironment, CountAction, CountObservation, max_concurrent_envs=3)
    with serve_official_app(app) as url:
        yield url


@pytest.fixture
def ours() -> Iterator[ServerThread]:
    with ServerThread(gymnasium_server("CartPole-v1", max_sessions=3)) as running:
        yield running


def opener(encoding: str = "auto", *, batch: bool = True) -> Opener:
    return Opener(ConnectOptions(encoding=encoding, reply_timeout=20), encoding, batch, None)


def test_our_server_agrees_to_batch_and_opens_every_session_on_one_connection(
    ours: ServerThread,
) -> None:
    channels = opener().open_group(ours.url, [4, 5, 6], [], 1)
    try:
        assert len(channels) == 1
        (channel,) = channels
        assert channel.indices == [4, 5, 6]
        assert channel.batch
        assert channel.session.encoding is BATCH
        assert channel.session.subprotocol == BATCH_SUBPROTOCOL
        assert ours.server.active_sessions == 3
    finally:
        close_channels(channels)
    assert wait_for(lambda: ours.server.active_sessions == 0)


def test_spread_splits_the_sessions_evenly_over_connections(ours: ServerThread) -> None:
    channels = opener().open_group(ours.url, [0, 1, 2], [], 2)
    try:
        assert [channel.indices for channel in channels] == [[0, 1], [2]]
        assert all(channel.batch for channel in channels)
    finally:
        close_channels(channels)


def test_encoding_json_never_batches_and_opens_plain_sessions(ours: ServerThread) -> None:
    channels = opener("json").open_group(ours.url, [0, 1], [], 1)
    try:
        assert [channel.indices for channel in channels] == [[0], [1]]
        assert all(channel.session.encoding is JSON for channel in channels)
        assert not any(channel.batch for channel in channels)
    finally:
        close_channels(channels)


def test_batch_off_gives_plain_binary_sessions(ours: ServerThread) -> None:
    channels = opener(batch=False).open_group(ours.url, [0, 1], [], 1)
    try:
        assert all(channel.session.encoding is BINARY for channel in channels)
    finally:
        close_channels(channels)


def test_an_official_server_refuses_batch_and_gets_one_plain_session_per_sub_env(
    official_url: str,
) -> None:
    channels = opener().open_group(official_url, [0, 1, 2], [], 1)
    try:
        assert [channel.indices for channel in channels] == [[0], [1], [2]]
        assert all(channel.session.subprotocol is None for channel in channels)
        assert all(channel.session.encoding is JSON for channel in channels)
    finally:
        close_channels(channels)


def test_encoding_binary_against_an_official_server_is_refused_with_what_to_do(
    official_url: str,
) -> None:
    with pytest.raises(BinaryEncodingRefusedError, match="encoding='auto'"):
        opener("binary").open_group(official_url, [0, 1], [], 1)
    # Nothing was kept open: all three slots of the official server are free.
    channels = opener().open_group(official_url, [0, 1, 2], [], 1)
    close_channels(channels)


@pytest.mark.parametrize("batch", [True, False])
def test_our_server_at_capacity_refuses_and_nothing_stays_open(
    ours: ServerThread, batch: bool
) -> None:
    held = opener().open_group(ours.url, [9], [], 1)  # one of the three slots
    try:
        with pytest.raises(SessionsRefusedError) as info:
            opener(batch=batch).open_group(ours.url, [0, 1, 2], [], 1)
        # A batch_open asks for all three at once; plain sessions are refused one by one.
        assert info.value.refused == (3 if batch else 1)
        assert wait_for(lambda: ours.server.active_sessions == 1)
    finally:
        close_channels(held)


def test_an_official_server_at_capacity_refuses_the_extra_sessions(official_url: str) -> None:
    with pytest.raises(SessionsRefusedError) as info:
        opener().open_group(official_url, [0, 1, 2, 3, 4], [], 1)
    assert info.value.refused == 2
    channels = opener().open_group(official_url, [0, 1, 2], [], 1)  # all were closed
    close_channels(channels)


def round_trip(channels: list[Channel], ops: list[Any], url: str) -> list[Any]:
    chosen = [(channel, channel.frame(ops)) for channel in channels]
    sent = [(channel, frame) for channel, frame in chosen if frame is not None]
    replies = exchange_many([c.session for c, _ in sent], [f for _, f in sent], 20.0)
    results = []
    for (channel, _), raw in zip(sent, replies, strict=True):
        assert not isinstance(raw, BaseException), raw
        results.append((channel, channel.parse(raw, url)))
    return results


def test_a_round_trip_on_a_batch_connection(ours: ServerThread) -> None:
    channels = opener().open_group(ours.url, [0, 1, 2], [], 1)
    try:
        results = round_trip(channels, [("reset", {"seed": s}) for s in range(3)], ours.url)
        ((_, reset),) = results
        assert reset.indices == [0, 1, 2]
        assert np.asarray(reset.fields["observation"]).shape == (3, 4)
        ops: list[Any] = [("step", {"action": 1}), None, ("step", {"action": 0})]
        ((_, stepped),) = round_trip(channels, ops, ours.url)
        assert stepped.indices == [0, 2]
        assert stepped.reward == [1.0, 1.0]
        assert stepped.done == [False, False]
    finally:
        close_channels(channels)


def test_a_round_trip_on_plain_connections_of_an_official_server(official_url: str) -> None:
    channels = opener().open_group(official_url, [0, 1], [], 1)
    try:
        round_trip(channels, [("reset", {"seed": 10}), ("reset", {"seed": 20})], official_url)
        results = round_trip(channels, [("step", {"add": 1}), ("step", {"add": 2})], official_url)
        assert [result.fields["total"] for _, result in results] == [[11], [22]]
        assert [result.reward for _, result in results] == [[11.0], [22.0]]
        assert [channel.indices for channel, _ in results] == [[0], [1]]
    finally:
        close_channels(channels)


def test_a_failed_op_names_the_sub_env_it_came_from(ours: ServerThread) -> None:
    channels = opener().open_group(ours.url, [7, 8], [], 1)
    try:
        resets: list[Any] = [None] * 7 + [("reset", {}), ("reset", {})]
        round_trip(channels, resets, ours.url)  # ops are indexed by sub-env
        steps: list[Any] = [None] * 7 + [("step", {"action": 1}), ("step", {"action": 9})]
        with pytest.raises(ServerReplyError) as info:
            round_trip(channels, steps, ours.url)
        assert info.value.code == "VALIDATION_ERROR"
        assert "sub-env 8" in "".join(info.value.__notes__)
    finally:
        close_channels(channels)
