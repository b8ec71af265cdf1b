"""``make_pool``: N remote sessions as an envpool-style asynchronous pool (send / recv).

A synchronous vector step is as slow as its slowest sub-env. The pool follows envpool's
gymnasium calling convention instead: :meth:`OpenEnvPool.recv` returns the first
``batch_size`` sub-envs whose replies came (``info["env_id"]`` names them), and
:meth:`OpenEnvPool.send` steps only those, while the others are still stepping on their
servers. With ``batch_size == num_envs`` (the default) it is synchronous: a ``send`` of
every sub-env goes out and is collected by the very path of
:class:`~openenv_gym.vector.OpenEnvVectorEnv`'s ``step`` (one frame per connection, the
replies read in connection order, whole columns written at once), so the pool costs
nothing when it is not needed; ``info["env_id"]`` is then ``0..num_envs-1``.

Against our servers the sub-envs of one connection that are sent together travel in one
``batch_step`` frame; a connection carries one frame at a time (a send for its other
sub-envs waits, and goes as soon as the reply is read). Against an official server each
session is its own connection. Replies are taken in the order they arrive (first come,
first returned), so no sub-env waits behind others that came later.

Autoreset is envpool's, which is Gymnasium's ``NEXT_STEP``: a sub-env whose episode ended
is reset by its next ``send`` (the action is ignored); that reply has the first observation,
reward 0, neither flag set.

Faults are those of the vector env: a broken connection raises
:class:`~openenv_gym.errors.SubEnvError` naming the sub-env and its URL; with
``reconnect=True`` its session is reopened instead, and the sub-envs that were in flight
come back truncated with ``info["reconnected"]`` (their next send resets them).

Example:
    >>> import numpy as np, openenv_gym
    >>> pool = openenv_gym.make_pool("openenv/CartPole-v1", 4, batch_size=2)  # doctest: +SKIP
    >>> pool.async_reset()  # doctest: +SKIP
    >>> obs, rew, term, trunc, info = pool.recv()  # doctest: +SKIP
    >>> pool.send(np.zeros(2, dtype=np.int64), info["env_id"])  # doctest: +SKIP
    >>> pool.close()  # doctest: +SKIP
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from openenv_gym.errors import (
    OpenEnvGymError,
    PoolUsageError,
)
from openenv_gym.vector.in_flight import Flight, InFlight
from openenv_gym.vector.infos import info_adder, take_info_rows
from openenv_gym.vector.options import (
    check_batch_size,
    check_env_ids,
    check_sub_envs,
    seeds_for,
)
from openenv_gym.vector.pool_arguments import (
    envpool_dtypes,
    first_seeds,
    pool_options,
    send_arguments,
)
from openenv_gym.vector.round_trip import Op
from openenv_gym.vector.step_path import RECONNECTED_KEY, SubEnvConnections, open_step_path
from openenv_gym.wire.encoding import DEFAULT_ENCODING
from openenv_gym.wire.messages import reset_message


class OpenEnvPool(SubEnvConnections):
    """``num_envs`` sessions of one OpenEnv environment, stepped ``batch_size`` at a time.

    Made by :func:`make_pool`; see the module doc.

    Attributes:
        observation_space: The space of one sub-env's observation.
        action_space: The space of one sub-env's action.
        spec: The Gymnasium spec of ``env_id`` (``None`` without an id).
        config: ``num_envs``, ``batch_size``, ``env_id``, ``max_episode_steps``, ``reconnect``,
            ``base_urls`` (envpool's ``config`` dict).
    """

    def __init__(
        self,
        env_id: str | None,
        num_envs: int,
        batch_size: int | None = None,
        *,
        base_url: str | Sequence[str] | None = None,
        encoding: str = DEFAULT_ENCODING,
        reconnect: bool = False,
        max_episode_steps: int | None = None,
        **env_kwargs: Any,
    ) -> None:
        self._closed = True
        envpool_options = pool_options(env_kwargs)  # seed=, num_threads=, env_type=
        env_kwargs, self._make_seed = envpool_options.env_kwargs, envpool_options.seed
        spec = check_sub_envs(env_id, num_envs, base_url, encoding, max_episode_steps)
        self.num_envs = spec.num_envs
        self.batch_size = check_batch_size(batch_size, self.num_envs)
        self.reconnect = reconnect
        self._add_info = info_adder(self.num_envs)
        # The vector env's step: a synchronous send of every sub-env (batch_size == num_envs).
        template = self._take_path(
            open_step_path(
                spec,
                env_kwargs,
                self._add_info,
                autoreset_mode=AutoresetMode.NEXT_STEP,
                reconnect=reconnect,
                # Batches in flight at once, each on its own connection (a connection
                # carries one frame at a time).
                sessions_per_connection=(
                    None if self.batch_size == self.num_envs else self.batch_size
                ),
            )
        )
        self.observation_space = template.observation_codec.space
        self.action_space = self._action_codec.space
        self.spec = gym.spec(env_id) if env_id is not None else None
        self.config: dict[str, Any] = {
            "env_id": env_id,
            "num_envs": self.num_envs,
            "batch_size": self.batch_size,
            "max_episode_steps": max_episode_steps,
            "reconnect": reconnect,
            "seed": self._make_seed,
            "base_urls": sorted(set(self._connections.urls)),
        }
        self._infos: dict[str, Any] = {}
        self._started = np.zeros(self.num_envs, dtype=np.bool_)  # reset at least once
        self._in_flight: set[int] = set()  # sent (or waiting to be), reply not read
        self._ready: deque[int] = deque()  # reply read, not returned by recv() yet
        self._flights = InFlight(self._connections, self.num_envs)
        self._every = np.arange(self.num_envs)
        self._last = self._every

    # ------------------------------------------------------------------ envpool API

    def reset(
        self, env_id: Any = None, *, seed: int | Sequence[int | None] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every sub-env (or those of ``env_id``) and wait for all of them.

        Steps in flight are waited out and dropped first.

        Returns:
            The observations and info (``info["env_id"]``) of the sub-envs reset, in order.

        Raises:
            PoolUsageError: ``env_id`` names an unknown sub-env or one twice.
            SubEnvError: A connection broke (and ``reconnect`` is off or failed).
        """
        self._check_open()
        ids = self._check_ids(env_id, busy_ok=True)
        self._drain()
        seeds = self._seeds(seed, ids)
        ops: list[Op | None] = [None] * self.num_envs
        for i in ids:
            ops[i] = ("reset", reset_message(seed=seeds[i], **self._reset_kwargs)["data"])
        results = self._path.round_trip(ops)
        self._flights.map_channels()
        buffers = self._buffers
        for channel, result in results:
            self._infos = buffers.take_resets(channel.indices, result, self._infos)
        buffers.mark_reset(ids)
        self._started[ids] = True
        self._last = np.array(ids)
        obs, _, _, _, info = envpool_dtypes(self._batch_of(self._last))
        return obs, info

    def async_reset(
        self, env_id: Any = None, *, seed: int | Sequence[int | None] | None = None
    ) -> None:
        """Send a reset to every sub-env (or those of ``env_id``) and return at once;
        :meth:`recv` returns them as they come. Steps in flight are waited out first."""
        self._check_open()
        ids = self._check_ids(env_id, busy_ok=True)
        self._drain()
        seeds = self._seeds(seed, ids)
        ops = {
            i: ("reset", reset_message(seed=seeds[i], **self._reset_kwargs)["data"]) for i in ids
        }
        self._started[ids] = True
        self._dispatch(ops, resets=set(ids))

    def send(self, actions: Any, env_id: Any = None) -> None:
        """Step the sub-envs ``env_id`` (default: those of the last :meth:`recv`) with
        ``actions`` (one per sub-env, in the order of ``env_id``); returns at once.

        A sub-env whose episode ended at its last step is reset instead (its action is
        ignored).

        Raises:
            PoolUsageError: ``env_id`` names an unknown sub-env, one twice, one still in
                flight (or whose reply waits for :meth:`recv`), or one never reset; or the
                number of actions differs.
            ActionOutOfSpaceError: An action is outside the action space (nothing is sent).
        """
        self._send(actions, env_id, defer=False)

    def _send(self, actions: Any, env_id: Any, *, defer: bool) -> None:
        """:meth:`send`; ``defer``: a synchronous round trip only builds its frames (the
        following :meth:`recv` sends and reads them in one go, as the vector env's step)."""
        self._check_open()
        actions, env_id = send_arguments(actions, env_id)  # envpool's dict form
        ids = self._check_ids(self._last if env_id is None else env_id, busy_ok=False)
        if self._synchronous(ids):
            self._path.send(actions, ids=ids, defer=defer)
            return
        unstarted = [i for i in ids if not self._started[i]]
        if unstarted:
            raise PoolUsageError(
                f"sub-envs {unstarted} were never reset; call pool.async_reset() or "
                "pool.reset() before sending actions"
            )
        try:
            wires = self._path.encode(actions, ids)
        except OpenEnvGymError as exc:
            exc.add_note(f"(the actions of sub-envs {ids}, in that order)")
            raise
        ops: dict[int, Op] = {}
        resets: set[int] = set()
        autoreset = self._buffers.autoreset
        for i, wire in zip(ids, wires, strict=True):
            if autoreset[i]:
                ops[i] = ("reset", self._path.plain_reset)
                resets.add(i)
            else:
                ops[i] = ("step", wire)
        self._dispatch(ops, resets)

    def recv(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The first ``batch_size`` sub-envs whose replies came, in arrival order:
        ``(obs, rew, terminated, truncated, info)`` with ``info["env_id"]`` and
        ``info["elapsed_step"]``.

        Raises:
            PoolUsageError: Fewer than ``batch_size`` sub-envs are in flight or waiting.
            SubEnvError: A connection broke (and ``reconnect`` is off or failed).
        """
        self._check_open()
        if self._path.pending:
            return envpool_dtypes(self._recv_every())
        need = self.batch_size
        if len(self._ready) + len(self._in_flight) < need:
            raise PoolUsageError(
                f"recv() returns batch_size={need} sub-envs, but only "
                f"{len(self._ready) + len(self._in_flight)} were sent and not received; "
                "call pool.send(actions, env_id) (or pool.async_reset()) first"
            )
        while len(self._ready) < need:
            self._wait_for_replies()
        ids = np.array([self._ready.popleft() for _ in range(need)])
        self._last = ids
        return envpool_dtypes(self._batch_of(ids))

    def step(
        self, actions: Any, env_id: Any = None
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """:meth:`send` then :meth:`recv`."""
        self._send(actions, env_id, defer=True)
        return self.recv()

    def action_masks(self) -> np.ndarray:
        """The legal actions of the sub-envs of the last :meth:`recv` (or :meth:`reset`):
        ``(len(env_id), n)`` ``bool``.

        Raises:
            ActionMaskUnavailableError: No observation field lists the legal actions, or
                the action space is not discrete.
        """
        return self._buffers.action_masks(self._action_codec, self._last.tolist())

    def close(self) -> None:
        """Close every session (steps in flight are dropped, not waited for) and stop the
        servers this pool started. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._connections.close()

    def __len__(self) -> int:
        """``num_envs``, as envpool's ``len(pool)``."""
        return self.num_envs

    def _seeds(self, seed: int | Sequence[int | None] | None, ids: list[int]) -> list[int | None]:
        """Per sub-env seeds of a reset: ``seed``'s, else ``make_pool(seed=)``'s on a first."""
        fresh = [i for i in ids if not self._started[i]]
        return first_seeds(seeds_for(seed, self.num_envs), make_seed=self._make_seed, fresh=fresh)

    def __enter__(self) -> OpenEnvPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"OpenEnvPool(num_envs={self.num_envs}, batch_size={self.batch_size}, "
            f"servers={self.config['base_urls']})"
        )

    # ------------------------------------------------------------------ replies

    def _dispatch(self, ops: Mapping[int, Op], resets: set[int]) -> None:
        self._in_flight.update(ops)
        self._flights.dispatch(ops, resets)

    def _wait_for_replies(self) -> None:
        """Take the replies that came (at least one, or a fault); the first error is raised
        once every reply read is taken."""
        failure: BaseException | None = None
        every = self.batch_size == self.num_envs
        for flight, reply in self._flights.replies(every=every):
            try:
                if isinstance(reply, OpenEnvGymError):
                    self._lost(flight, reply)
                else:
                    self._take(flight, reply)
            except BaseException as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    def _take(self, flight: Flight, raw: str | bytes) -> None:
        """Decode one connection's reply; its sub-envs become ready."""
        channel = flight.channel
        buffers = self._buffers
        try:
            result = channel.parse(raw, self._connections.url_of(channel.indices[0]))
            self._infos = buffers.take_steps(
                channel.indices, result, flight.resetting, self._infos, {}
            )
        except BaseException:
            # Not in flight any more; resetting them is how they go on.
            buffers.end_episodes(flight.sub_envs)
            self._in_flight.difference_update(flight.sub_envs)
            self._flights.flush(channel)
            raise
        stepped = [channel.indices[k] for k in result.indices]
        buffers.settle(stepped)
        for i in stepped:
            self._in_flight.discard(i)
            self._ready.append(i)
        self._flights.flush(channel)

    def _lost(self, flight: Flight, cause: OpenEnvGymError) -> None:
        """A connection broke: raise, or (``reconnect``) reopen it and return its sub-envs
        in flight as truncated."""
        connections = self._connections
        if not self.reconnect:
            raise connections.sub_env_error(flight.sub_envs[0], cause, reconnect=False) from cause
        held = self._flights.forget_held(flight.channel)
        affected = connections.reopen(flight.channel.indices, [cause])
        self._flights.map_channels()
        buffers = self._buffers
        buffers.end_episodes(affected)  # their new sessions start with a reset
        for i in [*flight.sub_envs, *held]:
            buffers.mark_reconnected(i)
            self._infos = self._add_info(self._infos, {RECONNECTED_KEY: True}, i)
            self._in_flight.discard(i)
            self._ready.append(i)

    def _drain(self) -> None:
        """Wait out the frames in flight and forget every reply not returned yet."""
        self._path.drain()
        self._flights.drain()
        self._in_flight.clear()
        self._ready.clear()
        self._infos = {}

    # ------------------------------------------------------------------ synchronous path

    def _synchronous(self, ids: list[int]) -> bool:
        """Whether a send of ``ids`` is one synchronous round trip of every sub-env: the
        pool is synchronous, nothing else is in flight or waiting, every sub-env was reset."""
        return (
            self.batch_size == self.num_envs
            and len(ids) == self.num_envs
            and not self._in_flight
            and not self._ready
            and not self._flights.waiting
            and bool(self._started.all())
        )

    def _recv_every(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Collect the synchronous round trip: every sub-env, in order (the vector env's
        ``step_wait``)."""
        buffers = self._buffers
        infos, _ = self._path.collect()  # NEXT_STEP: nothing left to reset in this step
        if self._path.reconnected:
            self._flights.map_channels()
        buffers.end_step()
        self._last = self._every
        infos["env_id"] = self._every.copy()
        infos["elapsed_step"] = buffers.elapsed.copy()
        return (
            buffers.batch_observations(copy=True),
            buffers.rewards.copy(),
            buffers.terminations.copy(),
            buffers.truncations.copy(),
            infos,
        )

    # ------------------------------------------------------------------ batches

    def _batch_of(
        self, ids: np.ndarray
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        buffers = self._buffers
        obs = buffers.batch_of(ids)
        info = take_info_rows(self._infos, ids)
        info["env_id"] = ids
        info["elapsed_step"] = buffers.elapsed[ids]
        return (
            obs,
            buffers.rewards[ids],
            buffers.terminations[ids],
            buffers.truncations[ids],
            info,
        )

    # ------------------------------------------------------------------ checks

    def _check_ids(self, env_id: Any, *, busy_ok: bool) -> list[int]:
        ids = check_env_ids(env_id, self.num_envs)
        if not busy_ok:
            if self._path.pending:
                busy = ids
            else:
                busy = [i for i in ids if i in self._in_flight or i in self._ready]
            if busy:
                raise PoolUsageError(
                    f"sub-envs {busy} are already in flight (or their reply waits for recv()); "
                    "send only the env_id of the last recv()"
                )
        return ids

    def _check_open(self) -> None:
        if self._closed:
            raise PoolUsageError("this pool is closed; create a new one with make_pool(...)")


def make_pool(
    env_id: str | None, num_envs: int, batch_size: int | None = None, **env_kwargs: Any
) -> OpenEnvPool:
    """An envpool-style pool of ``num_envs`` sessions of ``env_id`` (see :class:`OpenEnvPool`).

    Args:
        env_id: A registered ``openenv/...`` id, or ``None`` with ``base_url`` (any server).
        num_envs: The number of sub-envs (sessions).
        batch_size: How many sub-envs :meth:`OpenEnvPool.recv` returns; ``None`` (or
            ``num_envs``): all of them, synchronously.
        **env_kwargs: ``base_url``, ``encoding``, ``reconnect``, ``max_episode_steps``,
            envpool's ``seed`` / ``num_threads`` / ``env_type`` (see
            :mod:`~openenv_gym.vector.pool_arguments`), and what
            ``gymnasium.make(env_id, ...)`` takes.

    Raises:
        PoolUsageError: ``batch_size`` is not in ``1..num_envs``; ``seed`` is not an int,
            ``env_type`` is ``"dm"``.
        VectorUsageError: ``num_envs``, ``base_url`` or ``encoding`` is invalid.
        InsufficientCapacityError: The servers cannot take ``num_envs`` sessions.
    """
    return OpenEnvPool(env_id, num_envs, batch_size, **env_kwargs)


__all__ = ["OpenEnvPool", "make_pool"]
