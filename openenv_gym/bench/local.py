"""In-process contenders: raw Gymnasium, ``SyncVectorEnv``, ``AsyncVectorEnv`` and envpool.

Each is ``open_<name>(context, n) -> Driver`` and raises
:class:`~openenv_gym.bench.measure.ContenderUnavailableError` with the reason when its
prerequisite (ale-py, envpool) is missing.

Example:
    >>> from openenv_gym.bench.context import ENV_SPECS, Context, Settings
    >>> from openenv_gym.bench.measure import ActionStream
    >>> context = Context(ENV_SPECS["CartPole"], Settings(envs=["CartPole"], sizes=[1]))
    >>> driver = open_raw(context, 1)
    >>> window = driver.run(ActionStream.discrete(2, 1), seconds=0.01)
    >>> driver.close()
"""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium as gym
import numpy as np

from openenv_gym.bench.context import Context, missing_module
from openenv_gym.bench.measure import (
    ContenderUnavailableError,
    Driver,
    LoopDriver,
)


def require_module(name: str, why: str) -> Any:
    """Import ``name`` or raise :class:`ContenderUnavailableError` saying ``why``."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ContenderUnavailableError(f"{name.split('.')[0]} is not installed ({why})") from None


def register_env_module(name: str) -> None:
    """Import and register the module an env id needs (quietly: no ALE banner per env)."""
    module = importlib.import_module(name)
    if name == "ale_py":
        module.ALEInterface.setLoggerMode(module.LoggerMode.Error)
    gym.register_envs(module)


def make_raw_env(context: Context) -> gym.Env[Any, Any]:
    """``gymnasium.make`` of the raw env (registers ALE ids when needed)."""
    spec = context.spec
    problem = missing_module(spec.requires_module)
    if problem:
        raise ContenderUnavailableError(problem)
    if spec.requires_module is not None:
        register_env_module(spec.requires_module)
    return gym.make(spec.gym_id, **spec.make_kwargs)


def single_env_driver(env: gym.Env[Any, Any], pick: Any = None) -> Driver:
    """Step one env, resetting it when an episode ends (outside the per-step latency).

    ``pick`` turns a row of the action stream into the env's action (default: ``int(row[0])``).
    """
    env.reset(seed=0)
    choose = pick or (lambda row: int(row[0]))

    def step(row: Any) -> bool:
        _, _, terminated, truncated, _ = env.step(choose(row))
        return bool(terminated or truncated)

    return LoopDriver(step, env.close, reset=env.reset)


def vector_env_driver(env: gym.vector.VectorEnv[Any, Any, Any]) -> Driver:
    """Step a vector env with its own autoreset (a reset step counts as N steps, as usual)."""
    env.reset(seed=0)
    return LoopDriver(env.step, env.close)


def open_raw(context: Context, n: int) -> Driver:
    """Raw Gymnasium, one env in this process: the N=1 anchor."""
    return single_env_driver(make_raw_env(context))


def gym_vector_driver(
    cls: Any, gym_id: str, n: int, make_kwargs: Any = None, requires: str | None = None
) -> Driver:
    """Gymnasium's ``SyncVectorEnv`` or ``AsyncVectorEnv`` of N ``gym.make(gym_id)``
    (``requires``: the module that registers the id, imported by each env's maker)."""

    def make() -> gym.Env[Any, Any]:
        if requires is not None:  # an AsyncVectorEnv worker starts from a fresh interpreter
            register_env_module(requires)
        return gym.make(gym_id, **(make_kwargs or {}))

    # forkserver: this process may already run other contenders' threads (an asyncio loop),
    # and forking a threaded process is unsafe; the fork server is forked from a clean one.
    kwargs = {"context": "forkserver"} if cls is gym.vector.AsyncVectorEnv else {}
    return vector_env_driver(cls([make] * n, **kwargs))


def open_sync(context: Context, n: int) -> Driver:
    """Gymnasium ``SyncVectorEnv``: N envs stepped in turn in this process."""
    make_raw_env(context).close()  # prerequisite check (and ALE registration)
    spec = context.spec
    return gym_vector_driver(gym.vector.SyncVectorEnv, spec.gym_id, n, spec.make_kwargs)


def open_async(context: Context, n: int) -> Driver:
    """Gymnasium ``AsyncVectorEnv``: one worker process per env, pipes and shared memory."""
    make_raw_env(context).close()
    spec = context.spec
    return gym_vector_driver(
        gym.vector.AsyncVectorEnv, spec.gym_id, n, spec.make_kwargs, spec.requires_module
    )


def _make_pool(context: Context, n: int) -> Any:
    envpool = require_module("envpool", "pip install 'openenv-gym[bench]'")
    spec = context.spec
    return envpool.make(
        spec.envpool_id,
        env_type="gymnasium",
        num_envs=n,
        batch_size=n,
        seed=0,
        **spec.envpool_kwargs,
    )


def open_envpool_async(context: Context, n: int) -> Driver:
    """envpool (C++ thread pool), async API ``send``/``recv``, ``num_envs = batch_size = N``."""
    pool = _make_pool(context, n)
    pool.async_reset()
    ready = [pool.recv()[-1]["env_id"]]  # the sub-envs whose replies came last

    def step(row: np.ndarray) -> None:
        pool.send(row, ready[0])
        ready[0] = pool.recv()[-1]["env_id"]

    return LoopDriver(step, getattr(pool, "close", None) or (lambda: None))


def open_envpool_sync(context: Context, n: int) -> Driver:
    """envpool (C++ thread pool), sync API ``step(actions)``, ``num_envs = N``."""
    pool = _make_pool(context, n)
    pool.reset()
    return LoopDriver(pool.step, getattr(pool, "close", None) or (lambda: None))
