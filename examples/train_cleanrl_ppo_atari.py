"""CleanRL-style PPO on remote Atari, preprocessed on the server, through ``gym.make_vec``.

The shape of CleanRL's ``ppo_atari_envpool.py``: ``gym.make_vec("openenv/Atari-v0", ...)``
takes envpool's options (``stack_num=4``, ``episodic_life=True``, ``reward_clip=True``, ...), so
the server sends ``(4, 84, 84)`` ``uint8`` frames and the learner sees the same batch an
``envpool.make("Pong-v5", env_type="gymnasium", ...)`` would give. Autoreset is envpool's
(Gymnasium's ``NEXT_STEP``). Episode returns count whole games: ``info["game_over"]`` marks the
real end of a game, ``info["raw_reward"]`` the unclipped reward.

Run::

    python examples/train_cleanrl_ppo_atari.py            # 100k steps of Pong
    python examples/train_cleanrl_ppo_atari.py --quick    # 256 steps, a smoke test
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

import openenv_gym

#: envpool's Atari options, as CleanRL's ppo_atari_envpool.py sets them.
ATARI_OPTIONS = {"episodic_life": True, "reward_clip": True, "stack_num": 4, "noop_max": 30}


def layer(module: nn.Module, std: float = float(np.sqrt(2))) -> nn.Module:
    nn.init.orthogonal_(module.weight, std)  # type: ignore[arg-type]
    nn.init.constant_(module.bias, 0.0)  # type: ignore[arg-type]
    return module


class Agent(nn.Module):
    """The Nature CNN with a policy and a value head."""

    def __init__(self, n_actions: int) -> None:
        super().__init__()
        self.network = nn.Sequential(
            layer(nn.Conv2d(4, 32, 8, stride=4)),
            nn.ReLU(),
            layer(nn.Conv2d(32, 64, 4, stride=2)),
            nn.ReLU(),
            layer(nn.Conv2d(64, 64, 3, stride=1)),
            nn.ReLU(),
            nn.Flatten(),
            layer(nn.Linear(64 * 7 * 7, 512)),
            nn.ReLU(),
        )
        self.actor = layer(nn.Linear(512, n_actions), std=0.01)
        self.critic = layer(nn.Linear(512, 1), std=1)

    def value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(self.network(x / 255.0)).squeeze(-1)

    def act(
        self, x: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        hidden = self.network(x / 255.0)
        dist = Categorical(logits=self.actor(hidden))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(hidden).squeeze(-1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="256 steps, a smoke test")
    parser.add_argument("--game", default="pong")
    parser.add_argument("--num-envs", type=int, default=None, help="default 8 (quick: 2)")
    parser.add_argument("--timesteps", type=int, default=None, help="default 100000")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    num_envs = args.num_envs or (2 if args.quick else 8)
    num_steps = 64 if args.quick else 128
    timesteps = args.timesteps or (256 if args.quick else 100_000)
    gamma, lam, clip, epochs, minibatches = 0.99, 0.95, 0.1, 4, 4
    torch.manual_seed(args.seed)

    envs = gym.make_vec("openenv/Atari-v0", num_envs=num_envs, game=args.game, **ATARI_OPTIONS)
    print(f"openenv-gym {openenv_gym.__version__}: {envs.single_observation_space} frames")
    n_actions = int(envs.single_action_space.n)  # type: ignore[attr-defined]
    agent = Agent(n_actions)
    optimizer = torch.optim.Adam(agent.parameters(), lr=2.5e-4, eps=1e-5)
    batch = num_envs * num_steps
    obs = torch.zeros((num_steps, num_envs, 4, 84, 84), dtype=torch.uint8)
    actions = torch.zeros((num_steps, num_envs), dtype=torch.long)
    logprobs, rewards, dones, values = (torch.zeros((num_steps, num_envs)) for _ in range(4))
    returns_seen: list[float] = []
    game_return = np.zeros(num_envs)
    next_obs = torch.from_numpy(envs.reset(seed=args.seed)[0])
    next_done = torch.zeros(num_envs)
    start, global_step = time.perf_counter(), 0
    try:
        for update in range(1, timesteps // batch + 1):
            optimizer.param_groups[0]["lr"] = 2.5e-4 * (1 - (update - 1) / (timesteps // batch))
            for step in range(num_steps):
                global_step += num_envs
                obs[step], dones[step] = next_obs, next_done
                with torch.no_grad():
                    action, logprob, _, value = agent.act(next_obs.float())
                actions[step], logprobs[step], values[step] = action, logprob, value
                frames, reward, terminated, truncated, info = envs.step(action.numpy())
                rewards[step] = torch.as_tensor(reward, dtype=torch.float32)
                next_obs = torch.from_numpy(frames)
                next_done = torch.as_tensor(terminated | truncated, dtype=torch.float32)
                game_return += info.get("raw_reward", np.zeros(num_envs))
                for i in np.flatnonzero(info.get("game_over", np.zeros(num_envs, bool))):
                    returns_seen.append(float(game_return[i]))
                    game_return[i] = 0.0
            with torch.no_grad():
                next_value = agent.value(next_obs.float())
            advantages = torch.zeros_like(rewards)
            running = torch.zeros(num_envs)
            for t in reversed(range(num_steps)):
                alive = 1.0 - (next_done if t == num_steps - 1 else dones[t + 1])
                after = next_value if t == num_steps - 1 else values[t + 1]
                delta = rewards[t] + gamma * after * alive - values[t]
                running = delta + gamma * lam * alive * running
                advantages[t] = running
            flat = [
                obs.reshape(batch, 4, 84, 84),
                actions.reshape(-1),
                logprobs.reshape(-1),
                advantages.reshape(-1),
                (advantages + values).reshape(-1),
            ]
            for _ in range(epochs):
                for part in torch.randperm(batch).chunk(minibatches):
                    b_obs, b_act, b_logp, b_adv, b_ret = (x[part] for x in flat)
                    _, logp, entropy, value = agent.act(b_obs.float(), b_act)
                    ratio = (logp - b_logp).exp()
                    b_adv = (b_adv - b_adv.mean()) / (b_adv.std() + 1e-8)
                    policy_loss = torch.max(
                        -b_adv * ratio, -b_adv * ratio.clamp(1 - clip, 1 + clip)
                    ).mean()
                    loss = policy_loss + 0.5 * ((value - b_ret) ** 2).mean() - 0.01 * entropy.mean()
                    optimizer.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                    optimizer.step()
    finally:
        envs.close()
    elapsed = time.perf_counter() - start
    games = (
        f"{len(returns_seen)} games, mean score {np.mean(returns_seen):.1f}"
        if returns_seen
        else "no game finished yet"
    )
    rate = global_step / elapsed
    print(f"trained {global_step} steps in {elapsed:.1f}s: {rate:.0f} steps/s; {games}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
