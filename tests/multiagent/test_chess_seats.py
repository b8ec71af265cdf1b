"""The chess server's self-play seats (``opponent="self"``) on the wire: whose turn it is,
each player's reward, turn checks, and an official ``openenv`` client playing both sides."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

chess = pytest.importorskip("chess")

from openenv.core import GenericEnvClient  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from openenv_gym.envs.chess import ChessEnvironment, chess_server  # noqa: E402
from openenv_gym.envs.chess.models import ChessAction  # noqa: E402
from openenv_gym.errors import GameOverError, NotYourTurnError  # noqa: E402
from openenv_gym.server import ServerThread  # noqa: E402
from openenv_gym.wire.messages import http_to_ws_url  # noqa: E402

FOOLS_MATE = ("f2f3", "e7e5", "g2g4", "d8h4")


@pytest.fixture(scope="module")
def selfplay_url() -> Iterator[str]:
    with ServerThread(chess_server(opponent="self", max_sessions=8)) as server:
        yield server.url


def test_official_client_plays_both_colours_to_mate(selfplay_url: str) -> None:
    client: Any = GenericEnvClient(base_url=selfplay_url).sync()
    try:
        result = client.reset(seed=0)
        seats = result.observation["metadata"]
        assert seats["players"] == ["white", "black"]
        assert seats["current_player"] == "white"
        for i, move in enumerate(FOOLS_MATE):
            assert move in result.observation["legal_moves"]
            result = client.step({"move": move})
            turn = result.observation["metadata"]["current_player"]
            assert turn == ("black" if i % 2 == 0 else "white")
        assert result.done is True
        assert result.observation["result"] == "0-1"
        assert result.reward == 1.0  # the mover's view: black mated white
        assert result.observation["metadata"]["rewards"] == {"white": -1.0, "black": 1.0}
        assert client.state()["move_history"] == list(FOOLS_MATE)
    finally:
        client.close()


def test_move_out_of_turn_and_after_the_end_are_refused_on_the_wire(selfplay_url: str) -> None:
    with connect(http_to_ws_url(selfplay_url)) as ws:
        ws.send('{"type":"reset","data":{"seed":0}}')
        ws.recv()
        ws.send(
            json.dumps({"type": "step", "data": {"move": "e7e5", "metadata": {"player": "black"}}})
        )
        reply = json.loads(ws.recv())
        assert reply["type"] == "error"
        assert reply["data"]["code"] == "VALIDATION_ERROR"
        assert "out of turn" in reply["data"]["message"]
        for move in FOOLS_MATE:  # nothing was lost: white still moves first
            player = "white" if move[1] in "12" else "black"
            ws.send(
                json.dumps({"type": "step", "data": {"move": move, "metadata": {"player": player}}})
            )
            assert json.loads(ws.recv())["type"] == "observation"
        ws.send('{"type":"step","data":{"move":"e2e4"}}')
        reply = json.loads(ws.recv())
        assert reply["type"] == "error"
        assert "game is over" in reply["data"]["message"]
        ws.send('{"type":"reset","data":{}}')
        assert json.loads(ws.recv())["data"]["observation"]["metadata"]["current_player"] == "white"


def test_environment_turn_errors_are_typed() -> None:
    env = ChessEnvironment(opponent="self")
    env.reset()
    with pytest.raises(NotYourTurnError, match="expected a move by 'white'"):
        env.step(ChessAction(move="e7e5", metadata={"player": "black"}))
    for move in FOOLS_MATE:
        env.step(ChessAction(move=move))
    with pytest.raises(GameOverError, match=r"env\.reset\(\)"):
        env.step(ChessAction(move="e2e4"))


def test_forfeit_and_move_limit_from_each_side() -> None:
    env = ChessEnvironment(opponent="self", illegal_move="loss")
    env.reset()
    env.step(ChessAction(move="e2e4"))
    lost = env.step(ChessAction(move="e2e4"))  # black plays an illegal move: black forfeits
    assert lost.done
    assert lost.result == "1-0"
    assert lost.metadata["rewards"] == {"white": 1.0, "black": -1.0}
    with pytest.raises(GameOverError):
        env.step(ChessAction(move="e7e5"))
    short = ChessEnvironment(opponent="self", max_moves=2)
    short.reset()
    short.step(ChessAction(move="g1f3"))
    drawn = short.step(ChessAction(move="g8f6"))
    assert drawn.done
    assert drawn.result == "1/2-1/2"
    assert drawn.metadata["truncated"] is True
    assert drawn.metadata["rewards"] == {"white": 0.0, "black": 0.0}
    penalty = ChessEnvironment(opponent="self")
    penalty.reset()
    bad = penalty.step(ChessAction(move="e2e5"))
    assert bad.metadata["rewards"] == {"white": -0.1, "black": 0.0}
    assert bad.metadata["current_player"] == "white"  # no move was made
