"""The OpenEnv servers openenv-gym ships: ``gymnasium`` (any Gymnasium id),
``atari`` (ALE games, official OpenEnv Atari schema) and ``chess`` (python-chess, official
OpenEnv chess schema).

Each subpackage provides an :class:`~openenv_gym.server.Environment` and a
``*_server(...)`` function returning a ready :class:`~openenv_gym.server.OpenEnvServer`;
``openenv-gym serve <name>`` runs it from the command line.
"""
