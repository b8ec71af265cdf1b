"""The chess server and ``openenv/Chess-v0``: official schema, opponents, illegal-move
policies, the move encoding, masks, and a short MaskablePPO run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import httpx
import numpy as np
import pytest

chess = pytest.importorskip("chess")

from openenv.core import GenericEnvClient  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

import openenv_gym  # noqa: E402, F401  (registers the ids)
from openenv_gym.envs.chess import ChessEnvironment, ChessOpenEnvEnv, chess_server  # noqa: E402
from openenv_gym.envs.chess.encoding import (  # noqa: E402
    N_ACTIONS,
    board_planes,
    index_to_move,
    legal_move_mask,
    move_to_index,
)
from openenv_gym.envs.chess.models import ChessAction  # noqa: E402
from openenv_gym.envs.chess.opponents import MaterialOpponent, UCIOpponent  # noqa: E402
from openenv_gym.errors import (  # noqa: E402
    ActionOutOfSpaceError,
    EnvConfigError,
    IllegalMoveError,
    UCIEngineNotFoundError,
)
from openenv_gym.server import ServerThread  # noqa: E402
from openenv_gym.wire.messages import http_to_ws_url  # noqa: E402


@pytest.fixture(scope="module")
def chess_url() -> Iterator[str]:
    with ServerThread(chess_server(opponent="random", max_sessions=16)) as server:
        yield server.url


def test_schema_is_the_official_one(chess_url: str) -> None:
    schema = httpx.get(chess_url + "/schema").json()
    assert set(schema["action"]["properties"]) == {"move", "metadata"}
    assert schema["action"]["required"] == ["move"]
    observation = schema["observation"]["properties"]
    assert set(observation) == {
        "fen",
        "legal_moves",
        "is_check",
        "result",
        "done",
        "reward",
        "metadata",
    }
    assert observation["legal_moves"]["items"] == {"type": "string"}
    assert set(schema["state"]["properties"]) >= {"fen", "current_player", "move_history"}


def test_move_encoding_round_trips_every_legal_move() -> None:
    rng = np.random.default_rng(0)
    positions = [
        chess.Board(),
        chess.Board("8/P6k/8/8/8/8/6Kp/8 w - - 0 1"),  # promotions both ways
        chess.Board("r3k2r/1P6/8/8/8/8/1p6/R3K2R b KQkq - 0 1"),  # castling, capture-promotions
    ]
    board = chess.Board()
    for _ in range(60):  # and a random game's positions
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(moves[int(rng.integers(len(moves)))])
        positions.append(board.copy())
    for position in positions:
        seen = set()
        for move in position.legal_moves:
            index = move_to_index(move)
            assert 0 <= index < N_ACTIONS
            assert index_to_move(index, position) == move
            seen.add(index)
        assert len(seen) == position.legal_moves.count()  # no two moves share an index
        assert legal_move_mask(position).sum() == len(seen)
    assert index_to_move(0, chess.Board()) == chess.Move.null()


def test_planes_describe_the_position() -> None:
    board = chess.Board("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 1")
    planes = board_planes(board)
    assert planes.shape == (8, 8, 18)
    assert planes.dtype == np.float32
    assert planes[0, 4, 5] == 1.0  # white king e1
    assert planes[7, 4, 11] == 1.0  # black king e8
    assert planes[4, 4, 0] == 1.0  # white pawn e5
    assert planes[4, 3, 6] == 1.0  # black pawn d5
    assert planes[:, :, 12].all()  # white to move
    assert not planes[:, :, 13:17].any()  # no castling rights
    assert planes[5, 3, 17] == 1.0  # en passant d6
    assert planes.sum() == 4 + 64 + 1


def test_gymnasium_side_plays_a_seeded_game(chess_url: str) -> None:
    env = gym.make("openenv/Chess-v0", base_url=chess_url)
    try:
        assert env.observation_space == gym.spaces.Box(0, 1, (8, 8, 18), np.float32)
        assert env.action_space == gym.spaces.Discrete(N_ACTIONS)
        games = []
        for _ in range(2):
            obs, info = env.reset(seed=4)
            assert env.observation_space.contains(obs)
            assert info["fen"] == chess.STARTING_FEN
            rng = np.random.default_rng(1)
            fens = []
            for _ in range(20):
                mask = env.unwrapped.action_masks()  # type: ignore[attr-defined]
                assert mask.dtype == bool
                assert mask.sum() == len(info["legal_moves"])
                action = int(rng.choice(np.flatnonzero(mask)))
                obs, reward, terminated, truncated, info = env.step(action)
                fens.append(info["fen"])
                assert env.observation_space.contains(obs)
                assert reward in (0.0, 1.0, -1.0)
                if terminated or truncated:
                    break
            games.append(fens)
        assert games[0] == games[1]  # same seed, same moves: same opponent replies
    finally:
        env.close()


@pytest.mark.parametrize(
    ("policy", "reward", "done"), [("penalty", -0.1, False), ("loss", -1.0, True)]
)
def test_illegal_move_policies(policy: str, reward: float, done: bool) -> None:
    with ServerThread(chess_server(illegal_move=policy)) as server:
        env = ChessOpenEnvEnv(server.url)
        try:
            env.reset(seed=0)
            illegal = move_to_index(chess.Move.from_uci("e2e5"))
            _obs, r, terminated, truncated, info = env.step(illegal)
            assert r == reward
            assert terminated is done
            assert truncated is False
            assert (info["result"] == "0-1") is done
            assert info["fen"] == chess.STARTING_FEN  # no move was made
        finally:
            env.close()


def test_illegal_move_error_policy_replies_validation_error() -> None:
    with (
        ServerThread(chess_server(illegal_move="error")) as server,
        connect(http_to_ws_url(server.url)) as ws,
    ):
        ws.send('{"type":"reset","data":{"seed":0}}')
        ws.recv()
        for bad in ("e2e5", "zz99", ""):
            ws.send(json.dumps({"type": "step", "data": {"move": bad}}))
            reply = ws.recv()
            assert '"VALIDATION_ERROR"' in reply
            assert "is not legal" in reply
        ws.send('{"type":"step","data":{"move":"e2e4"}}')
        assert '"observation"' in ws.recv()
    env = ChessEnvironment(illegal_move="error")
    env.reset(seed=0)
    with pytest.raises(IllegalMoveError, match="expected a legal UCI move such as"):
        env.step(ChessAction(move="a1a8"))


def test_client_checks_the_action_space(chess_url: str) -> None:
    env = ChessOpenEnvEnv(chess_url)
    try:
        env.reset(seed=0)
        with pytest.raises(ActionOutOfSpaceError, match="Discrete"):
            env.step(N_ACTIONS)
        with pytest.raises(ActionOutOfSpaceError):
            env.step("e2e4")
    finally:
        env.close()


def test_material_opponent_takes_free_material_and_mates() -> None:
    import random

    opponent = MaterialOpponent()
    board = chess.Board("k7/8/8/8/8/8/8/KQ5r b - - 0 1")
    assert opponent(board, random.Random(0)).uci() == "h1b1"
    mate = chess.Board("6k1/5ppp/8/8/8/8/8/K3R3 w - - 0 1")
    assert opponent(mate, random.Random(0)).uci() == "e1e8"
    env = ChessEnvironment(opponent="material", agent_color="black")
    first = env.reset(seed=0)
    assert first.fen.split()[1] == "b"  # the opponent (white) moved first
    assert env.state.move_history


def test_bad_options_are_clear_errors() -> None:
    with pytest.raises(EnvConfigError, match="opponent"):
        gym.make("openenv/Chess-v0", opponent="stockfish")
    with pytest.raises(EnvConfigError, match="illegal_move"):
        chess_server(illegal_move="ignore")
    with pytest.raises(UCIEngineNotFoundError, match="not found on PATH"):
        UCIOpponent("no-such-engine-here")
    with pytest.raises(UCIEngineNotFoundError, match="'no-such-engine-here'"):
        gym.make("openenv/Chess-v0", opponent="uci", uci_engine="no-such-engine-here")
    with pytest.raises(EnvConfigError, match="invalid fen"):
        ChessEnvironment().reset(fen="not a fen")


def test_official_client_plays_our_chess_server(chess_url: str) -> None:
    client: Any = GenericEnvClient(base_url=chess_url).sync()
    try:
        result = client.reset(seed=0)
        assert "e2e4" in result.observation["legal_moves"]
        result = client.step({"move": "e2e4"})
        assert result.observation["fen"].split()[1] == "w"
        assert result.done is False
        assert client.state()["move_history"][0] == "e2e4"
    finally:
        client.close()


def test_embedded_chess_server() -> None:
    env = gym.make("openenv/Chess-v0", opponent="material", illegal_move="loss")
    try:
        _obs, info = env.reset(seed=0)
        assert info["agent_color"] == "white"
        env.step(move_to_index(chess.Move.from_uci("e2e4")))
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
def test_maskable_ppo_trains_a_few_hundred_steps(chess_url: str) -> None:
    sb3_contrib = pytest.importorskip("sb3_contrib")
    env = ChessOpenEnvEnv(chess_url)
    try:
        model = sb3_contrib.MaskablePPO(
            "MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0, device="cpu"
        )
        model.learn(total_timesteps=256)
        assert model.num_timesteps >= 256
        obs, _ = env.reset(seed=1)
        action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
        assert env.action_masks()[int(action)]  # masked prediction is a legal move
    finally:
        env.close()


TINY_UCI_ENGINE = """
import sys
import chess

board = chess.Board()
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "uci":
        print("id name tiny-first-move")
        print("uciok", flush=True)
    elif words[0] == "isready":
        print("readyok", flush=True)
    elif words[0] == "position":
        board = chess.Board() if words[1] == "startpos" else chess.Board(" ".join(words[2:8]))
        if "moves" in words:
            for move in words[words.index("moves") + 1 :]:
                board.push_uci(move)
    elif words[0] == "go":
        best = sorted(m.uci() for m in board.legal_moves)[0]
        print(f"bestmove {best}", flush=True)
    elif words[0] == "quit":
        break
"""


def test_uci_opponent_plays_an_engine_process(tmp_path: Any) -> None:
    """A real (tiny) UCI engine process: it always plays the alphabetically first move."""
    import stat
    import sys

    script = tmp_path / "tiny-engine"
    script.write_text(f"#!{sys.executable}\n{TINY_UCI_ENGINE}")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    env = ChessEnvironment(opponent="uci", uci_engine=str(script))
    try:
        env.reset(seed=0)
        after = env.step(ChessAction(move="e2e4"))
        assert env.state.move_history == ["e2e4", "a7a5"]  # the engine's (first) choice
        assert after.fen.split()[1] == "w"
        assert "d2d4" in after.legal_moves
    finally:
        env.close()
