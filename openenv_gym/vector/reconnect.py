"""Reopening a vector env's broken connections (``reconnect=True``).

A sub-env whose connection broke gets it back: every sub-env sharing that connection is
reopened (an embedded server that died is restarted first), retrying with the fleet's
:class:`~openenv_gym.vector.backoff.Backoff` while the failure may pass (nothing listens
yet, the connection dropped, the server's slots are not free yet); a refusal that will not
pass (a wrong token, not an OpenEnv server) fails at once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from openenv_gym.client import is_healthy
from openenv_gym.errors import AuthenticationError, NotAnOpenEnvServerError, OpenEnvGymError
from openenv_gym.vector.fleet import Fleet
from openenv_gym.vector.opening import close_all


def reopen(
    fleet: Fleet, indices: Sequence[int], causes: Sequence[BaseException] | None = None
) -> list[int]:
    """Reopen the connections of ``indices``, restarting an owned server that died.

    Attempts are repeated with :attr:`Fleet.backoff` (see :mod:`openenv_gym.vector.backoff`)
    while the failure may pass (nothing listens yet, the connection dropped, the server's
    slots are not free yet); a refusal that will not pass (a wrong token, not an OpenEnv
    server) fails at once. Returns every sub-env whose session was reopened (all those
    sharing a connection with one of ``indices``).

    Raises:
        SubEnvError: Reconnecting failed; the message names why the session broke
            (``causes``), the attempts made and the last error (its ``__cause__``).
    """
    broken = [c for c in fleet.channels if any(i in c.indices for i in indices)]
    affected = sorted(i for c in broken for i in c.indices)
    fleet.channels = [c for c in fleet.channels if c not in broken]
    close_all([c.session for c in broken])
    for channel in broken:
        if channel.shared is not None:
            channel.shared.close()
    first_cause = causes[0] if causes else None
    started = time.monotonic()
    attempts = 0
    delays = fleet.backoff.delays(start=started)
    while True:
        attempts += 1
        try:
            restart_dead_servers(fleet, affected)
            fleet.open(affected, check_capacity=False)
            return affected
        except OpenEnvGymError as exc:
            last: OpenEnvGymError = exc
        if isinstance(last, AuthenticationError | NotAnOpenEnvServerError):
            break
        delay = next(delays, None)
        if delay is None:
            break
        time.sleep(delay)
    elapsed = time.monotonic() - started
    broke = f"{first_cause}; " if first_cause is not None else ""
    error = fleet.sub_env_error(
        affected[0],
        f"{broke}reconnecting failed after {attempts} attempt(s) over {elapsed:.1f}s "
        f"(budget {fleet.backoff.budget:g}s); last error: {last}",
        reconnect=True,
    )
    raise error from last


def restart_dead_servers(fleet: Fleet, indices: Sequence[int]) -> None:
    """Restart the servers this fleet started, for ``indices``, that do not answer."""
    for url in {fleet.urls[i] for i in indices}:
        provider = fleet.providers.get(url)
        if provider is None or is_healthy(url, timeout=2.0):
            continue
        provider.stop()
        new_url = provider.start().rstrip("/")
        del fleet.providers[url]
        fleet.providers[new_url] = provider
        fleet.urls = [new_url if u == url else u for u in fleet.urls]


__all__ = ["reopen", "restart_dead_servers"]
