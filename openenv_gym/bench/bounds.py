"""The physical bounds beside each remote row: what the link allows, and what the server's CPU
allows on top of it.

A vector step of N sub-envs over a link costs at least one round trip (``N / RTT`` steps/s)
*plus* the time the server spends stepping its environments: a server of W worker
processes steps its share of the N sessions one after another in each worker, in parallel
across workers. That time is measured, never assumed: every batch step a worker serves
updates its ``step_seconds`` (``GET /capacity``, a moving average of the seconds per
environment step), and the client spreads its sessions over
:func:`~openenv_gym.vector.opening.worker_connections` of the workers by it. So the honest
bound of a row is

    N / (RTT + step_seconds x ceil(N / connections))

where ``connections`` is what the vector env opened. On this repository's 2-core machine
the server's workers share the cores with the client and the link proxy (on "another host"
they would have their own), so the server term is what this machine's CPU allows, and the
gap between a row and it is what our client, encoding and the link emulation cost.

Example:
    >>> from openenv_gym.bench.links import parse_link
    >>> bound = RowBound(parse_link("wan"), num_envs=16, step_seconds=550e-6, workers=2)
    >>> bound.server_seconds  # 8 Pong steps per worker, 2 workers in parallel
    0.0044
    >>> round(bound.round_trip), round(bound.with_server)
    (800, 656)
    >>> bound.describe()
    'N/RTT 800/s; N/(RTT + server 4.4 ms) 656/s'
    >>> RowBound(parse_link("loopback"), 8, 550e-6, 2).describe()
    'N/server 3,636/s (server 2.2 ms)'
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from openenv_gym.bench.links import LinkProfile

#: ``GET /capacity`` requests per server after a cell (each new connection may land on
#: another worker process; their step costs are averaged).
CAPACITY_SAMPLES: Final = 6


@dataclass(frozen=True)
class RowBound:
    """The bounds of one row.

    Attributes:
        link: The link of the run.
        num_envs: N.
        step_seconds: Seconds one environment step costs a server worker (measured).
        workers: Worker processes per server.
        servers: Servers the sessions are spread over.
    """

    link: LinkProfile
    num_envs: int
    step_seconds: float
    workers: int
    servers: int = 1

    @property
    def connections(self) -> int:
        """Worker connections per server the vector env opens (the same rule it uses)."""
        from openenv_gym.vector.opening import worker_connections

        per_server = math.ceil(self.num_envs / self.servers)
        return worker_connections(per_server, self.workers, self.step_seconds)

    @property
    def server_seconds(self) -> float:
        """Seconds a server spends stepping its share of one vector step."""
        per_server = math.ceil(self.num_envs / self.servers)
        return round(self.step_seconds * math.ceil(per_server / self.connections), 9)

    @property
    def round_trip(self) -> float:
        """``N / RTT`` steps/s (``inf`` without a delay)."""
        return self.link.round_trip_bound(self.num_envs)

    @property
    def with_server(self) -> float:
        """``N / (RTT + server time)`` steps/s."""
        total = self.link.rtt_ms / 1000.0 + self.server_seconds
        return math.inf if total <= 0 else self.num_envs / total

    def describe(self) -> str:
        """The row's bounds as text."""
        server_ms = f"{self.server_seconds * 1000:.1f} ms"
        if self.link.rtt_ms <= 0:
            return f"N/server {self.with_server:,.0f}/s (server {server_ms})"
        return (
            f"N/RTT {self.round_trip:,.0f}/s; N/(RTT + server {server_ms}) "
            f"{self.with_server:,.0f}/s"
        )


def measured_step_seconds(urls: Sequence[str], samples: int = CAPACITY_SAMPLES) -> float | None:
    """The mean ``step_seconds`` the servers at ``urls`` report (``None``: none says).

    Each request is a new connection, so a multi-worker server answers from several of its
    worker processes; unreachable servers are left out.
    """
    from openenv_gym.client.capacity import fetch_capacity
    from openenv_gym.errors import OpenEnvGymError

    found: list[float] = []
    for url in urls:
        for _ in range(samples):
            try:
                cost = fetch_capacity(url, timeout=5.0).step_seconds
            except OpenEnvGymError:
                break
            if cost is not None:
                found.append(cost)
    return statistics.fmean(found) if found else None


__all__ = ["CAPACITY_SAMPLES", "RowBound", "measured_step_seconds"]
