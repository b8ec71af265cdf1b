"""Whether a batch connection's result frames come compressed: chosen by measurement.

``compression="auto"`` offers compressed frames on every batch connection that does not get
shared memory (:func:`~openenv_gym.wire.compressed.batch_compression_offer`), whatever the peer's
address: a server reached through ``ssh -L``, ``kubectl port-forward`` or any local proxy is
on 127.0.0.1, yet its frames cross a real link. Whether a step's result is then packed is
asked in each ``batch_step`` (``"compress": true|false``), and the client's
:class:`CompressionPolicy` answers from what it measures on that connection: the cost per
step of each choice, seen as the time from building a request to having parsed its reply
(round trip, transfer at the link's throughput, the server's packing and the client's
unpacking, all in one figure). A single env's session runs the same policy, asking in a
top-level ``"compress"`` of each ``reset`` and ``step`` on the measured subprotocol
(:data:`~openenv_gym.wire.compressed.MEASURED_SUBPROTOCOL`; its steps are what it
measures). The server keeps its own part of the rule
(:class:`~openenv_gym.wire.compressed.FrameCompressor`): it sends a frame raw when it does
not shrink :data:`~openenv_gym.wire.compressed.MIN_RATIO` times, whatever was asked.

The rule, step by step:

0. **Warm up** (``warmup`` steps): a fresh session's steps get cheaper over their first
   few dozen (busy-polling and caches settle: on loopback, a single Pong env's cost per
   step fell from 620 to 380 µs over 25 steps whatever was asked), which would make
   whichever choice is probed first look worse; a single env's session skips
   :data:`WARMUP_STEPS`. A batch connection's first exchange is the vector env's ``reset``
   (Pong N=16: 1-4 s on a loaded machine), then two steps of 20 ms against 6 ms; it skips
   :data:`BATCH_WARMUP_STEPS`, no more: through a tunnel each step is 25 ms, and 32 of them
   moved the first raw probe (one 150 ms step) from a run's first half second into its
   timed window (``bench --link tunnel``, Pong N=16: 0.83x of forced zstd against 0.95x).
   These steps ask for packed frames and are not measured.
1. **Probe both**: the first :data:`PROBE_STEPS` steps packed, the next ones raw; the choice
   is the one whose median cost per step is lower.
2. **Cut a probe short** when it is clearly worse: once :data:`EARLY_STEPS` steps of a probe
   all cost more than :data:`EARLY_FACTOR` times the other choice's median, the probe ends
   there; one step that costs more than :data:`CLEAR_FACTOR` times it is enough (through a
   tunnel a raw Pong N=16 step costs 5x a packed one). One step at 1.5x is not: on a loaded
   machine one step in a few is (Pong N=16 on one host, load 4: single steps of 9.5 and
   47 ms against medians of 5.7 and 15 ms), and each cut probe doubles the stay on a
   choice that may be the wrong one.
3. **A near first call is checked soon**: a first choice that won by less than
   :data:`EARLY_FACTOR` stays :data:`REVISE_STEPS` steps only. Its probes ran on the
   connection's first steps, which are still cold: in the bench, Pong N=16 on one host
   without shared memory, packed steps cost 3.0 or 5.8 ms by turns for the first dozen
   steps, then 3.1 ms, against 3.4 ms raw; the first probe chose raw (4.26 against
   3.48 ms) and the budget below kept it there for 181 and 334 steps (0.6-1 s of a 3.5 s
   run) before a probe measured packed 3.24 against 6.89 ms and switched.
4. **Stay, then check again**: after ``interval`` steps on the choice, the other one is
   probed again. If it is cheaper by more than :data:`MARGIN` it becomes the choice and
   ``interval`` starts over; if not, ``interval`` doubles. Either way ``interval`` is at
   least what keeps the time probes cost beyond the choice under :data:`PROBE_BUDGET` (as
   the last probe measured it) and between :data:`REVISE_STEPS` and :data:`MAX_REVISE_STEPS`:
   a settled choice spends about 1% of its time probing, and a link that changes (a tunnel
   that gets congested, a server that moves) is noticed within :data:`MAX_REVISE_STEPS`
   steps.

Through a 20 ms / 100 Mbit/s tunnel packing wins at once; on one host without shared memory
both cost about the same and the rule keeps whichever measures lower. Tested on its
decisions by feeding it measurements (``tests/wire/test_compression_policy.py``).

Example:
    >>> policy = CompressionPolicy()
    >>> for _ in range(PROBE_STEPS + 1):  # a tunnel: raw 100 ms a step, packed 20 ms
    ...     asked = policy.choice()
    ...     policy.record(asked, 0.100 if not asked else 0.020)
    >>> policy.choice(), policy.compress
    (True, True)
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from typing import Final

#: Steps a single env's session runs before its first probe (not measured; see rule 0).
WARMUP_STEPS: Final = 32
#: Steps a batch connection runs before its first probe: the reset and two cold steps.
BATCH_WARMUP_STEPS: Final = 4
#: Steps each choice is measured for in a probe.
PROBE_STEPS: Final = 8
#: Steps after which a probe that is clearly worse ends (two: one step over
#: :data:`EARLY_FACTOR` is a loaded machine's noise as often as not, and a wrong cut costs a
#: doubled stay on the wrong choice; a slow probe costs every one of its steps).
EARLY_STEPS: Final = 2
#: "Clearly worse": every step of the probe so far costs more than this times the other's median.
EARLY_FACTOR: Final = 1.5
#: "Far worse": one step over this times the other's median ends the probe at once (a tunnel's
#: raw frames cost 5x; noise on one host reached 3x in one step of about 200).
CLEAR_FACTOR: Final = 4.0
#: The fewest steps on a choice before the other one is probed again.
REVISE_STEPS: Final = 64
#: The longest stay on a choice without probing the other one.
MAX_REVISE_STEPS: Final = 4096
#: The share of the time a settled choice may spend probing the other one.
PROBE_BUDGET: Final = 0.01
#: How much cheaper (a fraction of the cost per step) the other choice must measure to win.
MARGIN: Final = 0.03
#: Recent costs of the current choice kept to compare with a probe.
WINDOW: Final = 32


class CompressionPolicy:
    """Decides per step whether to ask for a packed result frame (module docstring).

    Args:
        warmup: Steps recorded before the first probe that are not measured (rule 0).

    Attributes:
        compress: The current choice (``None`` until both have been measured).
        switches: How many times the choice changed after the first decision.
        probes: How many steps ran on the choice that was not the current one.
    """

    def __init__(self, warmup: int = 0) -> None:
        self._warmup = warmup
        self.compress: bool | None = None
        self.switches = 0
        self.probes = 0
        self._costs: dict[bool, deque[float]] = {
            False: deque(maxlen=WINDOW),
            True: deque(maxlen=WINDOW),
        }
        self._probing: bool | None = True  # the choice being probed (None: staying)
        self._left = PROBE_STEPS  # steps left in the probe or the stay
        self._interval = REVISE_STEPS

    def choice(self) -> bool:
        """Whether the next request asks for a packed result frame."""
        if self._probing is not None:
            return self._probing
        assert self.compress is not None  # decided before the first stay
        return self.compress

    def record(self, compressed: bool, seconds: float) -> None:
        """One step's cost: ``seconds`` from building the request (that asked ``compressed``)
        to having parsed its reply."""
        if self._warmup > 0:
            self._warmup -= 1
            return
        costs = self._costs[compressed]
        probing = self._probing
        if probing is not None and compressed == probing:
            costs.append(seconds)
            if self.compress is not None and compressed != self.compress:
                self.probes += 1
            self._left -= 1
            if self._left <= 0 or self._clearly_worse(compressed):
                self._end_probe()
            return
        if probing is None and compressed == self.compress:
            costs.append(seconds)
            self._left -= 1
            if self._left <= 0:
                self._start_probe(not compressed)

    def cost(self, compressed: bool) -> float | None:
        """The median measured cost per step of a choice (``None``: not measured yet)."""
        costs = self._costs[compressed]
        return statistics.median(costs) if costs else None

    def _clearly_worse(self, probed: bool) -> bool:
        costs = self._costs[probed]
        other = self.cost(not probed)
        if other is None or not costs:
            return False
        cheapest = min(costs)  # every step of the probe so far costs more than this
        return cheapest > CLEAR_FACTOR * other or (
            len(costs) >= EARLY_STEPS and cheapest > EARLY_FACTOR * other
        )

    def _start_probe(self, compressed: bool) -> None:
        self._costs[compressed].clear()
        self._probing = compressed
        self._left = PROBE_STEPS

    def _end_probe(self) -> None:
        probed = self._probing
        assert probed is not None
        other = self.cost(not probed)
        if other is None:  # the first probe: measure the other choice too
            self._start_probe(not probed)
            return
        mine = self.cost(probed)
        assert mine is not None
        winner, loser = min(mine, other), max(mine, other)
        first = self.compress is None
        if first:
            self.compress = probed if mine < other else not probed
        elif mine < other * (1 - MARGIN):
            self.compress = probed
            self.switches += 1
            self._interval = REVISE_STEPS
        else:
            self._interval = 2 * self._interval
        if first and loser < EARLY_FACTOR * winner:
            # A near call on a fresh connection's steps: checked again after REVISE_STEPS.
            self._interval = REVISE_STEPS
        else:
            # Keep what the next probe costs beyond the choice (as this one measured) within
            # the budget: a far worse choice is probed rarely, a near tie often.
            extra = len(self._costs[probed]) * (loser - winner)
            budget = math.ceil(extra / (PROBE_BUDGET * max(winner, 1e-9)))
            self._interval = min(max(self._interval, budget, REVISE_STEPS), MAX_REVISE_STEPS)
        self._probing = None
        self._left = self._interval


__all__ = [
    "BATCH_WARMUP_STEPS",
    "CLEAR_FACTOR",
    "EARLY_FACTOR",
    "EARLY_STEPS",
    "MARGIN",
    "MAX_REVISE_STEPS",
    "PROBE_BUDGET",
    "PROBE_STEPS",
    "REVISE_STEPS",
    "WARMUP_STEPS",
    "WINDOW",
    "CompressionPolicy",
]
