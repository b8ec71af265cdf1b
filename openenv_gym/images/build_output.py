r"""Running the steps of an image build and showing the lines of their output worth seeing.

A build step (``pip wheel``, ``docker build``) prints a long log; :func:`condense` keeps the
lines worth showing while it runs, :func:`report_progress` passes them to a
:data:`Progress` callback, and :func:`stream_command` runs a command and keeps its whole log
for the error when the step fails.

Example:
    >>> report_progress(print, "wheelhouse", "Collecting numpy\n  Downloading numpy.whl\n")
    wheelhouse: Collecting numpy
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Sequence
from typing import Final

#: A callback that shows one line of build progress (``print`` by default).
Progress = Callable[[str], None]

#: Lines of pip's and docker build's output worth showing while a build runs: the Dockerfile
#: steps and what pip fetches, builds and installs. The whole log goes into the error when
#: the build fails.
CONDENSED: Final = re.compile(
    r"^(Step \d+/\d+ :|#\d+ \[|Collecting |Building wheel|Saved |Processing |"
    r"Successfully (built|installed|tagged)|ERROR|WARNING: (?!Location)|error:)"
)


def condense(line: str) -> str | None:
    r"""The line of a build log to show (stripped), or ``None`` for the noise in between.

    Example:
        >>> condense("Step 3/9 : RUN pip install /tmp/src\n")
        'Step 3/9 : RUN pip install /tmp/src'
        >>> condense("  Downloading numpy-2.4.6.whl (16.8 MB)") is None
        True
    """
    text = line.strip()
    return text if text and CONDENSED.match(text) else None


def report_progress(progress: Progress, prefix: str, chunk: str) -> None:
    """Show the lines of ``chunk`` worth seeing (:func:`condense`) as ``"<prefix>: <line>"``."""
    for line in chunk.splitlines():
        shown = condense(line)
        if shown is not None:
            progress(f"{prefix}: {shown}")


def stream_command(command: Sequence[str], on_line: Callable[[str], None]) -> tuple[int, list[str]]:
    """Run ``command``, passing each output line (stdout and stderr) to ``on_line``; return
    the exit code and every line."""
    log: list[str] = []
    with subprocess.Popen(
        list(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as process:
        for line in process.stdout or ():
            log.append(line)
            on_line(line)
    return process.returncode, log
