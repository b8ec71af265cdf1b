"""The ``vector_entry_point`` of our registered ids: ``gym.make_vec`` builds an
:class:`~openenv_gym.vector.env.OpenEnvVectorEnv` natively (no Sync/Async copies of single
envs).

Example:
    >>> VectorEntryPoint("openenv/CartPole-v1")
    VectorEntryPoint('openenv/CartPole-v1')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openenv_gym.vector.env import OpenEnvVectorEnv


class VectorEntryPoint:
    """A picklable ``vector_entry_point`` for one registered id."""

    def __init__(self, id: str) -> None:
        self.id = id

    def __call__(self, num_envs: int = 1, **kwargs: Any) -> OpenEnvVectorEnv:
        # Registered on ``import openenv_gym``: the vector env loads when one is made.
        from openenv_gym.vector.env import OpenEnvVectorEnv

        return OpenEnvVectorEnv(self.id, num_envs, **kwargs)

    def __repr__(self) -> str:
        return f"VectorEntryPoint({self.id!r})"


__all__ = ["VectorEntryPoint"]
