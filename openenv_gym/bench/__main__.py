"""``python -m openenv_gym.bench``: the benchmark suite (same options as ``openenv-gym bench``)."""

from openenv_gym.bench import main

raise SystemExit(main())
