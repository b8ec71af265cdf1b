"""Any Gymnasium env id served as an OpenEnv environment.

The names below are imported on first use, so importing this package (as ``import
openenv_gym`` does for the client factory) loads no server module.

Example:
    >>> from openenv_gym import OpenEnvEnv
    >>> from openenv_gym.envs.gymnasium import gymnasium_server
    >>> from openenv_gym.server import ServerThread
    >>> with ServerThread(gymnasium_server("CartPole-v1")) as running:
    ...     env = OpenEnvEnv(running.url)  # or an official client
    ...     obs, info = env.reset(seed=0)
    ...     env.close()
    >>> obs.shape
    (4,)
"""

from __future__ import annotations

from openenv_gym.extras import lazy_exports

_EXPORTS = {
    f"{__name__}.environment": ("GymnasiumEnvironment", "json_safe"),
    f"{__name__}.models": (
        "GymnasiumAction",
        "GymnasiumObservation",
        "GymnasiumState",
        "gymnasium_models",
    ),
    f"{__name__}.server": ("gymnasium_server",),
}

__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = sorted(name for names in _EXPORTS.values() for name in names)
