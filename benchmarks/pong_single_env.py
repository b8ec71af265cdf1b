"""Pong steps per second for ONE environment, five ways, in one run.

* ``raw``: ``gymnasium.make("ALE/Pong-v5")`` in this process (no network);
* ``official+official``: the official ``GenericEnvClient`` against an official-style server
  (the official package's ``create_fastapi_app`` under uvicorn, list-ified screen, the way
  the official Atari server works);
* ``official+ours``: the official client against ``openenv-gym serve atari`` (plain JSON);
* ``ours-json``: ``gym.make("openenv/Atari-v0", encoding="json")`` against our server;
* ``ours-binary``: the same with ``encoding="binary"`` (raw-byte screens).

Every remote mode uses its own server process on 127.0.0.1 with the ``ALE/Pong-v5``
settings (frameskip 4, sticky actions 0.25); the clients turn every screen into a
``(210, 160, 3)`` ``uint8`` array, as a learner needs. Actions are random; the episode is
reset when it ends. Run from the repository root::

    python benchmarks/pong_single_env.py --steps 500 [--json results.json]

Numbers depend heavily on the machine and its load; compare modes within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ale_py
import gymnasium as gym
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import openenv_gym  # noqa: E402, F401  (registers the ids)
from openenv_gym.providers.local import LocalServerProcess  # noqa: E402

gym.register_envs(ale_py)
StepFn = Callable[[int], bool]  # action -> episode over


def measure(reset: Callable[[], None], step: StepFn, steps: int, warmup: int = 20) -> float:
    """Steps per second over ``steps`` random-action steps (after ``warmup`` ones)."""
    rng = np.random.default_rng(0)
    reset()
    for action in rng.integers(6, size=warmup):
        if step(int(action)):
            reset()
    start = time.perf_counter()
    for action in rng.integers(6, size=steps):
        if step(int(action)):
            reset()
    return steps / (time.perf_counter() - start)


def bench_raw(steps: int) -> float:
    env = gym.make("ALE/Pong-v5")
    try:

        def step(action: int) -> bool:
            _, _, terminated, truncated, _ = env.step(action)
            return bool(terminated or truncated)

        return measure(lambda: env.reset(seed=0) and None, step, steps)
    finally:
        env.close()


def bench_official_client(url: str, steps: int) -> float:
    from openenv.core import GenericEnvClient

    client: Any = GenericEnvClient(base_url=url).sync()
    try:

        def step(action: int) -> bool:
            result = client.step({"action_id": action})
            np.asarray(result.observation["screen"], np.uint8).reshape(210, 160, 3)
            return bool(result.done)

        def reset() -> None:
            result = client.reset(seed=0)
            np.asarray(result.observation["screen"], np.uint8).reshape(210, 160, 3)

        return measure(reset, step, steps)
    finally:
        client.close()


def bench_ours(url: str, encoding: str, steps: int) -> float:
    env = gym.make("openenv/Atari-v0", base_url=url, encoding=encoding)
    try:

        def step(action: int) -> bool:
            _, _, terminated, truncated, _ = env.step(action)
            return bool(terminated or truncated)

        return measure(lambda: env.reset(seed=0) and None, step, steps)
    finally:
        env.close()


def start_official_server() -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.envs.official_atari", "0"],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("READY "):
            return process, line.split()[1]
    raise RuntimeError("the official-style server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500, help="timed steps per mode")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    results: dict[str, float] = {"raw": bench_raw(args.steps)}

    official, official_url = start_official_server()
    try:
        results["official+official"] = bench_official_client(official_url, args.steps)
    finally:
        official.terminate()
        official.wait(30)

    serve_args = ["atari", "--game", "pong", "--frameskip", "4"]
    with LocalServerProcess(serve_args) as server:
        url = server.base_url
        assert url is not None
        results["official+ours"] = bench_official_client(url, args.steps)
        results["ours-json"] = bench_ours(url, "json", args.steps)
        results["ours-binary"] = bench_ours(url, "binary", args.steps)

    print(f"Pong, one env, {args.steps} steps per mode (steps/s; higher is better)")
    for mode, rate in results.items():
        print(f"  {mode:<20} {rate:9.1f}")
    if args.json is not None:
        args.json.write_text(json.dumps({"steps": args.steps, "steps_per_s": results}, indent=2))


if __name__ == "__main__":
    main()
