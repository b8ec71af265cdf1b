"""The contenders of the suite, in table order.

Each contender is one ``open_<name>(context, n) -> Driver`` function
(:mod:`openenv_gym.bench.local` for the in-process ones, :mod:`openenv_gym.bench.remote`
for those over the wire). To change how a contender is built, edit its one constructor call.

Example:
    >>> [c.key for c in CONTENDERS][:3]
    ['raw', 'sync', 'async']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from openenv_gym.bench import local, pool_contenders, remote
from openenv_gym.bench.context import Context
from openenv_gym.bench.measure import Driver

#: What "CPU µs/step" counts (printed under the table).
CPU_NOTE: Final = (
    "CPU µs/step: time.process_time() of the benchmark process per env step; all its threads "
    "count (envpool's C++ pool, a client's event-loop thread), other processes do not "
    "(AsyncVectorEnv's N workers, the servers): for those it is the learner-side cost only"
)


@dataclass(frozen=True)
class Contender:
    """One row family of the table.

    Attributes:
        key: Short name used in ``--contenders``, the CSV and the plot.
        label: Human name for the table.
        open: Builds a :class:`~openenv_gym.bench.measure.Driver` for N sub-envs.
        single_only: Measured at N=1 only (single-env contenders).
        opt_in: Runs only when ``--contenders`` names it.
    """

    key: str
    label: str
    open: Callable[[Context, int], Driver]
    single_only: bool = False
    opt_in: bool = False

    @property
    def remote(self) -> bool:
        """Whether it steps our servers over the wire (the official client's and ours)."""
        return self.open.__module__ == remote.__name__


#: Every contender, in table order.
CONTENDERS: Final[tuple[Contender, ...]] = (
    Contender("raw", "gymnasium (raw, 1 env)", local.open_raw, True),
    Contender("sync", "gymnasium SyncVectorEnv", local.open_sync),
    Contender("async", "gymnasium AsyncVectorEnv", local.open_async),
    Contender("envpool-sync", "envpool sync", local.open_envpool_sync),
    Contender("envpool", "envpool async", local.open_envpool_async),
    Contender(
        "official-sync",
        "official client .sync() (1 env)",
        remote.open_official_sync,
        True,
    ),
    Contender("official", "official client (gather)", remote.open_official),
    Contender("ours-env", "ours OpenEnvEnv (1 env)", remote.ours_env_opener(), True),
    Contender(
        "ours-env-zstd",
        "ours OpenEnvEnv (1 env, zstd forced)",
        remote.ours_env_opener("zstd"),
        True,
    ),
    Contender(
        "ours-env-raw",
        "ours OpenEnvEnv (1 env, compression off)",
        remote.ours_env_opener("off"),
        True,
    ),
    Contender("ours-json", "ours vector (JSON)", remote.ours_vector_opener("json")),
    Contender("ours-binary", "ours vector (binary)", remote.ours_vector_opener("binary")),
    Contender(
        "ours-zstd",
        "ours vector (binary, zstd forced)",
        remote.ours_vector_opener("binary", "zstd"),
    ),
    Contender(
        "ours-raw",
        "ours vector (binary, compression off)",
        remote.ours_vector_opener("binary", "off"),
    ),
    Contender("ours-pool", "ours pool (batch_size=N)", pool_contenders.open_ours_pool),
    Contender(
        "learner-vector",
        "ours vector + learner 0.5 ms/env",
        pool_contenders.open_learner_vector,
        opt_in=True,
    ),
    Contender(
        "learner-pool",
        "ours pool (batch N/2) + learner 0.5 ms/env",
        pool_contenders.open_learner_pool,
        opt_in=True,
    ),
    Contender(
        "variable-vector",
        "ours vector + learner 2 ms/step",
        pool_contenders.open_variable_vector,
    ),
    Contender(
        "variable-pool",
        "ours pool (batch N/2) + learner 2 ms/batch",
        pool_contenders.open_variable_pool,
    ),
)

CONTENDER_KEYS: Final = tuple(c.key for c in CONTENDERS)
