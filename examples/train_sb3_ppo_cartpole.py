"""Stable-Baselines3 PPO on remote CartPole-v1 served over OpenEnv, to a mean return >= 475.

One ``openenv-gym serve gymnasium --env-id CartPole-v1`` child process serves every training
env (one WebSocket session each). The vector env is our native SB3 ``VecEnv``
(``openenv_gym.integrations.sb3.make_vec_env``: one batched round trip per step);
``--dummy-vec-env`` uses Stable-Baselines3's own ``make_vec_env`` (a ``DummyVecEnv`` of
single remote envs, one round trip per env) for comparison. The hyperparameters
are RL-Zoo's for CartPole-v1 (``rl-baselines3-zoo/hyperparams/ppo.yml``).

    python examples/train_sb3_ppo_cartpole.py            # remote, 100k steps, asserts >= 475
    python examples/train_sb3_ppo_cartpole.py --local    # the same on local gymnasium
    python examples/train_sb3_ppo_cartpole.py --quick    # 2k steps, smoke test only

It prints the wall time of training and the mean evaluation return, and exits 1 when a full
run does not reach ``--target``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
from stable_baselines3 import PPO
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import VecEnv

import openenv_gym
from openenv_gym.providers.local import LocalServerProcess


def linear_schedule(initial: float) -> Callable[[float], float]:
    """RL-Zoo's ``lin_<x>``: decays linearly from ``initial`` to 0 over training."""
    return lambda progress_remaining: progress_remaining * initial


def make_remote_vec_env(
    n_envs: int, base_url: str, seed: int, *, dummy: bool = False
) -> tuple[VecEnv, str]:
    """Our native VecEnv, or (``dummy``) SB3's DummyVecEnv over single remote envs."""
    from openenv_gym.integrations.sb3 import make_vec_env as native_make_vec_env

    if dummy:
        from stable_baselines3.common.env_util import make_vec_env

        # SB3's make_vec_env asks for render_mode="rgb_array" unless told; CartPole has no image.
        kwargs: dict[str, Any] = {"base_url": base_url, "render_mode": None}
        env = make_vec_env("openenv/CartPole-v1", n_envs=n_envs, seed=seed, env_kwargs=kwargs)
        return env, "stable_baselines3 make_vec_env (DummyVecEnv of OpenEnvEnv)"
    env = native_make_vec_env(
        "openenv/CartPole-v1", n_envs, seed=seed, env_kwargs={"base_url": base_url}
    )
    return env, "openenv_gym.integrations.sb3.make_vec_env (native VecEnv)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2k steps, no score check")
    parser.add_argument("--local", action="store_true", help="train on local gymnasium instead")
    parser.add_argument("--base-url", default=None, help="a running server (else one is started)")
    parser.add_argument("--timesteps", type=int, default=None, help="default 100000 (quick: 2048)")
    parser.add_argument("--n-envs", type=int, default=8)
    parser.add_argument(
        "--dummy-vec-env", action="store_true", help="SB3's DummyVecEnv of single remote envs"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-episodes", type=int, default=None, help="default 20 (quick: 2)")
    parser.add_argument("--target", type=float, default=475.0, help="mean return to reach")
    args = parser.parse_args(argv)
    timesteps = args.timesteps or (2048 if args.quick else 100_000)
    eval_episodes = args.eval_episodes or (2 if args.quick else 20)

    server: LocalServerProcess | None = None
    if args.local:
        from stable_baselines3.common.env_util import make_vec_env

        train_env: VecEnv = make_vec_env("CartPole-v1", n_envs=args.n_envs, seed=args.seed)
        eval_env: gym.Env[Any, Any] = Monitor(gym.make("CartPole-v1"))
        how = "local gymnasium CartPole-v1 (DummyVecEnv)"
    else:
        base_url = args.base_url
        if base_url is None:
            server = LocalServerProcess(["gymnasium", "--env-id", "CartPole-v1"])
            base_url = server.start()
        train_env, how = make_remote_vec_env(
            args.n_envs, base_url, args.seed, dummy=args.dummy_vec_env
        )
        eval_env = Monitor(gym.make("openenv/CartPole-v1", base_url=base_url))
    print(f"openenv-gym {openenv_gym.__version__}: PPO on {how}, {timesteps} steps")
    try:
        model = PPO(
            "MlpPolicy",
            train_env,
            n_steps=32,
            batch_size=256,
            gae_lambda=0.8,
            gamma=0.98,
            n_epochs=20,
            ent_coef=0.0,
            learning_rate=linear_schedule(0.001),
            clip_range=linear_schedule(0.2),
            seed=args.seed,
            device="cpu",
            verbose=1,  # SB3's progress table after every rollout
        )
        start = time.perf_counter()
        model.learn(total_timesteps=timesteps)
        train_seconds = time.perf_counter() - start
        mean_return, std_return = evaluate_policy(
            model, eval_env, n_eval_episodes=eval_episodes, deterministic=True
        )
    finally:
        train_env.close()
        eval_env.close()
        if server is not None:
            server.stop()
    print(
        f"trained {timesteps} steps in {train_seconds:.1f}s ({timesteps / train_seconds:.0f} "
        f"steps/s); mean return over {eval_episodes} episodes: {mean_return:.1f} "
        f"+/- {std_return:.1f}"
    )
    if not args.quick and mean_return < args.target:
        print(f"FAILED: mean return {mean_return:.1f} < target {args.target}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
