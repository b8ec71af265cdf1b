"""How many sessions a set of servers takes, asked before a vector env opens its sessions.

Our servers answer ``GET /capacity`` with ``{"max_sessions": M, "active_sessions": A,
"workers": W, "step_seconds": S}`` (``S``: what one environment step costs a worker, or
``null``; see :mod:`openenv_gym.server.step_cost`).
Official ``openenv`` servers have no such route (404); for them the only way to know is to
open the sessions and see which get ``CAPACITY_REACHED`` (an official server takes ONE
session unless its environment declares concurrent sessions).

Example:
    >>> error = insufficient_capacity_error(
    ...     requested=4, needed={"http://a:1": 4}, accepted={"http://a:1": 1}, known=set()
    ... )
    >>> error.accepted
    {'http://a:1': 1}
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from openenv_gym.client.http import DEFAULT_CONNECT_TIMEOUT, get_json
from openenv_gym.errors import InsufficientCapacityError, NotAnOpenEnvServerError
from openenv_gym.wire.messages import CAPACITY_PATH


@dataclass(frozen=True, slots=True)
class ServerCapacity:
    """What ``GET /capacity`` said; both ``None`` when the server does not say.

    Attributes:
        url: The server's base URL.
        max_sessions: Concurrent sessions it takes.
        active_sessions: Sessions open right now.
        workers: Server processes sharing the port (``None``: not said).
        step_seconds: Seconds one environment step costs a worker (``None``: not said).
    """

    url: str
    max_sessions: int | None
    active_sessions: int | None
    workers: int | None = None
    step_seconds: float | None = None

    @property
    def known(self) -> bool:
        """Whether the server reported its capacity."""
        return self.max_sessions is not None and self.active_sessions is not None

    @property
    def free(self) -> int | None:
        """Sessions it can still open, ``None`` when unknown."""
        if self.max_sessions is None or self.active_sessions is None:
            return None
        return max(0, self.max_sessions - self.active_sessions)


def fetch_capacity(
    base_url: str, *, timeout: float = DEFAULT_CONNECT_TIMEOUT, token: str | None = None
) -> ServerCapacity:
    """``GET {base_url}/capacity``; an unknown capacity when the server has no such route.

    ``token`` (default: ``$OPENENV_TOKEN``) is sent as ``Authorization: Bearer``.

    Raises:
        ServerConnectionError: The server cannot be reached.
    """
    try:
        body = get_json(base_url, CAPACITY_PATH, timeout=timeout, token=token)
    except NotAnOpenEnvServerError:  # an official server: 404
        return ServerCapacity(base_url, None, None)
    if not isinstance(body, dict):
        return ServerCapacity(base_url, None, None)
    limit, active = body.get("max_sessions"), body.get("active_sessions")
    if not (isinstance(limit, int) and isinstance(active, int)):
        return ServerCapacity(base_url, None, None)
    workers = body.get("workers")
    valid_workers = isinstance(workers, int) and not isinstance(workers, bool) and workers > 0
    cost = body.get("step_seconds")
    if not (isinstance(cost, int | float) and not isinstance(cost, bool) and 0 <= cost < math.inf):
        cost = None
    return ServerCapacity(
        base_url,
        limit,
        active,
        workers if valid_workers else None,
        None if cost is None else float(cost),
    )


def insufficient_capacity_error(
    *,
    requested: int,
    needed: Mapping[str, int],
    accepted: Mapping[str, int | None],
    known: set[str],
) -> InsufficientCapacityError:
    """The error naming, per URL, how many sessions were needed and how many it accepts.

    Args:
        requested: Sessions the vector env needs in all.
        needed: Sessions needed per URL.
        accepted: Sessions each URL accepts (``None``: unknown).
        known: URLs whose number comes from ``GET /capacity`` (the others were probed).
    """
    lines = []
    for url, count in needed.items():
        took = accepted.get(url)
        how = "reported by GET /capacity" if url in known else "found by opening sessions"
        took_text = "an unknown number of" if took is None else str(took)
        lines.append(f"  {url}: needs {count}, accepts {took_text} ({how})")
    total = sum(v for v in accepted.values() if v is not None)
    return InsufficientCapacityError(
        f"the vector env needs {requested} sessions but the servers accept {total}:\n"
        + "\n".join(lines)
        + "\nWhat to do: start more servers and pass them all as base_url=[...] (sessions are "
        "spread round-robin), start our servers with more sessions (`openenv-gym serve ... "
        "--max-sessions N`; official openenv servers: max_concurrent_envs and an environment "
        "declaring SUPPORTS_CONCURRENT_SESSIONS), close other clients, or lower num_envs.",
        requested=requested,
        accepted=dict(accepted),
    )


__all__ = ["ServerCapacity", "fetch_capacity", "insufficient_capacity_error"]
