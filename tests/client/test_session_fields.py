"""A plain FastAPI server that hands out a session id on reset (``game_id``) and requires it
in every ``POST /step`` body: the id is echoed (named in ``space_sources`` and ``check``),
a lone UCI move string with ``legal_moves`` and a FEN is ``Discrete`` over every UCI move
with ``info["action_mask"]``, observation keys only later steps have go to ``info``, and a
required session field with no source is one typed error. Also a string observation, which
is one text field, and a reward object holding one number is that number. Real servers on
127.0.0.1 (:mod:`tests.third_party_servers.sessions`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import chess
import gymnasium as gym
import numpy as np
import pytest
from fastapi import FastAPI

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.client.http_session import openenv_reply
from openenv_gym.errors import SessionFieldError
from openenv_gym.spaces.uci_moves import UCI_MOVES
from tests.official_peer import serve_official_app
from tests.third_party_servers.sessions import chess_session_app, text_observation_app


@pytest.fixture
def chess_server() -> Iterator[tuple[str, FastAPI]]:
    app = chess_session_app()
    with serve_official_app(app) as url:
        yield url, app


def _play(env: Any, steps: int) -> tuple[int, list[dict[str, Any]]]:
    """``steps`` masked random moves (reset on an ending); the episodes and the infos."""
    env.action_space.seed(0)
    _, info = env.reset(seed=0)
    infos, episodes = [info], 1
    for _ in range(steps):
        action = env.action_space.sample(mask=info["action_mask"])  # int8, as Taxi's
        observation, _, terminated, truncated, info = env.step(action)
        assert observation in env.observation_space
        infos.append(info)
        if terminated or truncated:
            _, info = env.reset()
            episodes += 1
    return episodes, infos


def test_the_game_id_of_each_reset_is_echoed_in_every_step(
    chess_server: tuple[str, FastAPI],
) -> None:
    url, app = chess_server
    env = gym.make("openenv/Remote-v0", base_url=url)
    try:
        sources = env.unwrapped.space_sources
        assert sources.session_fields == ("game_id",)
        assert "session field: game_id, echoed from the reset reply" in sources.describe()
        env.reset(seed=0)
        env.step(int(np.flatnonzero(env.unwrapped.action_masks())[0]))
        env.reset()
        env.step(int(np.flatnonzero(env.unwrapped.action_masks())[0]))
    finally:
        env.close()
    first, second = (body["game_id"] for body in app.state.bodies)
    assert first
    assert second
    assert first != second
    assert all(set(body) == {"game_id", "action"} for body in app.state.bodies)


def test_a_uci_move_string_is_every_uci_move_masked_by_legal_moves(
    chess_server: tuple[str, FastAPI],
) -> None:
    url, app = chess_server
    env = gym.make("openenv/Remote-v0", base_url=url)
    try:
        assert env.action_space == gym.spaces.Discrete(len(UCI_MOVES))
        _, infos = _play(env, 30)
    finally:
        env.close()
    start = infos[0]["action_mask"]
    assert start.dtype == np.int8  # Gymnasium's mask type (Discrete.sample takes no other)
    legal = {UCI_MOVES[i] for i in np.flatnonzero(start)}
    assert legal == {move.uci() for move in chess.Board().legal_moves}
    sent = [body["action"] for body in app.state.bodies]
    assert len(sent) == 30
    assert all(isinstance(move, str) for move in sent)
    # the keys only steps have (is_checkmate, is_stalemate) arrive in info, not as errors
    assert {"is_checkmate", "is_stalemate", "last_move"} <= set(infos[1])
    assert infos[1]["last_move"] == sent[0]


@pytest.mark.slow
def test_the_chess_server_plays_200_masked_random_steps(chess_server: tuple[str, FastAPI]) -> None:
    url, app = chess_server
    env = gym.make("openenv/Remote-v0", base_url=url)
    try:
        episodes, _ = _play(env, 200)
    finally:
        env.close()
    assert len(app.state.bodies) == 200
    assert episodes >= 2  # the server truncates a game at 120 plies


def test_a_game_id_in_the_reset_info_is_echoed() -> None:
    app = chess_session_app("info")
    with serve_official_app(app) as url:
        env = gym.make("openenv/Remote-v0", base_url=url)
        try:
            _, info = env.reset(seed=0)
            env.step(int(np.flatnonzero(info["action_mask"])[0]))
        finally:
            env.close()
    assert app.state.bodies[0]["game_id"] == info["game_id"]


def test_a_required_session_field_with_no_source_is_one_typed_error() -> None:
    app = chess_session_app("nowhere")
    with serve_official_app(app) as url, pytest.raises(SessionFieldError) as caught:
        gym.make("openenv/Remote-v0", base_url=url)
    assert caught.value.field == "game_id"
    message = str(caught.value)
    assert "requires the body field 'game_id'" in message
    assert "reply keys: ['info', 'observation']" in message
    assert "action_model=MyAction" in message
    assert app.state.bodies == []  # no step was sent without it


@pytest.mark.parametrize("reward_model", [False, True])
def test_a_string_observation_is_one_text_field(reward_model: bool) -> None:
    with serve_official_app(text_observation_app(reward_model=reward_model)) as url:
        env = gym.make("openenv/Remote-v0", base_url=url)
        try:
            assert list(env.observation_space.spaces) == ["text"]
            observation, _ = env.reset(seed=0)
            assert observation["text"] == "{'waiting': 3, 'treated': 0}"
            observation, reward, *_ = env.step(1)  # treat
        finally:
            env.close()
    assert observation["text"] == "{'waiting': 2, 'treated': 1}"
    assert observation in env.observation_space
    assert reward == 1.0


def test_gymnasium_style_replies_read_as_openenv_ones() -> None:
    reply = openenv_reply(
        {"observation": {"x": 1}, "terminated": False, "truncated": True, "info": {"n": 2}}
    )
    assert reply["done"] is True
    assert reply["metadata"] == {"n": 2}
    kept = {"observation": {"x": 1}, "done": False, "truncated": True}
    assert openenv_reply(kept)["done"] is False  # a stated done is never overridden
    assert openenv_reply(["not", "a", "reply"]) == ["not", "a", "reply"]
    two = {"observation": {}, "reward": {"score": 1.0, "bonus": 2.0}}
    assert openenv_reply(two)["reward"] == {"score": 1.0, "bonus": 2.0}  # no guess: refused


def test_gymnasium_flags_of_an_http_reply_are_kept_as_sent() -> None:
    from openenv_gym.wire.messages import parse_server_object

    def flags(data: dict[str, Any]) -> Any:
        reply = parse_server_object({"type": "observation", "data": openenv_reply(data)})
        return reply.stated_flags  # type: ignore[union-attr]

    assert flags({"observation": {}, "terminated": False, "truncated": True}) == (False, True)
    assert flags({"observation": {}, "terminated": True, "truncated": True}) == (True, True)
    assert flags({"observation": {}, "terminated": True}) == (True, False)
    assert flags({"observation": {}, "done": True}) is None  # OpenEnv's own reply: done alone


def test_a_game_cut_by_the_server_is_truncated_not_terminated() -> None:
    with serve_official_app(chess_session_app(max_plies=2)) as url:
        env = gym.make("openenv/Remote-v0", base_url=url)
        try:
            _, info = env.reset(seed=0)
            _, _, terminated, truncated, info = env.step(
                env.action_space.sample(mask=info["action_mask"])
            )
            assert (terminated, truncated) == (False, False)
            _, _, terminated, truncated, _ = env.step(
                env.action_space.sample(mask=info["action_mask"])
            )
        finally:
            env.close()
    assert (terminated, truncated) == (False, True)


def test_a_reward_object_of_several_numbers_is_a_protocol_error() -> None:
    from openenv_gym.errors import ProtocolError
    from openenv_gym.wire.messages import parse_server_object

    body = openenv_reply({"observation": {}, "reward": {"score": 1.0, "bonus": 2.0}})
    with pytest.raises(ProtocolError, match="expected 'reward' to be a number or null"):
        parse_server_object({"type": "observation", "data": body})
