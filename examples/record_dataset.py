"""Record episodes from a remote env, load them with `datasets`, train behavioural cloning.

1. An ``openenv-gym serve gymnasium --env-id CartPole-v1`` child process serves the env.
2. An experiment config (env + a ``record`` wrapper) builds the env with
   :func:`openenv_gym.make_from_config`; a hand-written controller plays ``--episodes``
   episodes, recorded as Parquet transitions ``(s, a, r, s', terminated, truncated)``.
3. ``datasets.load_dataset("parquet", data_dir=out)`` loads them (shapes and dtypes kept).
4. A tiny torch MLP learns action = f(observation) by cross-entropy for a few epochs.
5. The cloned policy plays the remote env; the script prints its mean return.

    python examples/record_dataset.py             # 20 episodes, 20 epochs, 10 evaluations
    python examples/record_dataset.py --quick     # 2 episodes, 1 epoch, 1 evaluation
    python examples/record_dataset.py --out runs/cartpole-expert   # keep the recording
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from datasets import load_dataset
from torch import nn

import openenv_gym
from openenv_gym.providers.local import LocalServerProcess


def controller(observation: np.ndarray) -> int:
    """A CartPole expert: push towards where the pole is falling."""
    _x, _x_dot, angle, angular_velocity = observation
    return int(3.0 * angle + angular_velocity > 0.0)


def record(base_url: str, out: Path, episodes: int, seed: int) -> float:
    config = {
        "env": {"id": "openenv/CartPole-v1", "base_url": base_url},
        "seed": seed,
        "wrappers": [{"type": "record", "directory": str(out), "chunk_size": 2_000}],
    }
    env = openenv_gym.make_from_config(config)
    returns = []
    try:
        observation, _ = env.reset(seed=seed)
        for _ in range(episodes):
            total, done = 0.0, False
            while not done:
                observation, reward, terminated, truncated, _ = env.step(controller(observation))
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
            observation, _ = env.reset()
    finally:
        env.close()
    return float(np.mean(returns))


def train(out: Path, epochs: int, seed: int) -> nn.Module:
    dataset = load_dataset("parquet", data_dir=str(out), split="train")
    dataset = dataset.with_format("torch", columns=["observation", "action"])
    print(f"dataset: {len(dataset)} steps, features {dataset.features}")
    observations = dataset[:]["observation"].float()
    actions = dataset[:]["action"].long()
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        order = torch.randperm(len(actions))
        total = 0.0
        for start in range(0, len(order), 256):
            batch = order[start : start + 256]
            loss = loss_fn(model(observations[batch]), actions[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(batch)
        accuracy = (model(observations).argmax(1) == actions).float().mean()
        print(f"epoch {epoch + 1}: loss {total / len(order):.4f}, accuracy {accuracy:.3f}")
    return model


def evaluate(model: nn.Module, base_url: str, episodes: int, seed: int) -> float:
    env: gym.Env[Any, Any] = gym.make("openenv/CartPole-v1", base_url=base_url)
    returns = []
    try:
        for episode in range(episodes):
            observation, _ = env.reset(seed=seed + 1000 + episode)
            total, done = 0.0, False
            while not done:
                with torch.no_grad():
                    logits = model(torch.as_tensor(observation, dtype=torch.float32))
                observation, reward, terminated, truncated, _ = env.step(int(logits.argmax()))
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
    finally:
        env.close()
    return float(np.mean(returns))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny run (smoke test)")
    parser.add_argument("--base-url", default=None, help="a running server (else one is started)")
    parser.add_argument("--out", default=None, help="recording directory (default: a temp dir)")
    parser.add_argument("--episodes", type=int, default=None, help="default 20 (quick: 2)")
    parser.add_argument("--epochs", type=int, default=None, help="default 20 (quick: 1)")
    parser.add_argument("--eval-episodes", type=int, default=None, help="default 10 (quick: 1)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    episodes = args.episodes or (2 if args.quick else 20)
    epochs = args.epochs or (1 if args.quick else 20)
    eval_episodes = args.eval_episodes or (1 if args.quick else 10)

    print(f"openenv-gym {openenv_gym.__version__}")
    server: LocalServerProcess | None = None
    base_url = args.base_url
    if base_url is None:
        server = LocalServerProcess(["gymnasium", "--env-id", "CartPole-v1"])
        base_url = server.start()
    scratch = tempfile.TemporaryDirectory() if args.out is None else None
    out = Path(args.out) if args.out else Path(scratch.name) / "trajectories"  # type: ignore[union-attr]
    try:
        expert = record(base_url, out, episodes, args.seed)
        print(f"recorded {episodes} expert episodes to {out}: mean return {expert:.1f}")
        model = train(out, epochs, args.seed)
        cloned = evaluate(model, base_url, eval_episodes, args.seed)
        print(
            f"behavioural cloning on the remote env: mean return {cloned:.1f} "
            f"over {eval_episodes} episodes (expert {expert:.1f})"
        )
    finally:
        if server is not None:
            server.stop()
        if scratch is not None:
            scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
