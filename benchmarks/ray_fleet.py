"""Servers placed by Ray vs child processes (:mod:`openenv_gym.bench.ray_fleet`).

python -m benchmarks.ray_fleet --n 16 --per-server 4 --seconds 5 --repeats 3
"""

from openenv_gym.bench.ray_fleet import main

if __name__ == "__main__":
    raise SystemExit(main())
