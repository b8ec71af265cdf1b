"""How a vector env's broken connections are reopened (``reconnect=True``): the retries.

:meth:`Connections.reopen <openenv_gym.vector.connections.Connections.reopen>` closes a
broken connection and makes one attempt to open it again (restarting an embedded server
that died); :func:`keep_trying` repeats that attempt with the fleet's
:class:`~openenv_gym.vector.backoff.Backoff` while the failure may pass (nothing listens
yet, the connection dropped, the server's slots are not free yet). A refusal that will not
pass (a wrong token, not an OpenEnv server) ends it at once.

Example:
    >>> from openenv_gym.errors import AuthenticationError
    >>> def refused() -> None:
    ...     raise AuthenticationError("wrong token", url="http://127.0.0.1:8000")
    >>> gave_up = keep_trying(refused, Backoff(budget=5.0))
    >>> gave_up.attempts, str(gave_up.last)
    (1, 'wrong token')
    >>> keep_trying(lambda: None, Backoff()) is None
    True
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from openenv_gym.errors import AuthenticationError, NotAnOpenEnvServerError, OpenEnvGymError
from openenv_gym.vector.backoff import Backoff


@dataclass(frozen=True)
class GaveUp:
    """Why :func:`keep_trying` stopped without success.

    Attributes:
        attempts: How many attempts were made.
        elapsed: Seconds from the first attempt to giving up.
        last: The error of the last attempt.
    """

    attempts: int
    elapsed: float
    last: OpenEnvGymError


def keep_trying(attempt: Callable[[], None], backoff: Backoff) -> GaveUp | None:
    """Call ``attempt`` until it returns, waiting out ``backoff``'s delays between failures
    (an :class:`~openenv_gym.errors.OpenEnvGymError`); ``None`` once it succeeded, else why
    it gave up (the budget ran out, or a refusal that will not pass)."""
    started = time.monotonic()
    attempts = 0
    delays = backoff.delays(start=started)
    while True:
        attempts += 1
        try:
            attempt()
            return None
        except OpenEnvGymError as exc:
            last = exc
        if isinstance(last, AuthenticationError | NotAnOpenEnvServerError):
            break
        delay = next(delays, None)
        if delay is None:
            break
        time.sleep(delay)
    return GaveUp(attempts, time.monotonic() - started, last)


__all__ = ["GaveUp", "keep_trying"]
