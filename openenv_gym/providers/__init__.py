"""Where a server comes from: a child process (the embedded default) or a given URL."""

from openenv_gym.providers.base import GivenServer, ServerProvider
from openenv_gym.providers.local import LocalServerProcess

__all__ = ["GivenServer", "LocalServerProcess", "ServerProvider"]
