"""Single-env CartPole steps/s over loopback: our client vs the official client, same server.

One sitting, one server process (``openenv-gym serve gymnasium --env-id CartPole-v1``),
each client in turn, best of ``--repeats`` runs; raw Gymnasium in this process is the
anchor. Prints a table with ratios; nothing here is asserted.

    python -m benchmarks.single_env --steps 5000 --repeats 3
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.providers import LocalServerProcess

Runner = Callable[[int], float]


def raw_gymnasium(steps: int) -> float:
    env = gym.make("CartPole-v1")
    return _timed_loop(env.reset, env.step, steps)


def ours(url: str) -> Runner:
    def run(steps: int) -> float:
        env = gym.make("openenv/CartPole-v1", base_url=url)
        try:
            return _timed_loop(env.reset, env.step, steps)
        finally:
            env.close()

    return run


def official(url: str) -> Runner:
    from openenv.core import GenericEnvClient

    def run(steps: int) -> float:
        client = GenericEnvClient(base_url=url).sync()
        try:
            client.connect()

            def reset(seed: int | None = None) -> None:
                client.reset(seed=seed)

            def step(action: int) -> tuple[None, float, bool, bool, None]:
                result = client.step({"action": int(action)})
                return None, float(result.reward or 0.0), bool(result.done), False, None

            return _timed_loop(reset, step, steps)
        finally:
            client.close()

    return run


def _timed_loop(reset: Callable[..., object], step: Callable[..., tuple], steps: int) -> float:
    actions = np.random.default_rng(0).integers(0, 2, size=steps)
    reset(seed=0)
    start = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = step(int(action))
        if terminated or truncated:
            reset()
    return steps / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    with LocalServerProcess(["gymnasium", "--env-id", "CartPole-v1"]) as server:
        url = str(server.base_url)
        rows: list[tuple[str, Runner]] = [
            ("raw gymnasium (in process)", raw_gymnasium),
            ("openenv-gym client", ours(url)),
            ("official openenv GenericEnvClient", official(url)),
        ]
        results = {}
        for name, runner in rows:
            runner(min(500, args.steps))  # warm-up
            results[name] = max(runner(args.steps) for _ in range(args.repeats))
            print(f"  measured {name}: {results[name]:,.0f} steps/s", flush=True)
    anchor = results["official openenv GenericEnvClient"]
    print(f"\nCartPole-v1, 1 env, {args.steps} steps, best of {args.repeats}, loopback")
    print(f"{'client':38} {'steps/s':>10} {'vs official':>12}")
    for name, rate in results.items():
        print(f"{name:38} {rate:>10,.0f} {rate / anchor:>11.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
