"""``python -m benchmarks.run [options]``: the same as ``openenv-gym bench [options]``."""

from openenv_gym.bench import main

if __name__ == "__main__":
    raise SystemExit(main(prog="python -m benchmarks.run"))
