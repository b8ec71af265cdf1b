"""``OpenEnvVectorEnv``: N remote sessions as one ``gymnasium.vector.VectorEnv``.

* :mod:`.env`: the vector env (stepping, autoreset, batch buffers).
* :mod:`.fleet`: its servers and sessions (capacity checks, opening, reconnecting, closing).
"""

from openenv_gym.vector.env import RECONNECTED_KEY, OpenEnvVectorEnv, VectorEntryPoint

__all__ = ["RECONNECTED_KEY", "OpenEnvVectorEnv", "VectorEntryPoint"]
