"""Every link row of the README and docs/benchmarks.md, with bounds and targets
(:mod:`openenv_gym.bench.links_table`).

python -m benchmarks.links_table --seconds 5 --repeats 1
"""

from openenv_gym.bench.links_table import main

if __name__ == "__main__":
    raise SystemExit(main())
