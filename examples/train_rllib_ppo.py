"""RLlib PPO (new API stack) on remote CartPole-v1 served over OpenEnv.

The env is handed to RLlib with :func:`openenv_gym.integrations.rllib.openenv_config`: the
``openenv_gym:openenv/CartPole-v1`` id form plus ``gym_env_vectorize_mode="vector_entry_point"``,
so the env runner steps its sessions natively (one :class:`~openenv_gym.OpenEnvVectorEnv`,
one batched round trip per step). One ``openenv-gym serve gymnasium`` child process serves all
sessions unless ``--base-url`` names a running server.
(``openenv_gym.integrations.rllib.register_env`` is the ``tune.register_env`` way to do the same.)

    python examples/train_rllib_ppo.py            # until mean return >= 450 (or 60 iterations)
    python examples/train_rllib_ppo.py --quick    # one small iteration, smoke test
"""

from __future__ import annotations

import argparse
import os
import time

import openenv_gym
from openenv_gym.providers.local import LocalServerProcess

ENV_ID = "openenv/CartPole-v1"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small iteration, no target")
    parser.add_argument("--base-url", default=None, help="a running server (else one is started)")
    parser.add_argument("--iterations", type=int, default=None, help="default 60 (quick: 1)")
    parser.add_argument("--target", type=float, default=450.0, help="stop at this mean return")
    parser.add_argument("--envs-per-runner", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    iterations = args.iterations or (1 if args.quick else 60)

    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig

    from openenv_gym.integrations.rllib import openenv_config

    server: LocalServerProcess | None = None
    base_url = args.base_url
    if base_url is None:
        server = LocalServerProcess(["gymnasium", "--env-id", "CartPole-v1"])
        base_url = server.start()
    print(f"openenv-gym {openenv_gym.__version__}: RLlib PPO on remote CartPole at {base_url}")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        batch = 512 if args.quick else 4000
        config = (
            openenv_config(PPOConfig(), ENV_ID, env_config={"base_url": base_url})
            .env_runners(num_env_runners=0, num_envs_per_env_runner=args.envs_per_runner)
            .training(
                lr=3e-4,
                gamma=0.99,
                train_batch_size_per_learner=batch,
                minibatch_size=128,
                num_epochs=6 if not args.quick else 1,
                vf_loss_coeff=0.01,
            )
            .debugging(seed=args.seed)
        )
        algo = config.build_algo()
        start = time.perf_counter()
        mean_return = float("nan")
        steps = 0
        for iteration in range(iterations):
            result = algo.train()
            runners = result.get("env_runners", {})
            mean_return = float(runners.get("episode_return_mean", float("nan")))
            steps = int(
                result.get(
                    "num_env_steps_sampled_lifetime",
                    runners.get("num_env_steps_sampled_lifetime", 0),
                )
            )
            print(
                f"iteration {iteration + 1}: mean return {mean_return:.1f}, {steps} env steps",
                flush=True,
            )
            if mean_return >= args.target:
                break
        elapsed = time.perf_counter() - start
        algo.stop()
    finally:
        ray.shutdown()
        if server is not None:
            server.stop()
    print(f"trained in {elapsed:.1f}s; final mean return {mean_return:.1f}")
    if not args.quick and not mean_return >= args.target:
        print(f"FAILED: mean return {mean_return:.1f} < target {args.target}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
