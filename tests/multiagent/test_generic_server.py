"""The multi-agent envs on a server that is not chess: the example's tic-tac-toe, through
``openenv/Remote-v0`` (spaces from its schema). PettingZoo's API tests, a full game,
turn checks on the wire, and the vector of games."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from gymnasium import spaces
from pettingzoo.test import api_test, parallel_api_test
from websockets.sync.client import connect

from openenv_gym.errors import GameOverError
from openenv_gym.multiagent import SelfPlayVectorEnv, make, parallel_env
from openenv_gym.server import ServerThread
from openenv_gym.wire.messages import http_to_ws_url
from tests.multiagent.conftest import tictactoe_example


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with ServerThread(tictactoe_example().tictactoe_server(max_sessions=16)) as server:
        yield server.url


def test_spaces_come_from_the_schema(url: str) -> None:
    game = make("openenv/Remote-v0", base_url=url)
    try:
        assert game.action_space("player_1") == spaces.Discrete(9)
        board = game.observation_space("player_0")["observation"]["board"]
        assert (board.shape, int(board.low[0]), int(board.high[0])) == ((9,), -1, 1)
        assert game.seats.players == ("x", "o")
    finally:
        game.close()


def test_api_tests(url: str) -> None:
    game = make("openenv/Remote-v0", base_url=url)
    try:
        api_test(game, num_cycles=30)
    finally:
        game.close()
    parallel = parallel_env("openenv/Remote-v0", base_url=url)
    try:
        parallel_api_test(parallel, num_cycles=30)
    finally:
        parallel.close()


def test_a_won_game_pays_each_seat(url: str) -> None:
    game = make("openenv/Remote-v0", base_url=url)
    try:
        game.reset()
        for cell in (0, 3, 1, 4, 2):  # X takes the top row
            game.step(cell)
        assert game.terminations == {"player_0": True, "player_1": True}
        assert game.rewards == {"player_0": 1.0, "player_1": -1.0}
        assert game.infos["player_0"]["winner"] == "x"
        with pytest.raises(GameOverError):
            game.step(5)
    finally:
        game.close()


def test_out_of_turn_on_the_wire(url: str) -> None:
    with connect(http_to_ws_url(url)) as ws:
        ws.send('{"type":"reset","data":{}}')
        ws.recv()
        ws.send(json.dumps({"type": "step", "data": {"cell": 4, "metadata": {"player": "o"}}}))
        reply = json.loads(ws.recv())
        assert reply["data"]["code"] == "VALIDATION_ERROR"
        assert "out of turn" in reply["data"]["message"]
        ws.send(json.dumps({"type": "step", "data": {"cell": 4, "metadata": {"player": "x"}}}))
        seats = json.loads(ws.recv())["data"]["observation"]["metadata"]
        assert seats["current_player"] == "o"


def test_vector_of_games(url: str) -> None:
    games = SelfPlayVectorEnv("openenv/Remote-v0", num_envs=4, base_url=url)
    try:
        obs, info = games.reset(seed=0)
        assert obs["board"].shape == (4, 9)
        ended = 0
        while ended < 4:
            actions = np.array([np.flatnonzero(m)[0] for m in info["action_mask"]])
            obs, rewards, terminations, _truncations, info = games.step(actions)
            assert (rewards.sum(axis=1) == 0).all()
            ended += int(terminations.sum())
        # The first free cell every time: X wins on the diagonal 0-4-8 on move 7.
        assert rewards[terminations].tolist() == [[1.0, -1.0]] * int(terminations.sum())
    finally:
        games.close()
