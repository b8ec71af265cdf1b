"""A real rollout against an embedded OpenEnv server: the README's first command.

``gym.make("openenv/CartPole-v1")`` starts ``openenv-gym serve gymnasium --env-id CartPole-v1``
in a child process on 127.0.0.1, and this script plays episodes over its WebSocket with a
random policy, then prints the returns and the step rate. The server stops on ``close()``.

    python examples/rollout.py --episodes 5 --seed 0
    python examples/rollout.py --quick                            # 2 episodes, smoke test
    python examples/rollout.py --base-url http://127.0.0.1:8000   # a server you started
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym

import openenv_gym


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-id", default="openenv/CartPole-v1", help="a registered openenv id")
    parser.add_argument("--episodes", type=int, default=None, help="episodes to play (default 5)")
    parser.add_argument("--quick", action="store_true", help="2 episodes (default), smoke test")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first reset")
    parser.add_argument("--base-url", default=None, help="use a running server instead")
    args = parser.parse_args(argv)
    if args.episodes is None:
        args.episodes = 2 if args.quick else 5
    if args.episodes < 1:
        parser.error(f"--episodes must be at least 1, got {args.episodes}")

    kwargs = {"base_url": args.base_url} if args.base_url else {}
    env = gym.make(args.env_id, **kwargs)
    print(f"openenv-gym {openenv_gym.__version__}: {args.env_id} at {env.unwrapped.base_url}")
    print(f"  observation space: {env.observation_space}")
    print(f"  action space:      {env.action_space}")
    env.action_space.seed(args.seed)
    steps = 0
    start = time.perf_counter()
    try:
        for episode in range(args.episodes):
            env.reset(seed=args.seed + episode)
            episode_return, done = 0.0, False
            while not done:
                _obs, reward, terminated, truncated, _info = env.step(env.action_space.sample())
                episode_return += reward
                steps += 1
                done = terminated or truncated
            print(f"  episode {episode}: return {episode_return:.1f}")
    finally:
        env.close()
    elapsed = time.perf_counter() - start
    print(f"{steps} steps in {elapsed:.2f}s: {steps / elapsed:.0f} steps/s over loopback")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
