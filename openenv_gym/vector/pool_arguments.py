"""What an envpool user types, as :func:`~openenv_gym.make_pool` understands it.

envpool's ``envpool.make(task_id, env_type, num_envs=, batch_size=, num_threads=, seed=)``
seeds sub-env ``i`` with ``seed + i`` once, when it is made; ``num_threads`` sizes its thread
pool; ``env_type`` picks the API (``"gymnasium"``, ``"gym"`` or ``"dm"``). Its ``send``
takes ``(action, env_id)`` or a dict ``{"action": a, "env_id": ids}``; ``recv`` gives
``info["env_id"]`` as int32 and rewards as float32; ``len(pool)`` is ``num_envs``.

Here the servers step the envs, so ``num_threads`` (and ``thread_affinity_offset``) change
nothing and are accepted; ``seed`` seeds each sub-env's first reset (``seed + i``) unless
that reset names its own seed; ``env_type`` may be ``"gymnasium"`` or ``"gym"`` (both
give the five-tuple API), and ``"dm"`` is refused, naming the call to use.

Example:
    >>> options = pool_options({"seed": 0, "num_threads": 4, "max_episode_steps": 100})
    >>> options.seed, options.env_kwargs
    (0, {'max_episode_steps': 100})
    >>> first_seeds([None, None, 7], make_seed=10, fresh=[0, 1, 2])
    [10, 11, 7]
    >>> actions, ids = send_arguments({"action": [1, 0], "env_id": [2, 3]}, None)
    >>> actions, ids
    ([1, 0], [2, 3])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from openenv_gym.errors import PoolUsageError

#: envpool keywords that size its own threads: the servers step the envs here.
THREAD_KEYWORDS: Final = ("num_threads", "thread_affinity_offset")
#: ``env_type`` values whose API the pool has (envpool's gym API is the same five-tuple).
GYMNASIUM_TYPES: Final = ("gymnasium", "gym")
#: The dtypes of envpool's ``info["env_id"]`` and rewards.
ENV_ID_DTYPE: Final = np.int32
REWARD_DTYPE: Final = np.float32


@dataclass(frozen=True)
class PoolOptions:
    """envpool's keywords taken out of ``make_pool``'s ``**env_kwargs``."""

    #: envpool's ``seed``: sub-env ``i``'s first reset gets ``seed + i``.
    seed: int | None = None
    #: What is left for the env (``gymnasium.make(env_id, **env_kwargs)``).
    env_kwargs: dict[str, Any] = field(default_factory=dict)


def pool_options(env_kwargs: Mapping[str, Any]) -> PoolOptions:
    """Take ``seed``, ``num_threads``, ``thread_affinity_offset`` and ``env_type`` out.

    Raises:
        PoolUsageError: ``seed`` is not an int, a thread keyword not an int ``>= 0``, or
            ``env_type`` is not ``"gymnasium"`` / ``"gym"``.
    """
    rest = dict(env_kwargs)
    seed = rest.pop("seed", None)
    if seed is not None and (not isinstance(seed, int | np.integer) or isinstance(seed, bool)):
        raise PoolUsageError(
            f"expected seed to be an int (envpool's: sub-env i's first reset gets seed + i), "
            f"got {seed!r}; e.g. make_pool(env_id, num_envs, seed=0)"
        )
    for name in THREAD_KEYWORDS:
        value = rest.pop(name, None)
        if value is not None and (
            not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 0
        ):
            raise PoolUsageError(
                f"expected {name} to be an int >= 0, got {value!r}; it changes nothing here "
                f"(the servers step the envs): drop {name}="
            )
    env_type = rest.pop("env_type", "gymnasium")
    if env_type not in GYMNASIUM_TYPES:
        raise PoolUsageError(
            f"make_pool gives envpool's gymnasium API (env_type='gymnasium'), got "
            f"env_type={env_type!r}: dm_env's TimeStep API is not provided; drop env_type, or "
            "use envpool.make_dm(...) for envpool's own local envs"
        )
    return PoolOptions(seed=None if seed is None else int(seed), env_kwargs=rest)


def first_seeds(
    seeds: list[int | None], *, make_seed: int | None, fresh: Iterable[int]
) -> list[int | None]:
    """``seeds`` (one per sub-env), with ``make_seed + i`` for each never-reset sub-env ``i``
    in ``fresh`` whose reset names no seed (envpool seeds a sub-env once, when it is made)."""
    if make_seed is None:
        return seeds
    out = list(seeds)
    for i in fresh:
        if out[i] is None:
            out[i] = make_seed + i
    return out


def send_arguments(actions: Any, env_id: Any) -> tuple[Any, Any]:
    """envpool's ``send({"action": a, "env_id": ids})`` as ``(a, ids)``; an ``env_id``
    argument wins over the dict's, as in envpool. Other arguments pass unchanged.

    Raises:
        PoolUsageError: A dict with ``env_id`` but no ``action``.
    """
    if not isinstance(actions, Mapping) or "env_id" not in actions:
        return actions, env_id
    if "action" not in actions:
        raise PoolUsageError(
            f"expected envpool's dict form {{'action': actions, 'env_id': ids}}, got the keys "
            f"{sorted(actions)}; call pool.send(actions, env_id)"
        )
    extra = sorted(set(actions) - {"action", "env_id"})
    if extra:
        raise PoolUsageError(
            f"envpool's dict form takes the keys 'action' and 'env_id', got also {extra}; "
            "call pool.send({'action': actions, 'env_id': ids})"
        )
    return actions["action"], actions["env_id"] if env_id is None else env_id


def envpool_dtypes(
    result: tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]],
) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """``recv``'s result with envpool's dtypes: float32 rewards, int32 ``info["env_id"]``."""
    obs, rewards, terminated, truncated, info = result
    info["env_id"] = np.asarray(info["env_id"], dtype=ENV_ID_DTYPE)
    return obs, np.asarray(rewards, dtype=REWARD_DTYPE), terminated, truncated, info


__all__ = [
    "ENV_ID_DTYPE",
    "REWARD_DTYPE",
    "PoolOptions",
    "envpool_dtypes",
    "first_seeds",
    "pool_options",
    "send_arguments",
]
