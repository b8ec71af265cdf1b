"""``python -m benchmarks.atari_training``: SB3 PPO on preprocessed Pong, remote vs local.

See :mod:`openenv_gym.bench.atari_training`.
"""

from openenv_gym.bench.atari_training import main

if __name__ == "__main__":
    raise SystemExit(main())
