"""Quick check: steps/s of OpenEnvVectorEnv vs gymnasium AsyncVectorEnv, CartPole-v1, N=8.

Not a test and not the full benchmark (see ``benchmarks/run.py``): one short run of each,
random actions, autoreset on. The embedded server runs in child processes (one worker per
core, sessions over Unix sockets), as AsyncVectorEnv's workers do, so both compete for the
same cores. Numbers on a shared machine are noisy: run it a few times.

Usage::

    python benchmarks/vector_quick.py [--num-envs 8] [--steps 3000] [--workers auto]
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np

import openenv_gym


def steps_per_second(envs: gym.vector.VectorEnv, steps: int, seed: int = 0) -> float:
    """Env steps per second over ``steps`` batched steps (after a short warm-up)."""
    rng = np.random.default_rng(seed)
    n = envs.num_envs
    envs.reset(seed=seed)
    for _ in range(50):
        envs.step(rng.integers(0, 2, n))
    actions = rng.integers(0, 2, (steps, n))
    start = time.perf_counter()
    for batch in actions:
        envs.step(batch)
    return steps * n / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--workers", default=None, help="server worker processes (auto: cores)")
    args = parser.parse_args()
    n = args.num_envs

    async_envs = gym.vector.AsyncVectorEnv([lambda: gym.make("CartPole-v1")] * n)
    try:
        async_rate = steps_per_second(async_envs, args.steps)
    finally:
        async_envs.close()

    kwargs = {} if args.workers is None else {"workers": args.workers}
    ours = openenv_gym.OpenEnvVectorEnv("openenv/CartPole-v1", n, **kwargs)
    try:
        our_rate = steps_per_second(ours, args.steps)
    finally:
        ours.close()

    print(f"CartPole-v1 N={n}, {args.steps} batched steps each (shared machine: noisy)")
    print(f"  gymnasium AsyncVectorEnv : {async_rate:10.0f} steps/s")
    print(f"  OpenEnvVectorEnv (JSON)  : {our_rate:10.0f} steps/s  ({our_rate / async_rate:.2f}x)")


if __name__ == "__main__":
    main()
