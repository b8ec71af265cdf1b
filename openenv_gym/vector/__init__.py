"""``OpenEnvVectorEnv``: N remote sessions as one ``gymnasium.vector.VectorEnv``.

* :mod:`.env`: the vector env (the Gymnasium API, stepping, autoreset).
* :mod:`.pool`: ``make_pool``, the envpool-style asynchronous pool (send / recv).
* :mod:`.buffers`: where replies land (batch buffers, episode flags, infos).
* :mod:`.connections`: its servers and connections (capacity checks, round trips,
  reconnecting, closing); :mod:`.channels`: a connection, plain (one session) or batch (K
  sessions); :mod:`.servers`: which server each sub-env is on, and those the env started;
  :mod:`.opening`: opening connections to one server; :mod:`.reconnect`: the
  retries of reopening broken ones, with :mod:`.backoff`; :mod:`.round_trip`: ops to frames.
* :mod:`.options`: the checked arguments; :mod:`.entry_point`: ``gym.make_vec`` support.
"""

from typing import TYPE_CHECKING

from openenv_gym.extras import lazy_exports
from openenv_gym.vector.entry_point import VectorEntryPoint

if TYPE_CHECKING:
    from openenv_gym.vector.env import RECONNECTED_KEY, OpenEnvVectorEnv
    from openenv_gym.vector.pool import OpenEnvPool, make_pool

# ``import openenv_gym`` registers the vector entry points: the vector env loads on first use.
__getattr__ = lazy_exports(
    __name__,
    {
        "openenv_gym.vector.env": ("RECONNECTED_KEY", "OpenEnvVectorEnv"),
        "openenv_gym.vector.pool": ("OpenEnvPool", "make_pool"),
    },
)

__all__ = ["RECONNECTED_KEY", "OpenEnvPool", "OpenEnvVectorEnv", "VectorEntryPoint", "make_pool"]
