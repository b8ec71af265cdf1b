"""Contenders over the wire: the official ``openenv`` client and ours.

* ``official``: N official ``GenericEnvClient`` sessions on one asyncio loop in this thread,
  stepped with ``asyncio.gather`` (episodes that end are reset in the same vector step);
* ``official-sync``: one official client through its synchronous ``.sync()`` wrapper;
* ``ours-env``: our single env, ``gym.make("openenv/...", base_url=...)``; ``ours-env-zstd``
  / ``ours-env-raw``: the same with compression forced on / off;
* ``ours-json`` / ``ours-binary``: our ``OpenEnvVectorEnv`` over pooled sessions; ``ours-zstd``:
  binary with compression forced on; ``ours-raw``: binary with compression off.

The drivers take the action to send from a row of the action stream; the suite's rows are
Discrete indices, :mod:`openenv_gym.bench.url` passes pre-encoded wire actions.

Example:
    >>> wire_action("action")([1])
    {'action': 1}
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym

from openenv_gym.bench.context import Context
from openenv_gym.bench.local import require_module, single_env_driver, vector_env_driver
from openenv_gym.bench.measure import (
    ActionStream,
    ContenderUnavailableError,
    Driver,
    LoopDriver,
    Window,
    WindowTimer,
)

#: Why the official client's contenders need a package (their skip reason).
OFFICIAL_CLIENT = "the official OpenEnv client: pip install openenv"
#: A one-action slice of a row -> the official client's action dict.
WireAction = Callable[[Any], dict[str, Any]]


def wire_action(field: str) -> WireAction:
    """``row -> {field: int(row[0])}``: a Discrete index as the wire's action dict."""
    return lambda row: {field: int(row[0])}


class OfficialGatherDriver:
    """N official ``GenericEnvClient`` sessions on one asyncio loop, stepped with gather.

    Args:
        urls: Server base URLs (sessions are spread round-robin).
        n: Sessions.
        encode: A one-action slice of a row -> the wire action dict.
        headers: Extra WebSocket handshake headers (a bearer token).
    """

    def __init__(
        self,
        urls: Sequence[str],
        n: int,
        encode: WireAction,
        headers: dict[str, str] | None = None,
    ) -> None:
        client = require_module("openenv.core", OFFICIAL_CLIENT).GenericEnvClient
        self._encode = encode
        self._loop = asyncio.new_event_loop()
        kwargs: dict[str, Any] = {"headers": headers} if headers else {}
        self._clients = [client(base_url=urls[i % len(urls)], **kwargs) for i in range(n)]
        try:
            self._loop.run_until_complete(self._open())
        except BaseException:
            self.close()
            raise

    async def _open(self) -> None:
        await asyncio.gather(*(client.connect() for client in self._clients))
        await asyncio.gather(*(c.reset(seed=i) for i, c in enumerate(self._clients)))

    def run(self, actions: ActionStream, seconds: float) -> Window:
        return self._loop.run_until_complete(self._run(actions, seconds))

    async def _run(self, actions: ActionStream, seconds: float) -> Window:
        import time

        clients, encode = self._clients, self._encode
        timer = WindowTimer(seconds)
        while True:
            row = actions.next()
            before = time.perf_counter()
            results = await asyncio.gather(
                *(client.step(encode(row[i : i + 1])) for i, client in enumerate(clients))
            )
            done = [client for client, result in zip(clients, results, strict=True) if result.done]
            if done:
                await asyncio.gather(*(client.reset() for client in done))
            if (now := timer.lap(before)) >= timer.deadline:
                return timer.window(now)

    async def _close(self) -> None:
        await asyncio.gather(*(c.close() for c in self._clients), return_exceptions=True)

    def close(self) -> None:
        try:
            self._loop.run_until_complete(self._close())
        finally:
            self._loop.close()


def official_sync_driver(
    url: str, encode: WireAction, headers: dict[str, str] | None = None
) -> Driver:
    """One official client through its ``.sync()`` wrapper (a background loop thread)."""
    official = require_module("openenv.core", OFFICIAL_CLIENT)
    kwargs: dict[str, Any] = {"headers": headers} if headers else {}
    client: Any = official.GenericEnvClient(base_url=url, **kwargs).sync()
    try:
        client.connect()
        client.reset(seed=0)
    except BaseException:
        client.close()
        raise

    def step(row: Any) -> bool:
        return bool(client.step(encode(row)).done)

    return LoopDriver(step, client.close, reset=client.reset)


def open_official(context: Context, n: int) -> Driver:
    """The official ``openenv`` client: asyncio gather over N ``GenericEnvClient`` sessions."""
    urls = context.require_servers()
    return OfficialGatherDriver(urls, n, wire_action(context.spec.official_action_field))


def open_official_sync(context: Context, n: int) -> Driver:
    """The official client's synchronous ``.sync()`` wrapper, one session."""
    urls = context.require_servers()
    return official_sync_driver(urls[0], wire_action(context.spec.official_action_field))


def _with_compression(kwargs: dict[str, Any], compression: str | None) -> dict[str, Any]:
    return kwargs if compression is None else {**kwargs, "compression": compression}


def ours_env_opener(compression: str | None = None) -> Callable[[Context, int], Driver]:
    """The opener of our single env (``gym.make("openenv/...", base_url=...)``), default
    encoding, and, given, ``compression`` forced (``"zstd"`` or ``"off"``; else the default
    ``"auto"``, which measures)."""

    def open_ours_env(context: Context, n: int) -> Driver:
        import openenv_gym  # noqa: F401  (registers the ids)

        urls = context.require_servers()
        spec = context.spec
        if spec.openenv_id not in gym.registry:
            raise ContenderUnavailableError(f"{spec.openenv_id} is not registered in this install")
        kwargs = _with_compression(spec.openenv_kwargs, compression)
        return single_env_driver(gym.make(spec.openenv_id, base_url=urls[0], **kwargs))

    return open_ours_env


def ours_vector(
    id: str | None, n: int, urls: Sequence[str], encoding: str, **kwargs: Any
) -> gym.vector.VectorEnv[Any, Any, Any]:
    """Our ``OpenEnvVectorEnv`` over ``urls`` (``ContenderUnavailableError`` when it cannot)."""
    import openenv_gym

    vector_cls = getattr(openenv_gym, "OpenEnvVectorEnv", None)
    if vector_cls is None:
        raise ContenderUnavailableError("openenv_gym.OpenEnvVectorEnv is not in this install")
    if "encoding" not in inspect.signature(vector_cls).parameters:
        raise ContenderUnavailableError("OpenEnvVectorEnv has no encoding= option in this install")
    try:
        return vector_cls(id, n, base_url=list(urls), encoding=encoding, **kwargs)
    except Exception as exc:
        if encoding == "binary":  # an older server or client without the binary frames
            raise ContenderUnavailableError(
                f"encoding='binary' was refused: {type(exc).__name__}: {exc}"
            ) from exc
        raise


def ours_vector_opener(
    encoding: str, compression: str | None = None
) -> Callable[[Context, int], Driver]:
    """The opener of our ``OpenEnvVectorEnv`` over the context's servers with ``encoding``
    (``"json"``: plain OpenEnv frames; ``"binary"``: binary observation frames where the server
    agrees) and, given, ``compression`` forced (``"zstd"`` or ``"off"``; else the default
    ``"auto"``, which measures raw and packed frames)."""

    def open_ours_vector(context: Context, n: int) -> Driver:
        spec = context.spec
        kwargs = _with_compression(spec.openenv_kwargs, compression)
        urls = context.require_servers()
        return vector_env_driver(ours_vector(spec.openenv_id, n, urls, encoding, **kwargs))

    return open_ours_vector
