"""``openenv_gym.multiagent`` on a real chess server: PettingZoo's API tests, full games
with masked random moves checked against python-chess, promotions, castling, the move
limit, and misuse (a move after the end, a server with one seat, an unknown id)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

chess = pytest.importorskip("chess")
pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, parallel_api_test  # noqa: E402

from openenv_gym.envs.chess import chess_server  # noqa: E402
from openenv_gym.envs.chess.encoding import index_to_move, move_to_index  # noqa: E402
from openenv_gym.errors import (  # noqa: E402
    EnvConfigError,
    GameOverError,
    SeatsUnavailableError,
    ServerReplyError,
)
from openenv_gym.multiagent import OpenEnvAECEnv, make, parallel_env  # noqa: E402
from openenv_gym.server import ServerThread  # noqa: E402


@pytest.fixture(scope="module")
def selfplay_url() -> Iterator[str]:
    with ServerThread(
        chess_server(opponent="self", illegal_move="error", max_moves=60, max_sessions=8)
    ) as server:
        yield server.url


@pytest.fixture
def env(selfplay_url: str) -> Iterator[OpenEnvAECEnv]:
    game = make("openenv/Chess-v0", base_url=selfplay_url, render_mode="ansi")
    yield game
    game.close()


def test_pettingzoo_api_test(env: OpenEnvAECEnv) -> None:
    api_test(env, num_cycles=40)


def test_pettingzoo_parallel_api_test(selfplay_url: str) -> None:
    game = parallel_env("openenv/Chess-v0", base_url=selfplay_url)
    try:
        parallel_api_test(game, num_cycles=40)
    finally:
        game.close()


def _play(env: OpenEnvAECEnv, board: chess.Board, rng: np.random.Generator) -> dict[str, float]:
    """Masked random moves to the end, mirrored on ``board``; the summed rewards."""
    totals = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, _info = env.last()
        totals[agent] += reward
        if terminated or truncated:
            env.step(None)
            continue
        expected = "player_0" if board.turn == chess.WHITE else "player_1"
        assert agent == expected
        legal = np.flatnonzero(observation["action_mask"])
        assert len(legal) == board.legal_moves.count()
        action = int(rng.choice(legal))
        board.push(index_to_move(action, board))
        env.step(action)
    return totals


@pytest.mark.parametrize("seed", [0, 1])
def test_random_games_agree_with_python_chess(env: OpenEnvAECEnv, seed: int) -> None:
    # Endgames with few pieces, so random play reaches mates and stalemates too.
    fen = "4k3/8/8/8/8/8/3QR3/4K3 w - - 0 1"
    env.reset(seed=seed, options={"fen": fen})
    board = chess.Board(fen)
    totals = _play(env, board, np.random.default_rng(seed))
    assert not env.agents
    outcome = board.outcome(claim_draw=True)
    if outcome is None:  # the server's move limit
        assert board.ply() - chess.Board(fen).ply() == 60
        assert totals == {"player_0": 0.0, "player_1": 0.0}
    else:
        winner = {chess.WHITE: 1.0, chess.BLACK: -1.0, None: 0.0}[outcome.winner]
        assert totals == {"player_0": winner, "player_1": -winner}


def test_full_game_from_the_start(env: OpenEnvAECEnv) -> None:
    env.reset(seed=3)
    board = chess.Board()
    totals = _play(env, board, np.random.default_rng(3))
    assert totals["player_0"] == -totals["player_1"]
    assert board.ply() <= 60


def test_promotions_and_castling(env: OpenEnvAECEnv) -> None:
    env.reset(options={"fen": "r3k3/1P6/8/8/8/8/8/R3K2R w KQq - 0 1"})
    env.step(move_to_index(chess.Move.from_uci("b7a8n")))  # under-promotion with capture
    assert env.infos["player_1"]["fen"].startswith("N3k3/")
    assert env.agent_selection == "player_1"
    env.step(move_to_index(chess.Move.from_uci("e8d7")))
    env.step(move_to_index(chess.Move.from_uci("e1g1")))  # castling king side
    assert env.infos["player_0"]["fen"].split()[0].endswith("R4RK1")
    env.reset(options={"fen": "8/5P2/8/8/8/8/k7/4K3 w - - 0 1"})
    env.step(move_to_index(chess.Move.from_uci("f7f8q")))  # the plain index promotes to a queen
    assert env.infos["player_0"]["fen"].startswith("5Q2/")
    assert env.render().splitlines()[0] == ". . . . . Q . ."


def test_move_limit_draw_truncates_both() -> None:
    with ServerThread(chess_server(opponent="self", max_moves=3)) as server:
        game = make("openenv/Chess-v0", base_url=server.url)
        try:
            game.reset()
            for move in ("g1f3", "g8f6", "b1c3"):
                assert not any(game.truncations.values())
                game.step(move_to_index(chess.Move.from_uci(move)))
            assert game.truncations == {"player_0": True, "player_1": True}
            assert game.terminations == {"player_0": False, "player_1": False}
            assert game.rewards == {"player_0": 0.0, "player_1": 0.0}
            assert game.infos["player_0"]["result"] == "1/2-1/2"
        finally:
            game.close()


def test_move_after_the_end_is_a_typed_error(env: OpenEnvAECEnv) -> None:
    env.reset()
    for move in ("f2f3", "e7e5", "g2g4", "d8h4"):
        env.step(move_to_index(chess.Move.from_uci(move)))
    assert env.terminations == {"player_0": True, "player_1": True}
    assert env.rewards == {"player_0": -1.0, "player_1": 1.0}
    with pytest.raises(GameOverError, match=r"env\.step\(None\)"):
        env.step(move_to_index(chess.Move.from_uci("e2e4")))
    env.step(None)
    env.step(None)
    assert env.agents == []


def test_illegal_move_is_refused_and_nothing_is_lost(env: OpenEnvAECEnv) -> None:
    env.reset()
    with pytest.raises(ServerReplyError, match="is not legal"):
        env.step(move_to_index(chess.Move.from_uci("e7e5")))  # black's pawn, white to move
    assert env.agent_selection == "player_0"
    env.step(move_to_index(chess.Move.from_uci("e2e4")))
    assert env.agent_selection == "player_1"


def test_a_server_with_one_seat_is_refused(selfplay_url: str) -> None:
    with (
        ServerThread(chess_server(opponent="random")) as server,
        pytest.raises(SeatsUnavailableError, match="opponent='self'"),
    ):
        make("openenv/Chess-v0", base_url=server.url)
    with pytest.raises(SeatsUnavailableError, match="seats 2"):
        make("openenv/Chess-v0", base_url=selfplay_url, players=3)


def test_unknown_id_is_a_config_error() -> None:
    with pytest.raises(EnvConfigError, match="openenv/Chess-v0"):
        make("openenv/NoSuchGame-v0")
