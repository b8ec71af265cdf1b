"""Entry points for a clone: the suite itself ships in :mod:`openenv_gym.bench`.

``python -m benchmarks.run`` is ``openenv-gym bench``; ``python -m benchmarks.readme``
re-runs the suite and refreshes the README's benchmark section.
"""
