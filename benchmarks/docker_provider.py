"""CartPole through a Docker container vs a child process: startup time and steps/s.

Both providers serve ``openenv-gym serve gymnasium --env-id CartPole-v1``; the container
is ``openenv-gym/gymnasium:latest`` (``openenv-gym build``) published on 127.0.0.1, so each
step also crosses docker-proxy. Startup is ``gym.make`` until the env is usable (server
ready, schema fetched, session open), best of ``--repeats``; steps/s is best of
``--repeats`` runs of ``--steps`` random steps. Prints a table; nothing here is asserted.

    python -m benchmarks.docker_provider --steps 3000 --repeats 3
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import gymnasium as gym

import openenv_gym  # noqa: F401  (registers the ids)


def measure(image: str | None, steps: int, repeats: int) -> tuple[float, float]:
    """(best startup seconds, best steps/s) for one provider."""
    startups, rates = [], []
    for _ in range(repeats):
        kwargs: dict[str, Any] = {} if image is None else {"image": image}
        started = time.perf_counter()
        env = gym.make("openenv/CartPole-v1", **kwargs)
        startups.append(time.perf_counter() - started)
        try:
            env.action_space.seed(0)
            env.reset(seed=0)
            began = time.perf_counter()
            for _ in range(steps):
                _, _, terminated, truncated, _ = env.step(env.action_space.sample())
                if terminated or truncated:
                    env.reset()
            rates.append(steps / (time.perf_counter() - began))
        finally:
            env.close()
    return min(startups), max(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--image", default="openenv-gym/gymnasium:latest")
    args = parser.parse_args()
    rows = [
        ("child process", *measure(None, args.steps, args.repeats)),
        (f"docker ({args.image})", *measure(args.image, args.steps, args.repeats)),
    ]
    print(f"{'provider':<40} {'startup s':>10} {'steps/s':>10}")
    for name, startup, rate in rows:
        print(f"{name:<40} {startup:>10.2f} {rate:>10,.0f}")


if __name__ == "__main__":
    main()
