"""``OpenEnvVectorEnv``: N remote sessions as one ``gymnasium.vector.VectorEnv``.

* :mod:`.env`: the vector env (the Gymnasium API, stepping, autoreset).
* :mod:`.buffers`: where replies land (batch buffers, episode flags, infos).
* :mod:`.fleet`: its servers and connections (capacity checks, round trips, closing);
  :mod:`.opening`: opening connections to one server; :mod:`.reconnect`: reopening broken
  ones with :mod:`.backoff`; :mod:`.round_trip`: ops to frames, replies to results.
* :mod:`.options`: the checked arguments; :mod:`.entry_point`: ``gym.make_vec`` support.
"""

from openenv_gym.vector.entry_point import VectorEntryPoint
from openenv_gym.vector.env import RECONNECTED_KEY, OpenEnvVectorEnv

__all__ = ["RECONNECTED_KEY", "OpenEnvVectorEnv", "VectorEntryPoint"]
