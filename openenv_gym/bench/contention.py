"""CPU contention for the suite: K CPU-bound pure-Python processes beside every contender.

Training machines are rarely idle: a learner's own threads, a second experiment or data
loading compete for the cores. ``--contention K`` runs the whole suite beside K processes
that each spin a pure-Python loop (what those neighbours look like to the scheduler), so
that every row is measured in the situation a user meets (issue 33's first case).

Each process is bounded twice: it stops when its parent (the bench) is gone, checked every
few milliseconds of its loop, and after ``max_seconds`` in any case; :class:`CpuContention`
stops them all when the run ends (also on an error or Ctrl-C), and waits for them.

Example:
    >>> with CpuContention(1, max_seconds=30) as busy:
    ...     len(busy.pids), all(busy.alive())
    (1, True)
    >>> busy.alive()
    [False]
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Final

#: The loop each process runs: pure Python arithmetic until the parent is gone or time is up.
_LOOP: Final = """
import os, sys, time
parent, deadline = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
x = 0
while os.getppid() == parent and time.monotonic() < deadline:
    for i in range(20000):
        x = (x * 31 + i) % 1000003
"""
#: The longest a contention process lives without being stopped (a safety bound).
DEFAULT_MAX_SECONDS: Final = 6 * 3600.0


class CpuContention:
    """Starts ``count`` CPU-bound processes on entry, stops them on exit (``count=0``: none).

    Args:
        count: How many processes (K of ``--contention K``).
        max_seconds: Each one exits by itself after this long.

    Raises:
        ValueError: ``count`` is negative or ``max_seconds`` is not positive.
    """

    def __init__(self, count: int, max_seconds: float = DEFAULT_MAX_SECONDS) -> None:
        if count < 0:
            raise ValueError(f"expected a number of contention processes >= 0, got {count}")
        if not max_seconds > 0:
            raise ValueError(f"expected max_seconds > 0, got {max_seconds}")
        self.count = count
        self.max_seconds = max_seconds
        self._processes: list[subprocess.Popen[bytes]] = []

    @property
    def pids(self) -> list[int]:
        """The process ids of the running contention processes."""
        return [process.pid for process in self._processes]

    def alive(self) -> list[bool]:
        """Whether each process started is still running."""
        return [process.poll() is None for process in self._processes]

    def describe(self) -> str:
        """One line for the report header."""
        if not self.count:
            return "none (idle apart from other work on the machine)"
        return (
            f"{self.count} CPU-bound pure-Python processes ran beside every contender "
            f"(on {os.cpu_count()} cores)"
        )

    def __enter__(self) -> CpuContention:
        try:
            for _ in range(self.count):
                self._processes.append(
                    subprocess.Popen(
                        [sys.executable, "-c", _LOOP, str(os.getpid()), str(self.max_seconds)],
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                    )
                )
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop every process and wait for it. Idempotent."""
        for process in self._processes:
            if process.poll() is None:
                process.kill()
        for process in self._processes:
            process.wait()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


__all__ = ["DEFAULT_MAX_SECONDS", "CpuContention"]
