"""The end of an event-loop turn: flush the replies computed in it, then busy-poll if it pays.

A server process answers each request inside its read callback. It used to spin for the next
request (:mod:`openenv_gym.busy_poll`) at the end of every read callback, polling every
connection's socket: with hundreds of plain sessions from one client that is one poll of
hundreds of descriptors per message, most finding a request that the loop would have read
anyway (300 sessions ran at 0.53x of ``--busy-poll-us 0``). :class:`TurnEnd` runs once per
turn instead, after every read callback of it: it flushes the connections that deferred
their replies (a spin must never hold a reply back), then decides whether to spin, once.

Whether to spin is measured, not fixed. Each turn end that replied is followed by a gap until
the next request arrives, measured by the spin when it spins and by the next read callback
when it does not. :class:`SpinPolicy` scores the gaps:

* a request already there (a gap under :data:`READY_GAP`: other connections were ready, a
  busy loop) is neither gain nor cost: the loop would not have slept;
* a gap within the spin's budget is a wake-up saved: worth :data:`WAKE_UP_COST` seconds of
  round-trip time;
* a longer gap is a spin that would find nothing: it burns the whole budget of a core that
  the client, the environments or other processes may need.

The process spins while a moving average of these scores is positive, so at least
``budget / WAKE_UP_COST`` saved wake-ups (10 at the default 500 µs) must come for each
wasted budget. A few sessions stepped in a tight loop spin (every gap is short); hundreds of
plain sessions from one client, whose next step comes milliseconds after the last reply of
the previous one, stop spinning, and start again if the gaps shorten.

While spinning does not pay and the last gap measured was not one a spin would have saved,
only one turn end in :data:`OFF_SAMPLE_EVERY` is measured: measuring every turn (a scheduled
callback and two clock reads) cost about 6 µs of the server's ~115 µs per plain CartPole
step at 64-300 sessions, which an idle run showed as 0.94-0.97x of ``--busy-poll-us 0``.
Once a measured gap is one a spin would have saved, every turn end is measured again, so a
client that speeds up gets spinning back as fast as before.

Example:
    >>> policy = SpinPolicy(budget=500e-6)
    >>> policy.spin_pays
    True
    >>> for _ in range(200):
    ...     policy.note_gap(5e-3)  # the next request comes 5 ms later: spinning would waste
    >>> policy.spin_pays
    False
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Final, Protocol

from openenv_gym.busy_poll import BusyPoller

logger = logging.getLogger("openenv_gym.server")

#: Gaps shorter than this (seconds) found the next request already there: no wake-up to save.
READY_GAP: Final = 20e-6
#: What a saved wake-up is worth, in seconds of round-trip time (a VM's inter-processor
#: interrupt to wake the sleeping side, and its way back to running: tens of µs each).
WAKE_UP_COST: Final = 50e-6
#: Weight of a new gap in the moving average of :class:`SpinPolicy`.
SCORE_SMOOTHING: Final = 1 / 64
#: While spinning does not pay (and the last gap was no saved wake-up), one turn end in this
#: many is measured (the others cost nothing: no callback is scheduled for them).
OFF_SAMPLE_EVERY: Final = 8


class Deferring(Protocol):
    """A connection with replies waiting for the end of the turn."""

    def flush_deferred(self) -> None:
        """Write the replies it deferred."""


class SpinPolicy:
    """Whether spinning after replies pays, from the gaps to the next request (see the
    module docstring).

    Args:
        budget: The spin's budget in seconds (the longest spin per turn end).
    """

    def __init__(self, budget: float) -> None:
        self.budget = budget
        #: Moving average of the gaps' scores, in seconds (positive: spinning pays).
        self.score = WAKE_UP_COST
        #: Turn ends seen and spun, for tests and the log.
        self.gaps = 0
        self.spins = 0
        #: Whether the last gap was one a spin would have saved (a wake-up within budget).
        self.last_saved = False

    @property
    def spin_pays(self) -> bool:
        """Whether the next turn end should spin."""
        return self.score > 0

    def note_gap(self, gap: float) -> None:
        """Score one turn end whose next request came ``gap`` seconds later (a gap of at
        least the budget: a spin would have found nothing)."""
        self.gaps += 1
        self.last_saved = False
        if gap < READY_GAP:
            value = 0.0
        elif gap <= self.budget:
            value = WAKE_UP_COST
            self.last_saved = True
        else:
            value = -self.budget
        pays = self.score > 0
        self.score += SCORE_SMOOTHING * (value - self.score)
        if pays != (self.score > 0):
            logger.debug(
                "busy-polling %s: the gaps to the next request score %+.1f us per turn "
                "(after %d turn ends, %d spun)",
                "on" if self.score > 0 else "off",
                self.score * 1e6,
                self.gaps,
                self.spins,
            )


class TurnEnd:
    """Runs once at the end of each event-loop turn that replied (see the module docstring).

    Args:
        poller: Spins on the connections' sockets; ``None``: never spin.
    """

    def __init__(self, poller: BusyPoller | None) -> None:
        self.poller = poller
        self.policy = SpinPolicy(poller.budget) if poller is not None else None
        self._deferred: list[Deferring] = []
        self._scheduled = False
        self._replied = False
        self._idle_since: float | None = None
        self._unmeasured = 0  # turn ends left out since the last measured one (not spinning)
        #: Turn ends that followed replies and were measured (each one spin at most).
        self.turns = 0

    def defer(self, connection: Deferring) -> None:
        """Have ``connection.flush_deferred()`` called at the end of this turn."""
        self._deferred.append(connection)
        self._schedule()

    def replied(self) -> None:
        """A request was answered in this turn: at its end, spin if it pays (while it does
        not, and the last gap was not a wake-up a spin would have saved, one turn end in
        :data:`OFF_SAMPLE_EVERY` is measured)."""
        policy = self.policy
        if policy is None:
            return
        if not policy.spin_pays and not policy.last_saved:
            self._unmeasured += 1
            if self._unmeasured < OFF_SAMPLE_EVERY:
                return
            self._unmeasured = 0
        self._replied = True
        self._schedule()

    def heard(self) -> None:
        """A request arrived (a read callback): score the gap since the last turn end that
        did not spin."""
        since = self._idle_since
        if since is not None:
            self._idle_since = None
            assert self.policy is not None  # set with _idle_since
            self.policy.note_gap(time.perf_counter() - since)

    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            # Runs after the read callbacks of this turn (asyncio and uvloop run what is
            # scheduled during a turn in the next one, before polling for I/O again).
            asyncio.get_running_loop().call_soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        deferred, self._deferred = self._deferred, []
        for connection in deferred:
            connection.flush_deferred()
        if not self._replied:
            return
        self._replied = False
        self.turns += 1
        poller, policy = self.poller, self.policy
        if poller is None or policy is None:  # _replied is only set with them
            return
        started = time.perf_counter()
        if policy.spin_pays:
            spinning = poller.spinning
            found = poller.spin()  # paused by its own misses: returns at once, noting the start
            if spinning:
                policy.spins += 1
                gap = time.perf_counter() - started if found else policy.budget + READY_GAP
                policy.note_gap(gap)
                return
        self._idle_since = started


__all__ = [
    "OFF_SAMPLE_EVERY",
    "READY_GAP",
    "SCORE_SMOOTHING",
    "WAKE_UP_COST",
    "SpinPolicy",
    "TurnEnd",
]
