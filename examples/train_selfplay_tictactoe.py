"""CleanRL-style self-play with one shared policy, on a two-player game served over OpenEnv.

Both seats of every game are played by the same policy (an actor-critic MLP over the board
seen from the side to move, masked to the legal cells). ``SelfPlayVectorEnv`` steps all
games in one round trip to the server and pays each seat its own reward; when a game ends,
every move of each seat is credited with that seat's result (discounted by the plies to the
end), and the policy takes a policy-gradient step with a value baseline. Before and after
training, the greedy policy plays the uniformly random player, half its games as X and half
as O.

The game is tic-tac-toe from ``tictactoe_server.py`` beside this script, started here on
127.0.0.1 (or pass ``--base-url`` of a running one). The loop itself only needs a server that
seats both players (see docs/multiagent.md); the policy's input is this game's 9-cell board.

Run::

    python examples/train_selfplay_tictactoe.py            # ~1-2 minutes
    python examples/train_selfplay_tictactoe.py --quick    # a smoke test, well under a minute
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
from tictactoe_server import tictactoe_server
from torch import nn
from torch.distributions import Categorical

from openenv_gym.multiagent import SelfPlayVectorEnv
from openenv_gym.server import ServerThread


class Policy(nn.Module):
    def __init__(self, n_cells: int = 9, hidden: int = 128) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(n_cells, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh()
        )
        self.actor = nn.Linear(hidden, n_cells)
        self.critic = nn.Linear(hidden, 1)

    def forward(self, board: torch.Tensor, mask: torch.Tensor) -> tuple[Categorical, torch.Tensor]:
        hidden = self.body(board)
        logits = self.actor(hidden).masked_fill(~mask, -1e9)
        return Categorical(logits=logits), self.critic(hidden).squeeze(-1)


@dataclass
class Game:
    """One game's moves so far: the board seen by the mover, the mask, the move, the seat."""

    boards: list[np.ndarray] = field(default_factory=list)
    masks: list[np.ndarray] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    seats: list[int] = field(default_factory=list)


def own_view(obs: dict[str, np.ndarray], agent: np.ndarray) -> np.ndarray:
    """The boards from the side to move: its marks +1, the opponent's -1."""
    sign = np.where(agent == 0, 1.0, -1.0)[:, None]
    return (obs["board"] * sign).astype(np.float32)


def play_against_random(
    policy: Policy, games: SelfPlayVectorEnv, count: int, rng: np.random.Generator
) -> tuple[int, int, int]:
    """The greedy policy against uniform random moves: (wins, losses, draws); the policy
    holds seat ``i % 2`` in row ``i``."""
    obs, info = games.reset()
    policy_seat = np.arange(games.num_envs) % 2
    wins = losses = draws = played = 0
    while played < count:
        board = torch.as_tensor(own_view(obs, info["agent"]))
        mask = torch.as_tensor(info["action_mask"].astype(bool))
        with torch.no_grad():
            greedy = policy(board, mask)[0].probs.argmax(-1).numpy()
        randoms = np.array([rng.choice(np.flatnonzero(m)) for m in info["action_mask"]])
        actions = np.where(info["agent"] == policy_seat, greedy, randoms)
        obs, rewards, terminations, truncations, info = games.step(actions)
        for i in np.flatnonzero(terminations | truncations):
            mine = rewards[i, policy_seat[i]]
            wins, losses, draws = wins + (mine > 0), losses + (mine < 0), draws + (mine == 0)
            played += 1
    return int(wins), int(losses), int(draws)


def score(result: tuple[int, int, int]) -> str:
    return f"{result[0]} wins, {result[1]} losses, {result[2]} draws"


@contextlib.contextmanager
def game_server(base_url: str | None, sessions: int) -> Iterator[str]:
    if base_url is not None:
        yield base_url
        return
    with ServerThread(tictactoe_server(max_sessions=sessions)) as server:
        yield server.url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--base-url", default=None, help="a running tic-tac-toe server")
    parser.add_argument("--env-id", default="openenv/Remote-v0")
    parser.add_argument("--num-games", type=int, default=64, help="games stepped together")
    parser.add_argument("--steps", type=int, default=None, help="vector steps of training")
    parser.add_argument("--eval-games", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    steps = args.steps or (300 if args.quick else 4000)
    eval_games = args.eval_games or (100 if args.quick else 1000)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    rng = np.random.default_rng(args.seed)
    policy = Policy()
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    gamma, batch_moves = 0.9, 512

    with game_server(args.base_url, 2 * args.num_games) as url:
        games = SelfPlayVectorEnv(args.env_id, num_envs=args.num_games, base_url=url)
        evaluation = SelfPlayVectorEnv(args.env_id, num_envs=args.num_games, base_url=url)
        try:
            before = play_against_random(policy, evaluation, eval_games, rng)
            print(f"before training, against random: {score(before)}")
            obs, info = games.reset(seed=args.seed)
            running = [Game() for _ in range(args.num_games)]
            batch: dict[str, list] = {"boards": [], "masks": [], "actions": [], "returns": []}
            finished = moves = 0
            start = time.perf_counter()
            for _ in range(steps):
                board = own_view(obs, info["agent"])
                mask = info["action_mask"].astype(bool)
                with torch.no_grad():
                    actions = (
                        policy(torch.as_tensor(board), torch.as_tensor(mask))[0].sample().numpy()
                    )
                for i, game in enumerate(running):
                    game.boards.append(board[i])
                    game.masks.append(mask[i])
                    game.actions.append(int(actions[i]))
                    game.seats.append(int(info["agent"][i]))
                obs, rewards, terminations, truncations, info = games.step(actions)
                moves += args.num_games
                for i in np.flatnonzero(terminations | truncations):
                    game, plies = running[i], len(running[i].actions)
                    batch["boards"] += game.boards
                    batch["masks"] += game.masks
                    batch["actions"] += game.actions
                    batch["returns"] += [
                        rewards[i, s] * gamma ** (plies - 1 - t) for t, s in enumerate(game.seats)
                    ]
                    running[i] = Game()
                    finished += 1
                if len(batch["actions"]) >= batch_moves:
                    dist, value = policy(
                        torch.as_tensor(np.array(batch["boards"])),
                        torch.as_tensor(np.array(batch["masks"])),
                    )
                    returns = torch.as_tensor(np.array(batch["returns"], dtype=np.float32))
                    advantage = returns - value.detach()
                    logprob = dist.log_prob(torch.as_tensor(batch["actions"]))
                    loss = (
                        -(advantage * logprob).mean()
                        + 0.5 * ((returns - value) ** 2).mean()
                        - 0.01 * dist.entropy().mean()
                    )
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    batch = {key: [] for key in batch}
            elapsed = time.perf_counter() - start
            rate = moves / elapsed
            print(
                f"self-play: {finished} games, {moves} moves in {elapsed:.1f} s "
                f"({rate:.0f} moves/s, training included)"
            )
            after = play_against_random(policy, evaluation, eval_games, rng)
            print(f"after training, against random: {score(after)}")
        finally:
            games.close()
            evaluation.close()


if __name__ == "__main__":
    main()
