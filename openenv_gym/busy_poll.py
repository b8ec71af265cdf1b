"""Busy-polling: wait for the peer's next frame awake instead of asleep, on both ends.

On virtual machines waking a sleeping process on another vCPU is expensive: a loopback
write that wakes its reader costs the writer tens of µs (an inter-processor interrupt the
hypervisor must deliver to a halted vCPU), and the woken side pays as much again before it
runs. In a tight stepping loop the two ends answer each other within tens or hundreds of
µs, so each spins that long on its sockets (``poll`` with a zero timeout) and is awake when
the frame lands: neither side pays for a wake-up. Both ends use it by default:

* the server after each event-loop turn's replies, waiting for the next request
  (``--busy-poll-us``; :mod:`openenv_gym.server.turn_end`);
* the client after each request, waiting for the reply (``busy_poll=`` of the envs).

One rule, :class:`SpinRule`, decides on both ends whether a wait spins, from three
measurements (docs/vector.md has the figures behind it):

* **the cores' load**: a spin pays only while a core is free for it. Every
  :data:`LOAD_SAMPLE_EVERY` seconds (at most; only while waits come) the rule reads how many
  tasks are runnable right now (``/proc/loadavg``'s fourth field, one read of about 10 µs)
  and keeps a moving average of the tasks runnable beside the reader. While it reaches the
  cores plus :data:`SPARE_MARGIN` (four CPU-bound processes on two cores, other
  experiments, data loaders), no wait spins: each one sleeps in ``select`` at once, as
  with ``busy_poll=0``, and no spin has to be preempted first to find it out. Where the
  count cannot be read (not Linux), the preemption below is the only signal;
* **the gaps**: each wait's gap until the frame came, measured by the spin when it spins
  and by the sleeping path when it does not (less :data:`WAKE_UP_COST`: a slept gap
  includes the wake-up a spin saves). A gap under :data:`READY_GAP` (the frame was
  already there) is neither gain nor cost; a gap within the budget is a wake-up saved,
  worth :data:`WAKE_UP_COST`; a longer one is a spin that found nothing and burnt the whole
  budget. The rule spins while a moving average of these scores is positive: at least
  ``budget / WAKE_UP_COST`` saved wake-ups must come for each wasted budget (a learner busy
  with a gradient update, a slow environment, a link of milliseconds stop it);
* **the preemption** (the signal where the count cannot be read, or where a CPU quota
  throttles the process without more tasks being runnable): a spin yields the core at each
  turn (``sched_yield``), so it never
  keeps a runnable process off its core; but when the cores are oversubscribed (more
  runnable processes than cores: other experiments, data loaders, a learner's threads)
  every yield hands the core to another process for a whole time slice, and the frame
  waits for the spinner to be scheduled again. A spin that had the CPU for less than
  :data:`MIN_CPU_SHARE` of its wall time (``time.thread_time`` against the clock) was
  preempted: the rule stops spinning, the waits sleep in ``select``, and one spin probes
  again after :data:`FIRST_QUIET` seconds, doubled after each preempted probe up to
  :data:`MAX_QUIET`; a probe that keeps the CPU brings spinning back. So busy-polling on
  a loaded machine costs one probe every few seconds, and an idle machine gets it back
  within :data:`MAX_QUIET` seconds.

The spin is also bounded (at most ``budget`` seconds per wait, then the caller sleeps as
before), and the client's is **hybrid**: like the Linux block layer's hybrid polling, it
first sleeps through part of the usual wait (:data:`NAP_SHARE` of a moving average of the
waits its spins ended within the budget, less the timer's overshoot), then spins until
``budget`` is spent. A reply that takes 250 µs costs the client one short sleep and about
100 µs of spinning instead of 250 µs of spinning, and still finds it awake. (The server
does not nap: a nap cannot end early, and a request that lands during one waits for it;
measured, it cost a third of the steps/s.)

Example:
    >>> rule = SpinRule(budget=500e-6)
    >>> rule.spin_pays(now=0.0)
    True
    >>> rule.note_spin(wall=400e-6, cpu=40e-6, now=0.0)  # preempted: 10% of the CPU
    >>> rule.spin_pays(now=0.0)  # once may be a kernel thread's moment
    True
    >>> rule.note_spin(wall=400e-6, cpu=40e-6, now=0.0)  # twice in a row: the cores are busy
    >>> rule.spin_pays(now=0.1), rule.spin_pays(now=0.3)  # quiet, then one probe
    (False, True)
    >>> crowded = SpinRule(budget=500e-6, cores=2)
    >>> crowded.note_runnable(6, now=0.0)  # 4 CPU-bound processes, the client, the server
    >>> crowded.oversubscribed, crowded.spin_pays(now=0.0)
    (True, False)
    >>> poller = BusyPoller(budget=50e-6)
    >>> poller.spin()   # no sockets registered: returns at once
    False
"""

from __future__ import annotations

import logging
import math
import os
import select
import time
from collections.abc import Callable
from typing import Any, Final

from openenv_gym.errors import EnvConfigError

#: The server's spin after a reply, in seconds (``--busy-poll-us``): long enough for a
#: client to decode eight Atari screens (300 µs missed it: Pong N=8 ran 9% slower).
DEFAULT_BUSY_POLL: Final = 500e-6
#: The client's spin after a request, in seconds (``busy_poll=`` of the envs).
DEFAULT_CLIENT_BUSY_POLL: Final = 300e-6
#: Gaps shorter than this (seconds) found the frame already there: no wake-up to save.
READY_GAP: Final = 20e-6
#: What a saved wake-up is worth, in seconds of round-trip time (a VM's inter-processor
#: interrupt to wake the sleeping side, and its way back to running: tens of µs each).
WAKE_UP_COST: Final = 50e-6
#: Weight of a new gap in the moving average of :class:`SpinRule`.
SCORE_SMOOTHING: Final = 1 / 64
#: A spin that had the CPU for less than this share of its wall time was preempted.
MIN_CPU_SHARE: Final = 0.5
#: Spins shorter than this (seconds) are not judged for preemption (too short to tell).
MIN_JUDGED_SPIN: Final = 20e-6
#: Preempted spins in a row (no spin that kept the CPU between them) before the rule goes
#: quiet. On an idle 2-core machine about one spin in 2,500 loses the core for a moment (a
#: kernel thread, the other side's wake-up); quiet after each such spin, a single CartPole
#: env spun half the time and fell from 18k to 10k steps/s. Beside CPU-bound processes every
#: spin is preempted, so the second one in a row stops it all the same.
PREEMPTED_IN_A_ROW: Final = 2
#: Seconds without spinning after a first preempted spin; doubled after each preempted probe.
FIRST_QUIET: Final = 0.25
#: The longest quiet between two probes, in seconds.
MAX_QUIET: Final = 4.0
#: The longest spin ``busy_poll=`` accepts, in seconds (as ``--busy-poll-us``'s 100000).
MAX_BUSY_POLL: Final = 0.1
#: What a sleep overshoots by (Linux's default 50 µs timer slack, and the wake-up), seconds:
#: a hybrid spin sleeps this much less than its share of the usual wait.
NAP_OVERSHOOT: Final = 75e-6
#: The share of the usual wait a hybrid spin sleeps through (less the overshoot): 0.75
#: cut a client's CPU per CartPole step by a third at N=16 for 4% fewer steps/s; 0.9 lost
#: a fifth of the steps/s at N=8 (2-core VM, ``openenv-gym bench``).
NAP_SHARE: Final = 0.75
#: Shorter naps are not taken (a sleep itself costs about 20 µs of CPU on a VM).
MIN_NAP: Final = 30e-6
#: Weight of a new wait in the moving average of a hybrid spin.
WAIT_SMOOTHING: Final = 0.1
#: The longest time (seconds) between two reads of the runnable tasks by :class:`SpinRule`.
LOAD_SAMPLE_EVERY: Final = 0.05
#: Weight of a new read in the moving average of the tasks runnable beside the reader.
RUNNABLE_SMOOTHING: Final = 0.25
#: No spin while that average reaches the cores plus this: the cores are oversubscribed
#: (a vector env's client beside its two busy server processes on two cores is not).
SPARE_MARGIN: Final = 0.5
#: Where Linux says how many tasks are runnable right now (the fourth field, ``3/164``).
LOADAVG_PATH: Final = "/proc/loadavg"

_yield = getattr(os, "sched_yield", lambda: None)  # not on Windows: spin without yielding

logger = logging.getLogger(__name__)


def runnable_tasks(path: str = LOADAVG_PATH) -> int | None:
    """How many tasks are runnable on the machine right now, the caller included (the
    numerator of ``/proc/loadavg``'s fourth field); ``None`` where it cannot be read.

    Example:
        >>> count = runnable_tasks()
        >>> count is None or count >= 1
        True
        >>> runnable_tasks("/nonexistent/loadavg") is None
        True
    """
    try:
        with open(path, "rb") as file:
            return int(file.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return None


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity; all of them where that cannot
    be read).

    Example:
        >>> usable_cores() >= 1
        True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def check_busy_poll(busy_poll: Any) -> float:
    """``busy_poll`` (seconds) as a float, if it is a number in ``0..MAX_BUSY_POLL``.

    Raises:
        EnvConfigError: It is not.

    Example:
        >>> check_busy_poll(0)
        0.0
    """
    valid = isinstance(busy_poll, int | float) and not isinstance(busy_poll, bool)
    if not valid or not math.isfinite(busy_poll) or not 0 <= busy_poll <= MAX_BUSY_POLL:
        raise EnvConfigError(
            f"expected busy_poll in seconds, 0..{MAX_BUSY_POLL:g} (e.g. busy_poll=300e-6; "
            f"busy_poll=0 sleeps at once), got {busy_poll!r}"
        )
    return float(busy_poll)


class SpinRule:
    """Whether a wait spins, from the cores' load, the measured gaps and whether spins are
    preempted (see the module docstring). Fed measurements, it decides; it reads no clock
    and no file itself.

    Args:
        budget: The spin's budget in seconds (the longest spin per wait).
        cores: The machine's cores (default: ``os.cpu_count()``).
    """

    def __init__(self, budget: float, cores: int | None = None) -> None:
        self.budget = budget
        self.cores = cores if cores is not None else os.cpu_count() or 1
        #: Moving average of the tasks runnable beside the reader (``None``: not read yet).
        self.others: float | None = None
        #: When the runnable tasks are read next (``time.perf_counter`` seconds).
        self.next_load_at = 0.0
        #: Moving average of the gaps' scores, in seconds (positive: spinning pays).
        self.score = WAKE_UP_COST
        #: Waits measured, spins judged and found preempted (for tests and the log).
        self.gaps = 0
        self.spins = 0
        self.preemptions = 0
        #: Judged spins preempted since the last one that kept the CPU.
        self.preempted_in_a_row = 0
        #: Whether the last gap was one a spin would have saved (a wake-up within budget).
        self.last_saved = False
        #: No spin before this time (``time.perf_counter`` seconds): a spin was preempted.
        self.quiet_until = 0.0
        #: The quiet after the next preempted spin.
        self.quiet_for = FIRST_QUIET

    @property
    def gaps_pay(self) -> bool:
        """Whether the gaps say spinning pays (preemption aside)."""
        return self.score > 0

    @property
    def oversubscribed(self) -> bool:
        """Whether the tasks runnable beside the reader fill the cores (no spin then)."""
        others = self.others
        return others is not None and others >= self.cores + SPARE_MARGIN

    def spin_pays(self, now: float) -> bool:
        """Whether a wait starting at ``now`` should spin."""
        return self.score > 0 and now >= self.quiet_until and not self.oversubscribed

    def load_due(self, now: float) -> bool:
        """Whether the runnable tasks should be read and given to :meth:`note_runnable`."""
        return now >= self.next_load_at

    def note_runnable(self, runnable: int | None, now: float) -> None:
        """Take one read of the tasks runnable at ``now``, the reader included
        (``None``: the count cannot be read here; it is not read again)."""
        if runnable is None:
            self.next_load_at = math.inf
            return
        self.next_load_at = now + LOAD_SAMPLE_EVERY
        others = max(runnable - 1, 0)
        was = self.oversubscribed
        average = self.others
        self.others = (
            others if average is None else average + RUNNABLE_SMOOTHING * (others - average)
        )
        if was != self.oversubscribed:
            self._log("%.1f tasks runnable beside this one on %d cores", self.others, self.cores)

    def note_gap(self, gap: float, *, asleep: bool = False) -> None:
        """Score one wait whose frame came ``gap`` seconds after it started (a gap of at
        least the budget: a spin would have found nothing).

        ``asleep``: the wait did not spin, so a ``gap`` over ``READY_GAP + WAKE_UP_COST``
        includes the wake-up a spin saves; it is scored as ``gap - WAKE_UP_COST``.
        Scored as measured, a reply that comes 240-340 µs after the request (a single
        Pong env: ALE's step, 197 µs of CPU at the median and 296 at p95, and the server's
        40 µs around it) is 290-390 µs asleep, mostly over the client's 300 µs budget: once
        spinning stopped (a slow moment, a burst of load) the slept waits kept it stopped,
        and every step paid the wake-up.
        """
        if asleep and gap > READY_GAP + WAKE_UP_COST:
            gap -= WAKE_UP_COST
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
            self._log("the gaps to the next frame score %+.1f us per wait", 1e6 * self.score)

    def note_spin(self, wall: float, cpu: float, now: float) -> None:
        """Judge one spin that lasted ``wall`` seconds and had ``cpu`` seconds of CPU,
        ending at ``now``: preempted :data:`PREEMPTED_IN_A_ROW` times in a row, the rule goes
        quiet; kept, a probe brings it back."""
        if wall < MIN_JUDGED_SPIN:
            return
        self.spins += 1
        if cpu < MIN_CPU_SHARE * wall:
            self.preemptions += 1
            self.preempted_in_a_row += 1
            if self.preempted_in_a_row < PREEMPTED_IN_A_ROW:
                return
            self.quiet_until = now + self.quiet_for
            self._log(
                "preempted (%.0f%% of the CPU), quiet for %.2f s", 100 * cpu / wall, self.quiet_for
            )
            self.quiet_for = min(2 * self.quiet_for, MAX_QUIET)
            return
        self.preempted_in_a_row = 0
        if self.quiet_for != FIRST_QUIET:
            self.quiet_for = FIRST_QUIET
            self._log("a probe kept the CPU (%.0f%%): spinning again", 100 * cpu / wall)

    def _log(self, what: str, *args: float) -> None:
        logger.debug(
            "busy-polling: " + what + " (after %d waits, %d spins judged)",
            *args,
            self.gaps,
            self.spins,
        )


class BusyPoller:
    """Spins on a set of file descriptors for a bounded time; see the module docstring.

    Call :meth:`spin` when a wait starts (after a reply, or after a request) and
    :meth:`arrived` when the frame came, so the wait is measured when the spin did not.
    :attr:`rule` decides whether a wait spins.

    Args:
        budget: The longest spin per wait, in seconds; ``0`` disables spinning.
        hybrid: Sleep through part of the usual wait before spinning (see the module
            docstring).
        runnable: Reads the tasks runnable right now (default: :func:`runnable_tasks`).

    Raises:
        ValueError: ``budget`` is negative.
    """

    def __init__(
        self,
        budget: float = DEFAULT_BUSY_POLL,
        *,
        hybrid: bool = False,
        runnable: Callable[[], int | None] = runnable_tasks,
    ) -> None:
        if budget < 0:
            raise ValueError(f"expected a busy-poll budget >= 0 seconds, got {budget}")
        self.budget = budget
        self.hybrid = hybrid
        #: Moving average of the waits a hybrid spin has seen, in seconds.
        self.usual_wait: float | None = None
        #: Decides whether a wait spins.
        self.rule = SpinRule(budget)
        self._runnable = runnable
        self._poll = select.poll()
        self._fds: set[int] = set()
        self._started_at = time.perf_counter()
        self._unmeasured = False  # the last wait did not spin: arrived() measures it

    def register(self, fd: int) -> None:
        """Watch ``fd`` (a connection's socket) for readability."""
        if fd >= 0 and fd not in self._fds:
            self._fds.add(fd)
            self._poll.register(fd, select.POLLIN)

    def unregister(self, fd: int) -> None:
        """Stop watching ``fd``. Unknown descriptors are ignored."""
        if fd in self._fds:
            self._fds.discard(fd)
            self._poll.unregister(fd)

    @property
    def spinning(self) -> bool:
        """Whether the next :meth:`spin` spins (it is armed and has something to watch)."""
        return self._spins_at(time.perf_counter())

    def _spins_at(self, now: float) -> bool:
        if self.budget <= 0 or not self._fds:
            return False
        rule = self.rule
        if rule.load_due(now):
            rule.note_runnable(self._runnable(), now)
        return rule.spin_pays(now)

    def _nap(self) -> float:
        """How long a hybrid spin sleeps first (``0``: it spins at once)."""
        usual = self.usual_wait
        if not self.hybrid or usual is None:
            return 0.0
        nap = usual * NAP_SHARE - NAP_OVERSHOOT
        return nap if nap >= MIN_NAP else 0.0

    def note_wait(self, waited: float) -> None:
        """Take the wait of a hybrid spin that found its frame ``waited`` seconds after it
        started into the usual wait. A wait longer than the budget (a preempted spin) is
        left out: it would make the next naps outlast the budget, unjudged (tens of ms
        asleep per step under contention)."""
        if waited > self.budget:
            return
        usual = self.usual_wait
        self.usual_wait = waited if usual is None else usual + WAIT_SMOOTHING * (waited - usual)

    def arrived(self) -> None:
        """Note that the frame of the wait came: measured when the wait did not spin."""
        if self._unmeasured:
            self._unmeasured = False
            self.rule.note_gap(time.perf_counter() - self._started_at, asleep=True)

    def spin(self) -> bool:
        """Poll the registered descriptors until one is readable or the budget is spent
        (a hybrid spin naps through the first part of it), if :attr:`rule` says it pays.

        Returns whether one became readable (the caller reads it without sleeping).
        """
        now = time.perf_counter()
        self._started_at = now
        if not self._spins_at(now):
            self._unmeasured = self.budget > 0
            return False
        self._unmeasured = False
        nap = self._nap()
        if nap:
            time.sleep(nap)
        deadline = now + self.budget  # the nap counts: a spin never outlasts the budget
        poll = self._poll.poll
        clock = time.perf_counter
        spun_at, cpu_at = clock(), time.thread_time()
        while True:
            found = bool(poll(0))
            end = clock()
            if found or end >= deadline:
                break
            _yield()
        rule = self.rule
        rule.note_spin(end - spun_at, time.thread_time() - cpu_at, end)
        if found:
            if self.hybrid:
                self.note_wait(end - now)
            rule.note_gap(end - now)
        else:
            rule.note_gap(self.budget + READY_GAP)
        return found


__all__ = [
    "DEFAULT_BUSY_POLL",
    "DEFAULT_CLIENT_BUSY_POLL",
    "FIRST_QUIET",
    "LOADAVG_PATH",
    "LOAD_SAMPLE_EVERY",
    "MAX_BUSY_POLL",
    "MAX_QUIET",
    "MIN_CPU_SHARE",
    "MIN_JUDGED_SPIN",
    "MIN_NAP",
    "NAP_OVERSHOOT",
    "NAP_SHARE",
    "PREEMPTED_IN_A_ROW",
    "READY_GAP",
    "RUNNABLE_SMOOTHING",
    "SCORE_SMOOTHING",
    "SPARE_MARGIN",
    "WAIT_SMOOTHING",
    "WAKE_UP_COST",
    "BusyPoller",
    "SpinRule",
    "check_busy_poll",
    "runnable_tasks",
    "usable_cores",
]
