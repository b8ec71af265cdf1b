"""The gymnasium server's options, declared once (see :mod:`openenv_gym.envs.options`).

Example:
    >>> options = {"env_id": "CartPole-v1", "make_kwargs": {"max_episode_steps": 50}}
    >>> GYMNASIUM_OPTIONS.to_argv(options)
    ['--env-id', 'CartPole-v1', '--env-kwargs', '{"max_episode_steps": 50}']
"""

from __future__ import annotations

from typing import Final

from openenv_gym.argument_types import json_object
from openenv_gym.envs.options import ServerOption, ServerOptions

#: ``env_id``: any registered id (``module:Id`` imports the module that registers it, e.g.
#: ``ale_py:ALE/Pong-v5``); ``make_kwargs``: ``gymnasium.make`` keyword arguments.
GYMNASIUM_OPTIONS: Final = ServerOptions(
    ServerOption(
        "env_id",
        None,
        "the Gymnasium id to serve, e.g. CartPole-v1, or module:Id to import the package "
        "that registers it first, e.g. ale_py:ALE/Pong-v5",
        required=True,
        metavar="ID",
    ),
    ServerOption(
        "make_kwargs",
        None,
        "gymnasium.make keyword arguments as a JSON object, e.g. '{\"max_episode_steps\": 200}'",
        type=json_object,
        flag="--env-kwargs",
        metavar="JSON",
    ),
)

__all__ = ["GYMNASIUM_OPTIONS"]
