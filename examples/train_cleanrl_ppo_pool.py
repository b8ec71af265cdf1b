"""CleanRL-style PPO on an asynchronous pool (``openenv_gym.make_pool``), envpool's API.

The pool returns the first ``batch_size`` of ``num_envs`` sub-envs whose step came back
(``info["env_id"]``), and the learner sends them their next actions while the others are
still stepping on the server: the policy's forward pass hides behind the round trips. Each
sub-env's transitions are kept in its own chain, so advantages (GAE) follow each episode
whatever order the replies come in. Autoreset is envpool's (Gymnasium's ``NEXT_STEP``): the
reply after an episode's last one is the new episode's first observation (its action was
ignored, so no transition is recorded for it).

Run::

    python examples/train_cleanrl_ppo_pool.py            # 100k steps of CartPole
    python examples/train_cleanrl_ppo_pool.py --quick    # 2048 steps, a smoke test
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

import openenv_gym


@dataclass
class Chain:
    """The transitions of one sub-env since the last update, in its own order."""

    obs: list[np.ndarray] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    next_values: list[float] = field(default_factory=list)
    terminated: list[bool] = field(default_factory=list)
    ended: list[bool] = field(default_factory=list)

    def advantages(self, gamma: float, lam: float) -> np.ndarray:
        """GAE along the chain; an ended episode cuts it, a truncated one bootstraps."""
        advantages = np.zeros(len(self.rewards), dtype=np.float32)
        running = 0.0
        for t in reversed(range(len(self.rewards))):
            alive = 0.0 if self.terminated[t] else 1.0
            delta = self.rewards[t] + gamma * self.next_values[t] * alive - self.values[t]
            running = delta + gamma * lam * (0.0 if self.ended[t] else 1.0) * running
            advantages[t] = running
        return advantages


class Agent(nn.Module):
    def __init__(self, obs_size: int, n_actions: int) -> None:
        super().__init__()
        self.critic = nn.Sequential(
            nn.Linear(obs_size, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1)
        )
        self.actor = nn.Sequential(
            nn.Linear(obs_size, 64),
            nn.Tanh(),
            nn.Linear(64, 64),
            nn.Tanh(),
            nn.Linear(64, n_actions),
        )

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs).squeeze(-1)

    def act(
        self, obs: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        dist = Categorical(logits=self.actor(obs))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.value(obs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-id", default="openenv/CartPole-v1")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=4, help="sub-envs per recv()")
    parser.add_argument(
        "--total-steps", type=int, default=None, help="default 100000 (quick: 2048)"
    )
    parser.add_argument(
        "--rollout",
        type=int,
        default=1024,
        help="transitions per update (a recv() can bring up to batch_size - 1 more)",
    )
    parser.add_argument("--minibatch", type=int, default=256, help="transitions per gradient step")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--quick", action="store_true", help="2048 steps (unless --total-steps): a smoke test"
    )
    args = parser.parse_args()
    args.total_steps = args.total_steps or (2048 if args.quick else 100_000)
    gamma, lam, clip, epochs = 0.99, 0.95, 0.2, 4
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # the servers share the cores

    pool = openenv_gym.make_pool(args.env_id, args.num_envs, batch_size=args.batch_size)
    obs_size = int(np.prod(pool.observation_space.shape))
    agent = Agent(obs_size, int(pool.action_space.n))
    optimizer = torch.optim.Adam(agent.parameters(), lr=2.5e-4, eps=1e-5)

    chains = [Chain() for _ in range(args.num_envs)]
    sent: list[tuple[np.ndarray, int, float, float] | None] = [None] * args.num_envs
    was_done = np.zeros(args.num_envs, dtype=bool)
    episode_return = np.zeros(args.num_envs)
    returns: list[float] = []
    steps = collected = 0
    start = time.time()
    pool.async_reset(seed=args.seed)
    while steps < args.total_steps:
        obs, rewards, terminated, truncated, info = pool.recv()
        ids = info["env_id"]
        with torch.no_grad():
            action, logprob, _, value = agent.act(torch.as_tensor(obs, dtype=torch.float32))
        for k, i in enumerate(ids.tolist()):
            previous = sent[i]
            if previous is not None and not was_done[i]:  # the reply to its last action
                chain = chains[i]
                chain.obs.append(previous[0])
                chain.actions.append(previous[1])
                chain.logprobs.append(previous[2])
                chain.values.append(previous[3])
                chain.rewards.append(float(rewards[k]))
                chain.next_values.append(float(value[k]))
                chain.terminated.append(bool(terminated[k]))
                chain.ended.append(bool(terminated[k] or truncated[k]))
                episode_return[i] += rewards[k]
                collected += 1
                steps += 1
            was_done[i] = bool(terminated[k] or truncated[k])
            if was_done[i]:
                returns.append(float(episode_return[i]))
                episode_return[i] = 0.0
            sent[i] = (obs[k], int(action[k]), float(logprob[k]), float(value[k]))
        pool.send(action.numpy(), ids)

        if collected >= args.rollout:
            update(agent, optimizer, chains, gamma, lam, clip, epochs, args.minibatch)
            chains = [Chain() for _ in range(args.num_envs)]
            collected = 0
            recent = np.mean(returns[-20:]) if returns else float("nan")
            print(f"steps {steps}: mean return of the last episodes {recent:.1f}", flush=True)
    pool.close()
    elapsed = time.time() - start
    print(f"trained {steps} steps in {elapsed:.1f}s ({steps / elapsed:.0f} steps/s)")
    print(f"mean return over {min(len(returns), 20)} episodes: {np.mean(returns[-20:]):.1f}")


def update(
    agent: Agent,
    optimizer: torch.optim.Optimizer,
    chains: list[Chain],
    gamma: float,
    lam: float,
    clip: float,
    epochs: int,
    minibatch: int,
) -> None:
    """PPO's clipped update on every chain's transitions.

    A rollout holds ``rollout`` to ``rollout + batch_size - 1`` transitions, so it is cut into
    ``size // minibatch`` near-equal minibatches (none of them a stray few transitions whose
    advantages cannot be normalized: one transition's ``std()`` is NaN).
    """
    advantages = np.concatenate([c.advantages(gamma, lam) for c in chains if c.rewards])
    values = np.concatenate([c.values for c in chains if c.rewards]).astype(np.float32)
    b_obs = torch.as_tensor(np.stack([o for c in chains for o in c.obs]), dtype=torch.float32)
    b_actions = torch.as_tensor([a for c in chains for a in c.actions])
    b_logprobs = torch.as_tensor([lp for c in chains for lp in c.logprobs])
    b_advantages = torch.as_tensor(advantages)
    b_returns = torch.as_tensor(advantages + values)
    size = len(b_actions)
    for _ in range(epochs):
        for index in torch.randperm(size).tensor_split(max(1, size // minibatch)):
            _, logprob, entropy, value = agent.act(b_obs[index], b_actions[index])
            ratio = (logprob - b_logprobs[index]).exp()
            adv = b_advantages[index]
            if len(adv) > 1:
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            policy_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - clip, 1 + clip)).mean()
            value_loss = 0.5 * ((value - b_returns[index]) ** 2).mean()
            loss = policy_loss + 0.5 * value_loss - 0.01 * entropy.mean()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
            optimizer.step()


if __name__ == "__main__":
    main()
