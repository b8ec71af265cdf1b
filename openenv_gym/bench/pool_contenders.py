"""The pool's contenders: :func:`~openenv_gym.vector.pool.make_pool` against the vector env.

Three comparisons, each a pair of contenders run one after the other at every N:

* ``ours-pool``: the pool with ``batch_size == N``, stepped with ``step(actions)``: the
  same work as ``ours-binary`` (the vector env); the pool must cost nothing when it is not
  needed (issue 25's target: at least 0.95x).
* ``learner-vector`` / ``learner-pool``: a learner that spends
  :data:`LEARNER_MS_PER_ENV` per env of a batch (``time.sleep``: it models a learner on
  another device, taking no CPU of this machine), against the synchronous vector env (all N
  per step) and the pool (``batch_size = N / 2``: the learner works on one half while the
  other half is on the wire). Over ``--link wan`` (Pong N=32) the learner's time hides behind
  the round trip: (RTT + 16 ms) / (RTT + 8 ms) ~ 1.29x is the ideal, 1.2x the target.
  Observations are compressed (``compression="zstd"``) when the link is not loopback, as
  ``"auto"`` does to a server on another host.
* ``variable-vector`` / ``variable-pool``: the ``Variable`` env of the suite, an
  official-package server whose steps sleep an exponential time (mean
  :data:`~openenv_gym.bench.variable_steps.MEAN_MS`, sessions wait concurrently; see
  :mod:`openenv_gym.bench.variable_steps`), a learner that spends
  :data:`VARIABLE_LEARNER_MS` per batch, the vector env against the pool with
  ``batch_size = N / 2`` (target at N=16: at least 1.6x).

A pool contender counts the steps each sub-env got in the timed window: the cell fails
(:class:`StarvedSubEnvError`) when one got none, and the report notes the least and most.

Example:
    >>> half(16), half(1)
    (8, 1)
    >>> [t.text for t in POOL_TARGETS][0]
    'pool(batch=N) CartPole N=16 >= 0.95x vector env'
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Final

import numpy as np

from openenv_gym.bench.context import Context
from openenv_gym.bench.local import require_module
from openenv_gym.bench.measure import ActionStream, Driver, LoopDriver, Window, timed_loop
from openenv_gym.bench.remote import OFFICIAL_CLIENT, ours_vector
from openenv_gym.bench.targets import Target, vs
from openenv_gym.errors import PicklableError

#: The learner's time per env of a batch in the ``learner-*`` contenders (issue 25's wan row).
LEARNER_MS_PER_ENV: Final = 0.5
#: The learner's time per batch in the ``variable-*`` contenders (issue 25's variable row).
VARIABLE_LEARNER_MS: Final = 2.0


class StarvedSubEnvError(PicklableError):
    """A pool contender's timed window left a sub-env without a single step."""


def half(num_envs: int) -> int:
    """The pool's ``batch_size`` in the ``learner-*`` and ``variable-*`` rows: N / 2 (>= 1)."""
    return max(1, num_envs // 2)


def _compression(context: Context) -> dict[str, Any]:
    """``compression="zstd"`` off loopback (what ``"auto"`` does on another host)."""
    return {} if context.settings.link.name == "loopback" else {"compression": "zstd"}


class PoolDriver:
    """``recv()``, the learner's time, ``send()`` of the batch: one call of the timed loop.

    Args:
        pool: An :class:`~openenv_gym.vector.pool.OpenEnvPool` (reset here).
        learner_seconds: The learner's time per batch.
        note: Where the steps each sub-env got go (the report's notes), with ``label``.
        label: Names the cell in that note.
    """

    def __init__(
        self, pool: Any, learner_seconds: float, note: Callable[[str], None], label: str
    ) -> None:
        self._pool = pool
        self._learner = learner_seconds
        self._note = note
        self._label = label
        self._batch = pool.batch_size
        self._served = np.zeros(pool.num_envs, dtype=np.int64)
        self._window: tuple[int, int] | None = None  # least and most steps of a sub-env
        pool.async_reset(seed=0)

    def _step(self, row: np.ndarray) -> None:
        *_, info = self._pool.recv()
        ids = info["env_id"]
        if self._learner:
            time.sleep(self._learner)
        self._pool.send(row[: self._batch], ids)
        self._served[ids] += 1

    def run(self, actions: ActionStream, seconds: float) -> Window:
        self._served[:] = 0
        self._window = None
        window = timed_loop(self._step, actions, seconds)
        window.env_steps = window.calls * self._batch
        served = self._served
        # A fair pool serves every sub-env once per N / batch calls: after four rounds a
        # sub-env without a step was starved, not unlucky.
        if window.calls >= 4 * len(served) // self._batch and served.min() == 0:
            starved = np.flatnonzero(served == 0).tolist()
            raise StarvedSubEnvError(
                f"sub-envs {starved} got no step in {window.calls} batches of {self._batch}"
            )
        self._window = (int(served.min()), int(served.max()))
        return window

    def close(self) -> None:
        """Note the steps each sub-env got in the last window; take the replies in flight
        (a server need not answer a closed connection), close the pool."""
        if self._window is not None:
            low, high = self._window
            self._note(f"{self._label}: every sub-env served, {low}-{high} steps each")
        try:
            for _ in range(self._pool.num_envs // self._batch):
                self._pool.recv()
        except Exception:  # the pool closes all the same
            pass
        finally:
            self._pool.close()


def vector_learner_driver(envs: Any, learner_seconds: float) -> Driver:
    """The synchronous vector env with a learner's time before every step."""
    envs.reset(seed=0)

    def step(row: np.ndarray) -> None:
        time.sleep(learner_seconds)
        envs.step(row)

    return LoopDriver(step, envs.close)


def _pool(context: Context, n: int, batch_size: int, *, official: bool = False) -> Any:
    from openenv_gym.vector.pool import make_pool

    urls = context.require_servers()
    if official:  # any server: spaces from its schema
        return make_pool(None, n, batch_size, base_url=list(urls))
    spec = context.spec
    kwargs = {"encoding": "binary", **spec.openenv_kwargs, **_compression(context)}
    return make_pool(spec.openenv_id, n, batch_size, base_url=list(urls), **kwargs)


def _pool_driver(
    context: Context, n: int, key: str, learner_seconds: float, *, official: bool = False
) -> Driver:
    """The pool (``batch_size = N / 2``) of contender ``key``, ``learner_seconds`` per batch."""
    batch = half(n)
    label = f"{key} {context.spec.name} N={n} batch_size={batch}"
    pool = _pool(context, n, batch, official=official)
    return PoolDriver(pool, learner_seconds, context.notes.append, label)


def open_ours_pool(context: Context, n: int) -> Driver:
    """The pool with ``batch_size == N``, stepped with ``step(actions)`` (like ``ours-binary``)."""
    spec = context.spec
    urls = context.require_servers()
    from openenv_gym.vector.pool import make_pool

    pool = make_pool(
        spec.openenv_id, n, base_url=list(urls), encoding="binary", **spec.openenv_kwargs
    )
    pool.reset(seed=0)
    return LoopDriver(pool.step, pool.close)


def open_learner_vector(context: Context, n: int) -> Driver:
    """The vector env, a learner of :data:`LEARNER_MS_PER_ENV` per env before each step."""
    spec = context.spec
    urls = context.require_servers()
    kwargs = {**spec.openenv_kwargs, **_compression(context)}
    envs = ours_vector(spec.openenv_id, n, urls, "binary", **kwargs)
    return vector_learner_driver(envs, LEARNER_MS_PER_ENV / 1000 * n)


def open_learner_pool(context: Context, n: int) -> Driver:
    """The pool (``batch_size = N / 2``), a learner of :data:`LEARNER_MS_PER_ENV` per env."""
    return _pool_driver(context, n, "learner-pool", LEARNER_MS_PER_ENV / 1000 * half(n))


def open_variable_vector(context: Context, n: int) -> Driver:
    """The vector env on the variable-time server, :data:`VARIABLE_LEARNER_MS` per step."""
    require_module("openenv.core", OFFICIAL_CLIENT)
    from openenv_gym.vector import OpenEnvVectorEnv

    envs = OpenEnvVectorEnv(None, n, base_url=context.require_servers())
    return vector_learner_driver(envs, VARIABLE_LEARNER_MS / 1000)


def open_variable_pool(context: Context, n: int) -> Driver:
    """The pool (``batch_size = N / 2``) on the variable-time server,
    :data:`VARIABLE_LEARNER_MS` per batch."""
    require_module("openenv.core", OFFICIAL_CLIENT)
    return _pool_driver(context, n, "variable-pool", VARIABLE_LEARNER_MS / 1000, official=True)


def _parity(env: str, n: int) -> Target:
    return vs(
        f"pool(batch=N) {env} N={n} >= 0.95x vector env",
        env,
        n,
        "ours-binary",
        0.95,
        ("ours-pool",),
    )


#: Issue 25's targets; :func:`pool_verdicts` shows those a run measured.
POOL_TARGETS: Final[tuple[Target, ...]] = (
    _parity("CartPole", 16),
    _parity("CartPole", 64),
    _parity("Pong", 16),
    vs(
        f"pool(batch=8) Variable N=16, learner {VARIABLE_LEARNER_MS:g} ms/batch >= 1.6x vector env",
        "Variable",
        16,
        "variable-vector",
        1.6,
        ("variable-pool",),
    ),
    vs(
        f"pool(batch=16) Pong N=32 over wan, learner {LEARNER_MS_PER_ENV:g} ms/env >= 1.2x "
        "vector env",
        "Pong",
        32,
        "learner-vector",
        1.2,
        ("learner-pool",),
    ),
)


def pool_targets(link: str) -> Sequence[Target]:
    """The pool targets that hold on ``link`` (the learner row is a ``wan`` target only)."""
    return [t for t in POOL_TARGETS if link == "wan" or "learner-pool" not in t.contenders]


__all__ = [
    "LEARNER_MS_PER_ENV",
    "POOL_TARGETS",
    "VARIABLE_LEARNER_MS",
    "PoolDriver",
    "StarvedSubEnvError",
    "half",
    "open_learner_pool",
    "open_learner_vector",
    "open_ours_pool",
    "open_variable_pool",
    "open_variable_vector",
    "pool_targets",
    "vector_learner_driver",
]
