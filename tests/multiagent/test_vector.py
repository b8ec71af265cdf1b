"""``SelfPlayVectorEnv`` on a real chess server: many games with masked random moves,
each game mirrored on python-chess, per-seat rewards at every end, and misuse."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

chess = pytest.importorskip("chess")
pytest.importorskip("pettingzoo")

from openenv_gym.envs.chess import chess_server  # noqa: E402
from openenv_gym.envs.chess.encoding import index_to_move  # noqa: E402
from openenv_gym.errors import EnvConfigError, SeatsUnavailableError  # noqa: E402
from openenv_gym.multiagent import SelfPlayVectorEnv  # noqa: E402
from openenv_gym.server import ServerThread  # noqa: E402

ENDGAME = "4k3/8/8/8/8/8/3QR3/4K3 w - - 0 1"
SCORE = {"1-0": [1.0, -1.0], "0-1": [-1.0, 1.0], "1/2-1/2": [0.0, 0.0]}


@pytest.fixture(scope="module")
def selfplay_url() -> Iterator[str]:
    with ServerThread(chess_server(opponent="self", max_moves=40, max_sessions=8)) as server:
        yield server.url


def test_games_step_together_and_agree_with_python_chess(selfplay_url: str) -> None:
    games = SelfPlayVectorEnv("openenv/Chess-v0", num_envs=4, base_url=selfplay_url)
    rng = np.random.default_rng(0)
    try:
        _obs, info = games.reset(seed=0, options={"fen": ENDGAME})
        assert games.possible_agents == ["player_0", "player_1"]
        boards = [chess.Board(ENDGAME) for _ in range(4)]
        finished = 0
        while finished < 4:
            assert info["agent"].tolist() == [int(b.turn == chess.BLACK) for b in boards]
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in info["action_mask"]])
            for board, action in zip(boards, actions, strict=True):
                board.push(index_to_move(int(action), board))
            _obs, rewards, terminations, truncations, info = games.step(actions)
            for i in np.flatnonzero(np.logical_or(terminations, truncations)):
                result = info["final_info"]["result"][i]
                outcome = boards[i].outcome(claim_draw=True)
                assert result == ("1/2-1/2" if outcome is None else outcome.result())
                assert rewards[i].tolist() == SCORE[result]
                assert bool(truncations[i]) == (outcome is None)
                boards[i] = chess.Board(info["fen"][i])  # the next game
                finished += 1
            for i in np.flatnonzero(~np.logical_or(terminations, truncations)):
                assert rewards[i].tolist() == [0.0, 0.0]
                assert info["fen"][i] == boards[i].fen()
    finally:
        games.close()


def test_one_seat_server_and_step_before_reset_are_refused() -> None:
    with ServerThread(chess_server(opponent="random", max_sessions=4)) as server:
        games = SelfPlayVectorEnv("openenv/Chess-v0", num_envs=2, base_url=server.url)
        with pytest.raises(EnvConfigError, match=r"reset\(\) before step\(\)"):
            games.step(np.zeros(2, np.int64))
        with pytest.raises(SeatsUnavailableError, match="seats one player"):
            games.reset()
