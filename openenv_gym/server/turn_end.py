"""The end of an event-loop turn: flush the replies computed in it, then busy-poll if it pays.

A server process answers each request inside its read callback. It used to spin for the next
request (:mod:`openenv_gym.busy_poll`) at the end of every read callback, polling every
connection's socket: with hundreds of plain sessions from one client that is one poll of
hundreds of descriptors per message, most finding a request that the loop would have read
anyway (300 sessions ran at 0.53x of ``--busy-poll-us 0``). :class:`TurnEnd` runs once per
turn instead, after every read callback of it: it flushes the connections that deferred
their replies (a spin must never hold a reply back), then decides whether to spin, once.

Whether to spin is decided by the one rule of both ends, :class:`~openenv_gym.busy_poll.SpinRule`
(:mod:`openenv_gym.busy_poll`): each turn end that replied is followed by a gap until the
next request arrives, measured by the spin when it spins and by the next read callback when
it does not; the rule spins while the gaps say it pays, and stops while the cores are
oversubscribed (more runnable tasks than cores) or spins are preempted. A few sessions
stepped in a tight loop spin (every gap is short); hundreds of plain sessions from one
client, whose next step comes milliseconds after the last reply of the previous one, stop
spinning, and start again if the gaps shorten.

While the cores are oversubscribed, or the gaps say spinning does not pay and the last gap
measured was not one a spin would have saved, only one turn end in :data:`OFF_SAMPLE_EVERY`
is measured (the cores' load is read at most every 50 ms either way): measuring every turn
(a scheduled callback and two clock reads) cost about 6 µs of the server's ~115 µs per plain
CartPole step at 64-300 sessions, which an idle run showed as 0.94-0.97x of
``--busy-poll-us 0``. Once a measured gap is one a spin would have saved, every turn end is
measured again, so a client that speeds up gets spinning back as fast as before.

Example:
    >>> turn_end = TurnEnd(BusyPoller(budget=500e-6))
    >>> for _ in range(200):
    ...     turn_end.rule.note_gap(5e-3)  # the next request comes 5 ms later: spinning would waste
    >>> turn_end.rule.gaps_pay
    False
"""

from __future__ import annotations

import asyncio
from typing import Final, Protocol

from openenv_gym.busy_poll import BusyPoller, SpinRule

#: While spinning does not pay (and the last gap was no saved wake-up), one turn end in this
#: many is measured (the others cost nothing: no callback is scheduled for them).
OFF_SAMPLE_EVERY: Final = 8


class Deferring(Protocol):
    """A connection with replies waiting for the end of the turn."""

    def flush_deferred(self) -> None:
        """Write the replies it deferred."""


class TurnEnd:
    """Runs once at the end of each event-loop turn that replied (see the module docstring).

    Args:
        poller: Spins on the connections' sockets; ``None``: never spin.
    """

    def __init__(self, poller: BusyPoller | None) -> None:
        self.poller = poller
        #: The poller's spin rule (``None``: never spin).
        self.rule: SpinRule | None = poller.rule if poller is not None else None
        self._deferred: list[Deferring] = []
        self._scheduled = False
        self._replied = False
        self._unmeasured = 0  # turn ends left out since the last measured one (not spinning)
        #: Turn ends that followed replies and were measured (each one spin at most).
        self.turns = 0

    def defer(self, connection: Deferring) -> None:
        """Have ``connection.flush_deferred()`` called at the end of this turn."""
        self._deferred.append(connection)
        self._schedule()

    def replied(self) -> None:
        """A request was answered in this turn: at its end, spin if it pays (while the
        cores are oversubscribed, or it does not pay and the last gap was not a wake-up a
        spin would have saved, one turn end in :data:`OFF_SAMPLE_EVERY` is measured)."""
        rule = self.rule
        if rule is None:
            return
        if rule.oversubscribed or not (rule.gaps_pay or rule.last_saved):
            self._unmeasured += 1
            if self._unmeasured < OFF_SAMPLE_EVERY:
                return
            self._unmeasured = 0
        self._replied = True
        self._schedule()

    def heard(self) -> None:
        """A request arrived (a read callback): the poller measures the gap since the last
        turn end that did not spin."""
        if self.poller is not None:
            self.poller.arrived()

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
        if self.poller is not None:  # _replied is only set with it
            self.poller.spin()  # if the rule says it pays; measures the gap either way


__all__ = ["OFF_SAMPLE_EVERY", "TurnEnd"]
