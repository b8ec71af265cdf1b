"""Session budgets: how many sessions a server may hold, in one process or across workers.

A server with ``--workers K`` runs K processes on one port; a client's sessions land on any
of them. :class:`SharedSessionBudget` keeps one count in shared memory so ``--max-sessions``
bounds the whole server and ``GET /capacity`` tells the truth whichever worker answers.

Example:
    >>> budget = LocalSessionBudget(1)
    >>> budget.try_acquire(), budget.try_acquire(), budget.active
    (True, False, 1)
    >>> budget.release(); budget.active
    0
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.context import BaseContext
from typing import Any, Protocol


class SessionBudget(Protocol):
    """What a :class:`~openenv_gym.server.session.SessionManager` asks before a session."""

    limit: int

    def try_acquire(self) -> bool:
        """Take one slot; ``False`` when all are taken."""

    def release(self) -> None:
        """Give one slot back."""

    @property
    def active(self) -> int:
        """Slots taken now."""


class LocalSessionBudget:
    """A budget for one process."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._active = 0

    def try_acquire(self) -> bool:
        if self._active >= self.limit:
            return False
        self._active += 1
        return True

    def release(self) -> None:
        self._active = max(0, self._active - 1)

    @property
    def active(self) -> int:
        return self._active


class SharedSessionBudget:
    """A budget shared by the worker processes forked from the process that made it."""

    def __init__(self, limit: int, context: BaseContext | None = None) -> None:
        self.limit = limit
        ctx: Any = context or multiprocessing.get_context("fork")
        self._count = ctx.Value("i", 0)

    def try_acquire(self) -> bool:
        with self._count.get_lock():
            if self._count.value >= self.limit:
                return False
            self._count.value += 1
            return True

    def release(self) -> None:
        with self._count.get_lock():
            self._count.value = max(0, self._count.value - 1)

    @property
    def active(self) -> int:
        return int(self._count.value)


__all__ = ["LocalSessionBudget", "SessionBudget", "SharedSessionBudget"]
