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

import copy
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
    """A budget shared by the worker processes forked from the process that made it.

    Each worker counts its sessions in its own slot (:meth:`for_worker`); the limit bounds
    the sum. When a worker dies, the parent :meth:`clear` s its slot, so the sessions it held
    do not keep their slots forever.

    Example:
        >>> budget = SharedSessionBudget(2, slots=2)
        >>> first, second = budget.for_worker(0), budget.for_worker(1)
        >>> first.try_acquire(), second.try_acquire(), second.try_acquire(), budget.active
        (True, True, False, 2)
        >>> budget.clear(0); budget.active
        1
    """

    def __init__(self, limit: int, context: BaseContext | None = None, *, slots: int = 1) -> None:
        self.limit = limit
        ctx: Any = context or multiprocessing.get_context("fork")
        self._counts = ctx.Array("i", slots)
        self._slot = 0

    def for_worker(self, slot: int) -> SharedSessionBudget:
        """The same budget, counting this process's sessions in ``slot``."""
        view = copy.copy(self)
        view._slot = slot
        return view

    def try_acquire(self) -> bool:
        with self._counts.get_lock():
            if sum(self._counts) >= self.limit:
                return False
            self._counts[self._slot] += 1
            return True

    def release(self) -> None:
        with self._counts.get_lock():
            self._counts[self._slot] = max(0, self._counts[self._slot] - 1)

    def sessions_of(self, slot: int) -> int:
        """The sessions counted in ``slot``."""
        return int(self._counts[slot])

    def clear(self, slot: int) -> None:
        """Forget the sessions counted in ``slot`` (its worker died)."""
        with self._counts.get_lock():
            self._counts[slot] = 0

    @property
    def active(self) -> int:
        return int(sum(self._counts))


__all__ = ["LocalSessionBudget", "SessionBudget", "SharedSessionBudget"]
