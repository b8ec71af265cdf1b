"""The contenders: one small adapter per way of stepping N envs, constructor in one place.

Each adapter is ``open_<name>(context, n) -> Driver``. It raises
:class:`~benchmarks.suite.ContenderUnavailableError` with a reason when its prerequisite is
missing (a package, our server, a feature of ``openenv_gym``), so the suite prints
``skipped: <reason>`` for it instead of failing. To change how a contender is built, edit
the one constructor call in its adapter.

Example:
    >>> [c.key for c in CONTENDERS][:3]
    ['raw', 'sync', 'async']
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import gymnasium as gym
import numpy as np

from benchmarks.echo import EchoDriver, EchoServer, ThreadedEchoDriver
from benchmarks.suite import (
    ActionStream,
    ContenderUnavailableError,
    Context,
    Driver,
    LoopDriver,
    timed_loop,
)


@dataclass(frozen=True)
class Contender:
    """One row family of the table.

    Attributes:
        key: Short name used in ``--contenders``, the CSV and the plot.
        label: Human name for the table.
        open: Builds a :class:`Driver` for N sub-envs (raises ``ContenderUnavailableError``).
        single_only: Measured at N=1 only (single-env anchors).
        envs: Env names it applies to (``None``: all).
    """

    key: str
    label: str
    open: Callable[[Context, int], Driver]
    single_only: bool = False
    envs: tuple[str, ...] | None = None


def _require_module(name: str, why: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ContenderUnavailableError(f"{name} is not installed ({why}): {exc}") from None


def _register_env_module(name: str) -> None:
    """Import and register the module an env id needs (quietly: no ALE banner per env)."""
    module = importlib.import_module(name)
    if name == "ale_py":
        module.ALEInterface.setLoggerMode(module.LoggerMode.Error)
    gym.register_envs(module)


def _make_raw_env(context: Context) -> gym.Env[Any, Any]:
    """``gymnasium.make`` of the raw env (registers ALE ids when needed)."""
    spec = context.spec
    if spec.requires_module is not None:
        _require_module(spec.requires_module, f"{spec.gym_id} needs it")
        _register_env_module(spec.requires_module)
    return gym.make(spec.gym_id, **spec.make_kwargs)


def _single_env_driver(env: gym.Env[Any, Any]) -> Driver:
    """Step one env, resetting it when an episode ends (resets are not counted)."""
    env.reset(seed=0)

    def step(row: np.ndarray) -> None:
        _, _, terminated, truncated, _ = env.step(int(row[0]))
        if terminated or truncated:
            env.reset()

    return LoopDriver(step, env.close)


def _vector_env_driver(env: gym.vector.VectorEnv[Any, Any, Any]) -> Driver:
    """Step a vector env with its own autoreset (a reset step counts as N steps, as usual)."""
    env.reset(seed=0)
    return LoopDriver(env.step, env.close)


# --------------------------------------------------------------------------- in-process


def open_raw(context: Context, n: int) -> Driver:
    """Raw Gymnasium, one env in this process: the N=1 anchor."""
    return _single_env_driver(_make_raw_env(context))


def open_sync(context: Context, n: int) -> Driver:
    """Gymnasium ``SyncVectorEnv``: N envs stepped in turn in this process."""
    _make_raw_env(context).close()  # prerequisite check (and ALE registration)
    spec = context.spec
    env = gym.vector.SyncVectorEnv(
        [lambda: gym.make(spec.gym_id, **spec.make_kwargs) for _ in range(n)]
    )
    return _vector_env_driver(env)


def open_async(context: Context, n: int) -> Driver:
    """Gymnasium ``AsyncVectorEnv``: one worker process per env, pipes and shared memory."""
    _make_raw_env(context).close()
    spec = context.spec
    requires = spec.requires_module

    def make() -> gym.Env[Any, Any]:
        if requires is not None:  # the worker is forked from a fresh interpreter
            _register_env_module(requires)
        return gym.make(spec.gym_id, **spec.make_kwargs)

    # forkserver: this process may already run other contenders' threads (an asyncio loop),
    # and forking a threaded process is unsafe; the fork server is forked from a clean one.
    env = gym.vector.AsyncVectorEnv([make for _ in range(n)], context="forkserver")
    return _vector_env_driver(env)


class _EnvpoolDriver:
    """envpool's asynchronous API (``send``/``recv``) with ``batch_size == num_envs``."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        pool.async_reset()
        _, _, _, _, info = pool.recv()
        self._env_id = info["env_id"]

    def _step(self, row: np.ndarray) -> None:
        self._pool.send(row, self._env_id)
        _, _, _, _, info = self._pool.recv()
        self._env_id = info["env_id"]

    def run(self, actions: ActionStream, seconds: float) -> tuple[int, float]:
        return timed_loop(self._step, actions, seconds)

    def close(self) -> None:
        close = getattr(self._pool, "close", None)
        if close is not None:
            close()


def open_envpool(context: Context, n: int) -> Driver:
    """envpool (C++ thread pool), async API, ``num_envs = batch_size = N``."""
    envpool = _require_module("envpool", "pip install envpool")
    spec = context.spec
    pool = envpool.make(
        spec.envpool_id,
        env_type="gymnasium",
        num_envs=n,
        batch_size=n,
        seed=0,
        **spec.envpool_kwargs,
    )
    return _EnvpoolDriver(pool)


# --------------------------------------------------------------------------- over the wire


class _OfficialDriver:
    """N official ``GenericEnvClient`` sessions on one asyncio loop, stepped with gather."""

    def __init__(self, urls: list[str], n: int, action_field: str) -> None:
        from openenv.core import GenericEnvClient

        self._field = action_field
        self._loop = asyncio.new_event_loop()
        self._clients = [GenericEnvClient(base_url=urls[i % len(urls)]) for i in range(n)]
        try:
            self._loop.run_until_complete(self._open())
        except BaseException:
            self.close()
            raise

    async def _open(self) -> None:
        await asyncio.gather(*(client.connect() for client in self._clients))
        await asyncio.gather(*(c.reset(seed=i) for i, c in enumerate(self._clients)))

    def run(self, actions: ActionStream, seconds: float) -> tuple[int, float]:
        return self._loop.run_until_complete(self._run(actions, seconds))

    async def _run(self, actions: ActionStream, seconds: float) -> tuple[int, float]:
        clients, field = self._clients, self._field
        clock = time.perf_counter
        start = clock()
        deadline = start + seconds
        steps = 0
        while True:
            row = actions.next()
            results = await asyncio.gather(
                *(client.step({field: int(a)}) for client, a in zip(clients, row, strict=True))
            )
            done = [client for client, result in zip(clients, results, strict=True) if result.done]
            if done:
                await asyncio.gather(*(client.reset() for client in done))
            steps += 1
            now = clock()
            if now >= deadline:
                return steps, now - start

    async def _close(self) -> None:
        await asyncio.gather(*(c.close() for c in self._clients), return_exceptions=True)

    def close(self) -> None:
        try:
            self._loop.run_until_complete(self._close())
        finally:
            self._loop.close()


def open_official(context: Context, n: int) -> Driver:
    """The official ``openenv`` client: asyncio gather over N ``GenericEnvClient`` sessions."""
    _require_module("openenv.core", "the official OpenEnv client, pip install openenv")
    urls = context.require_servers()
    return _OfficialDriver(urls, n, context.spec.official_action_field)


def open_ours_env(context: Context, n: int) -> Driver:
    """Our single env (``gym.make("openenv/...", base_url=...)``), default encoding."""
    import openenv_gym  # noqa: F401  (registers the ids)

    urls = context.require_servers()
    spec = context.spec
    if spec.openenv_id not in gym.registry:
        raise ContenderUnavailableError(f"{spec.openenv_id} is not registered in this install")
    env = gym.make(spec.openenv_id, base_url=urls[0], **spec.openenv_kwargs)
    return _single_env_driver(env)


def _ours_vector(context: Context, n: int, encoding: str) -> Driver:
    import openenv_gym

    vector_cls = getattr(openenv_gym, "OpenEnvVectorEnv", None)
    if vector_cls is None:
        raise ContenderUnavailableError("openenv_gym.OpenEnvVectorEnv is not in this install")
    if "encoding" not in inspect.signature(vector_cls).parameters:
        raise ContenderUnavailableError("OpenEnvVectorEnv has no encoding= option in this install")
    urls = context.require_servers()
    spec = context.spec
    try:
        env = vector_cls(
            spec.openenv_id, n, base_url=urls, encoding=encoding, **spec.openenv_kwargs
        )
    except Exception as exc:
        if encoding == "binary":  # an older server or client without the binary frames
            raise ContenderUnavailableError(
                f"encoding='binary' was refused: {type(exc).__name__}: {exc}"
            ) from exc
        raise
    return _vector_env_driver(env)


def open_ours_json(context: Context, n: int) -> Driver:
    """Our ``OpenEnvVectorEnv`` over pooled sessions, plain OpenEnv JSON frames."""
    return _ours_vector(context, n, "json")


def open_ours_binary(context: Context, n: int) -> Driver:
    """Our ``OpenEnvVectorEnv`` with binary observation frames (``openenv-gym.binary.v1``)."""
    return _ours_vector(context, n, "binary")


def _echo(driver_cls: type[EchoDriver | ThreadedEchoDriver]) -> Driver:
    server = EchoServer()
    url = server.__enter__()
    try:
        driver = driver_cls(url)
    except BaseException:
        server.__exit__(None, None, None)
        raise
    return _Owned(driver, server)


def open_echo(context: Context, n: int) -> Driver:
    """A bare ``websockets`` echo round trip (one connection, own server process)."""
    return _echo(EchoDriver)


def open_echo_thread(context: Context, n: int) -> Driver:
    """The echo round trip sent through an asyncio loop in another thread (our client's shape)."""
    return _echo(ThreadedEchoDriver)


class _Owned:
    """A driver that also stops the echo server it started when closed."""

    def __init__(self, driver: EchoDriver | ThreadedEchoDriver, server: EchoServer) -> None:
        self._driver = driver
        self._server = server

    def run(self, actions: ActionStream, seconds: float) -> tuple[int, float]:
        return self._driver.run(actions, seconds)

    def close(self) -> None:
        try:
            self._driver.close()
        finally:
            self._server.__exit__(None, None, None)


#: Every contender, in table order.
CONTENDERS: Final[tuple[Contender, ...]] = (
    Contender("raw", "gymnasium env (raw, 1 env)", open_raw, single_only=True),
    Contender("sync", "gymnasium SyncVectorEnv", open_sync),
    Contender("async", "gymnasium AsyncVectorEnv", open_async),
    Contender("envpool", "envpool async", open_envpool),
    Contender("official", "official openenv client (gather)", open_official),
    Contender("echo", "bare websockets echo (round trips)", open_echo, True, ("CartPole",)),
    Contender(
        "echo-thread", "echo via a loop thread (round trips)", open_echo_thread, True, ("CartPole",)
    ),
    Contender("ours-env", "ours OpenEnvEnv (1 env)", open_ours_env, single_only=True),
    Contender("ours-json", "ours OpenEnvVectorEnv json", open_ours_json),
    Contender("ours-binary", "ours OpenEnvVectorEnv binary", open_ours_binary),
)

CONTENDER_KEYS: Final = tuple(c.key for c in CONTENDERS)
