"""Stable-Baselines3 PPO (CnnPolicy) on remote Pong, preprocessed on the server, batched.

``make_vec_env("openenv/Atari-v0", n_envs=8, env_kwargs=...)`` starts one
``openenv-gym serve atari`` child process for the 8 sessions and steps them together (one
frame per server connection per step). The server does what SB3's ``AtariWrapper`` and
``VecFrameStack`` do (no-op and fire resets, life loss as episode end, frame skip 4 with a
max-pool, 84x84 grayscale, clipped rewards, 4 stacked frames), chosen with envpool's option
names (``ATARI_WRAPPER_OPTIONS``: ``noop_max=30, frame_skip=4, episodic_life=True,
use_fire_reset=True, reward_clip=True``, 84x84 grayscale, ``stack_num=4``), so only
``(4, 84, 84)`` ``uint8`` frames cross the wire.
``VecNormalize`` normalizes returns; ``CnnPolicy`` scales pixels itself. Hyperparameters are
RL-Zoo's Atari PPO ones. Two CPU cores will not reach a winning score; the script reports the
steps/s it trains at.

    python examples/train_sb3_atari.py                  # remote, 100k steps
    python examples/train_sb3_atari.py --local          # SB3's make_atari_env on local ale-py
    python examples/train_sb3_atari.py --local --subproc  # the same in SubprocVecEnv
    python examples/train_sb3_atari.py --quick          # a few hundred steps, smoke test
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_atari_env
from stable_baselines3.common.vec_env import (
    DummyVecEnv,
    SubprocVecEnv,
    VecEnv,
    VecFrameStack,
    VecNormalize,
)

import openenv_gym
from openenv_gym.envs.atari.preprocessing import ATARI_WRAPPER_OPTIONS
from openenv_gym.integrations.sb3 import make_vec_env

REMOTE_ID = "openenv/Atari-v0"


def linear_schedule(initial: float) -> Callable[[float], float]:
    """RL-Zoo's ``lin_<x>``: decays linearly from ``initial`` to 0 over training."""
    return lambda progress_remaining: progress_remaining * initial


def remote_pong(n_envs: int, seed: int, base_url: str | None) -> VecEnv:
    """``n_envs`` preprocessed Pong sessions as one batched SB3 ``VecEnv``."""
    kwargs: dict[str, Any] = {"game": "pong", **ATARI_WRAPPER_OPTIONS}
    if base_url is not None:  # ours takes the options per session, even a raw one
        kwargs["base_url"] = base_url
    return make_vec_env(REMOTE_ID, n_envs=n_envs, seed=seed, env_kwargs=kwargs)


def local_pong_env(**kwargs: Any) -> Any:
    """``gym.make("ALE/Pong-v5", **kwargs)``, registering ale-py's ids first (in any process)."""
    import ale_py
    import gymnasium as gym

    gym.register_envs(ale_py)
    return gym.make("ALE/Pong-v5", **kwargs)


def local_pong(n_envs: int, seed: int, subproc: bool) -> VecEnv:
    """SB3's own pipeline on local ale-py: ``make_atari_env`` + ``VecFrameStack``."""
    venv = make_atari_env(
        local_pong_env,  # a callable: SubprocVecEnv's workers register ALE's ids themselves
        n_envs=n_envs,
        seed=seed,
        env_kwargs={"frameskip": 1},  # AtariWrapper skips 4 frames with its max-pool
        vec_env_cls=SubprocVecEnv if subproc else DummyVecEnv,
    )
    return VecFrameStack(venv, n_stack=4)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few hundred steps, smoke test")
    parser.add_argument("--local", action="store_true", help="local ale-py instead of a server")
    parser.add_argument("--subproc", action="store_true", help="with --local: SubprocVecEnv")
    parser.add_argument(
        "--base-url",
        default=None,
        help="a running Atari server playing Pong: ours (`openenv-gym serve atari`, raw is "
        "fine: each session asks for the options), or another started with them",
    )
    parser.add_argument("--timesteps", type=int, default=None, help="default 100000 (quick: 256)")
    parser.add_argument("--n-envs", type=int, default=None, help="default 8 (quick: 2)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    timesteps = args.timesteps or (256 if args.quick else 100_000)
    n_envs = args.n_envs or (2 if args.quick else 8)

    if args.local:
        where = f"local ALE/Pong-v5 ({'SubprocVecEnv' if args.subproc else 'DummyVecEnv'})"
        inner = local_pong(n_envs, args.seed, args.subproc)
    else:
        if REMOTE_ID not in gym.registry:
            parser.error(f"{REMOTE_ID} is not registered in this openenv-gym; use --local")
        where = "remote Pong (preprocessed on the server)"
        inner = remote_pong(n_envs, args.seed, args.base_url)
    print(f"openenv-gym {openenv_gym.__version__}: PPO CnnPolicy on {where}, {timesteps} steps")
    venv = VecNormalize(inner, norm_obs=False, norm_reward=True)
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
    if episodes:
        mean = sum(e["r"] for e in episodes) / len(episodes)
        games = f"{len(episodes)} finished episodes, mean return {mean:.1f}"
    else:  # a Pong game lasts ~800 steps per env: --quick ends before the first one
        games = f"no game finished yet in {model.num_timesteps // n_envs} steps per env"
    print(
        f"trained {model.num_timesteps} steps in {elapsed:.1f}s: "
        f"{model.num_timesteps / elapsed:.0f} steps/s (training included); {games}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
