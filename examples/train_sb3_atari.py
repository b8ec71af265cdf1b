"""Stable-Baselines3 PPO (CnnPolicy) on remote Pong with frame stacking and normalization.

``gym.make("openenv/Atari-v0", game="pong", base_url=...)`` plays Pong on an
``openenv-gym serve atari --game pong`` server (one child process serves every training env),
with the server's ALE v5 defaults (frameskip 4). On top: SB3's own ``AtariWrapper`` (noop
resets, life loss as episode end, fire on reset, 84x84 grayscale, reward clipping; its frame
skip is 1 because the server already skips), ``VecFrameStack`` (4 frames) and ``VecNormalize``
(returns; ``CnnPolicy`` scales pixels itself). Hyperparameters are RL-Zoo's Atari PPO ones.
Two CPU cores will not reach a winning score; the script reports the steps/s it trains at.

    python examples/train_sb3_atari.py                 # remote, 100k steps
    python examples/train_sb3_atari.py --local         # the same on local ale-py ALE/Pong-v5
    python examples/train_sb3_atari.py --quick         # a few hundred steps, smoke test
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
from stable_baselines3 import PPO
from stable_baselines3.common.atari_wrappers import AtariWrapper
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack, VecNormalize

import openenv_gym
from openenv_gym.providers.local import LocalServerProcess

REMOTE_ID = "openenv/Atari-v0"


def linear_schedule(initial: float) -> Callable[[float], float]:
    """RL-Zoo's ``lin_<x>``: decays linearly from ``initial`` to 0 over training."""
    return lambda progress_remaining: progress_remaining * initial


def env_factory(base_url: str | None) -> Callable[[], gym.Env[Any, Any]]:
    """One Pong env (remote when ``base_url`` is given, else local ale-py), SB3-wrapped."""

    def make() -> gym.Env[Any, Any]:
        if base_url is None:
            import ale_py

            gym.register_envs(ale_py)
            env: gym.Env[Any, Any] = gym.make("ALE/Pong-v5")
        else:
            env = gym.make(REMOTE_ID, game="pong", base_url=base_url)
        return AtariWrapper(Monitor(env), frame_skip=1)

    return make


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few hundred steps, smoke test")
    parser.add_argument("--local", action="store_true", help="local ale-py instead of a server")
    parser.add_argument("--base-url", default=None, help="a running atari server")
    parser.add_argument("--timesteps", type=int, default=None, help="default 100000 (quick: 256)")
    parser.add_argument("--n-envs", type=int, default=None, help="default 8 (quick: 2)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    timesteps = args.timesteps or (256 if args.quick else 100_000)
    n_envs = args.n_envs or (2 if args.quick else 8)

    server: LocalServerProcess | None = None
    base_url: str | None = None
    if not args.local:
        if REMOTE_ID not in gym.registry:
            parser.error(f"{REMOTE_ID} is not registered in this openenv-gym; use --local")
        base_url = args.base_url
        if base_url is None:
            server = LocalServerProcess(["atari", "--game", "pong"])
            base_url = server.start()
    where = "local ALE/Pong-v5" if args.local else f"remote Pong at {base_url}"
    print(f"openenv-gym {openenv_gym.__version__}: PPO CnnPolicy on {where}, {timesteps} steps")
    venv = VecNormalize(
        VecFrameStack(DummyVecEnv([env_factory(base_url)] * n_envs), n_stack=4),
        norm_obs=False,
        norm_reward=True,
    )
    venv.seed(args.seed)
    try:
        n_steps = 64 if args.quick else 128
        model = PPO(
            "CnnPolicy",
            venv,
            n_steps=n_steps,
            n_epochs=4,
            batch_size=min(256, n_steps * n_envs),
            learning_rate=linear_schedule(2.5e-4),
            clip_range=linear_schedule(0.1),
            vf_coef=0.5,
            ent_coef=0.01,
            seed=args.seed,
            device="cpu",
            verbose=1,  # SB3's progress table after every rollout
        )
        start = time.perf_counter()
        model.learn(total_timesteps=timesteps)
        elapsed = time.perf_counter() - start
        episodes = [info for info in model.ep_info_buffer]
    finally:
        venv.close()
        if server is not None:
            server.stop()
    if episodes:
        mean = sum(e["r"] for e in episodes) / len(episodes)
        games = f"{len(episodes)} finished games, mean score {mean:.1f}"
    else:  # a Pong game lasts ~800 steps per env: --quick ends before the first one
        games = f"no game finished yet in {model.num_timesteps // n_envs} steps per env"
    print(
        f"trained {model.num_timesteps} steps in {elapsed:.1f}s: "
        f"{model.num_timesteps / elapsed:.0f} steps/s (training included); {games}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
