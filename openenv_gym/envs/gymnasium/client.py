"""The ``gym.make`` factory of the served Gymnasium ids (``openenv/CartPole-v1``, ...,
``openenv/Gymnasium-v0``): a server at ``base_url``, or an embedded one.

It sits next to the server it starts, like Atari's and chess's
(``openenv_gym/envs/<name>/client.py``); :data:`~openenv_gym.envs.registry.SERVER_ENVS` names
it as the entry point of those ids.

Example:
    >>> env = make_gymnasium_env("CartPole-v1")  # an embedded server, stopped on close()
    >>> env.observation_space.shape
    (4,)
    >>> env.close()
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openenv_gym.env import OpenEnvEnv
from openenv_gym.envs.gymnasium.options import GYMNASIUM_OPTIONS
from openenv_gym.errors import EnvConfigError
from openenv_gym.providers import ServerSpec, server_provider
from openenv_gym.providers.spec import takes_server_keywords


@takes_server_keywords
def make_gymnasium_env(
    env_id: str | None = None,
    base_url: str | None = None,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    server_time_limit: bool = True,
    **kwargs: Any,
) -> OpenEnvEnv:
    """A Gymnasium env id served as OpenEnv: at ``base_url``, or by an embedded server.

    Args:
        env_id: The Gymnasium id the server runs (only used to start the embedded server).
        base_url: A running ``openenv-gym serve gymnasium`` (or compatible) server.
        env_kwargs: ``gymnasium.make`` keyword arguments for the embedded server's env.
        server_time_limit: ``False`` starts the embedded server without the id's own
            ``TimeLimit`` (unless ``env_kwargs`` sets ``max_episode_steps``), so the one that
            ``gymnasium.make`` adds on this side is the only limit, as with the raw id:
            ``gym.make("openenv/CartPole-v1", max_episode_steps=1000)`` runs episodes to 1000.
            The ``openenv/<GymId>`` ids set it. A server at ``base_url`` keeps its own limit.
        **kwargs: The embedded server's keywords (:class:`~openenv_gym.providers.ServerSpec`:
            ``image`` runs it in ``openenv-gym/gymnasium:latest``, which ``openenv-gym build``
            makes, instead of a child process; ``token``, the bearer token the server
            requires; ``startup_timeout``, ``docker_kwargs``, ``workers``, ``unix_socket``),
            then :class:`~openenv_gym.env.OpenEnvEnv` options.

    Raises:
        EnvConfigError: Neither ``env_id`` nor ``base_url`` is given.
    """
    server = ServerSpec.take(kwargs)
    if base_url is not None:
        return OpenEnvEnv(base_url, token=server.token, **kwargs)
    if env_id is None:
        raise EnvConfigError(
            "openenv/Gymnasium-v0 needs the Gymnasium id to serve, or a running server: "
            "gym.make('openenv/Gymnasium-v0', env_id='Acrobot-v1'), or "
            "gym.make('openenv/Gymnasium-v0', base_url='http://127.0.0.1:8000')"
        )
    make_kwargs = dict(env_kwargs or {})
    if not server_time_limit:
        # gymnasium.make(..., max_episode_steps=-1) applies no TimeLimit.
        make_kwargs.setdefault("max_episode_steps", -1)
    options = {"env_id": env_id, "make_kwargs": make_kwargs or None}
    provider = server_provider(["gymnasium", *GYMNASIUM_OPTIONS.to_argv(options)], server)
    return OpenEnvEnv(provider=provider, token=server.token, **kwargs)


__all__ = ["make_gymnasium_env"]
