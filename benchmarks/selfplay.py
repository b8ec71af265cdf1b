"""``python -m benchmarks.selfplay``: chess self-play moves per second, over OpenEnv and local.

Masked random moves for both players (the move choice is counted in every row):

* ``pettingzoo chess_v6 (local)``: PettingZoo's own chess, in this process;
* ``openenv AEC (1 game)``: :func:`openenv_gym.multiagent.make` on an embedded chess server
  (``opponent="self"``), one round trip per move;
* ``openenv SelfPlayVectorEnv (N games)``: N games stepped together, one round trip per
  step (one frame for all of them on our server).

Each row plays for ``--seconds`` after one warm-up game. Report the machine's load beside
the figures (``uptime``): on a shared machine they move with it.

Example (a tiny run)::

    python -m benchmarks.selfplay --seconds 0.5 --num-games 4
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def pettingzoo_chess(seconds: float, rng: np.random.Generator) -> float:
    """Moves per second of PettingZoo's local ``chess_v6``."""
    from pettingzoo.classic import chess_v6

    env = chess_v6.env()
    env.reset(seed=0)
    return _aec_rate(env, seconds, rng)


def openenv_aec(seconds: float, rng: np.random.Generator) -> float:
    """Moves per second of one remote game through the AEC env."""
    from openenv_gym.multiagent import make

    env = make("openenv/Chess-v0", max_moves=200)
    try:
        env.reset(seed=0)
        return _aec_rate(env, seconds, rng)
    finally:
        env.close()


def _aec_rate(env: Any, seconds: float, rng: np.random.Generator) -> float:
    moves = 0
    deadline = time.perf_counter() + seconds
    start = time.perf_counter()
    while time.perf_counter() < deadline:
        for agent in env.agent_iter():
            observation, _r, terminated, truncated, _info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            env.step(int(rng.choice(np.flatnonzero(observation["action_mask"]))))
            moves += 1
            del agent
        env.reset()
    return moves / (time.perf_counter() - start)


def openenv_vector(num_games: int) -> Callable[[float, np.random.Generator], float]:
    def run(seconds: float, rng: np.random.Generator) -> float:
        from openenv_gym.multiagent import SelfPlayVectorEnv

        games = SelfPlayVectorEnv("openenv/Chess-v0", num_envs=num_games, max_moves=200)
        try:
            _obs, info = games.reset(seed=0)
            moves = 0
            deadline = time.perf_counter() + seconds
            start = time.perf_counter()
            while time.perf_counter() < deadline:
                actions = np.array([rng.choice(np.flatnonzero(m)) for m in info["action_mask"]])
                _obs, _rewards, _terminations, _truncations, info = games.step(actions)
                moves += num_games
            return moves / (time.perf_counter() - start)
        finally:
            games.close()

    return run


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="per row")
    parser.add_argument("--num-games", type=int, default=16, help="games of the vector row")
    args = parser.parse_args(argv)
    rows = (
        ("pettingzoo chess_v6 (local)", pettingzoo_chess),
        ("openenv AEC (1 game)", openenv_aec),
        (f"openenv SelfPlayVectorEnv ({args.num_games} games)", openenv_vector(args.num_games)),
    )
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(f"{'contender':<42} {'moves/s':>10}")
    for name, run in rows:
        rate = run(args.seconds, np.random.default_rng(0))
        print(f"{name:<42} {rate:>10.0f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
