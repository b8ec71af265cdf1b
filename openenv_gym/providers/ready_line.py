"""The READY line: the one stdout line ``openenv-gym serve`` prints once it listens.

A parent process (:class:`~openenv_gym.providers.LocalServerProcess`, a test, a script)
reads the server's stdout until a line starts with :data:`READY_PREFIX`; the rest of the
line is a JSON object with ``host``, ``port``, ``url`` and, with ``--unix-socket``,
``unix_sockets``. Both sides use this module, so the format is defined once.

Example:
    >>> line = format_ready_line({"host": "127.0.0.1", "port": 8000, "url": "http://127.0.0.1:8000"})
    >>> line
    'OPENENV_GYM_READY {"host": "127.0.0.1", "port": 8000, "url": "http://127.0.0.1:8000"}'
    >>> parse_ready_line(line + "\\n")["port"]
    8000
    >>> parse_ready_line("some other output") is None
    True
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any, Final

from openenv_gym.errors import ServerStartError

#: The prefix of the READY line.
READY_PREFIX: Final = "OPENENV_GYM_READY "


def format_ready_line(info: Mapping[str, Any]) -> str:
    """The READY line for ``info`` (no trailing newline)."""
    return READY_PREFIX + json.dumps(dict(info))


def parse_ready_line(line: str) -> dict[str, Any] | None:
    """The JSON object of a READY line, or ``None`` when ``line`` is not one.

    Raises:
        json.JSONDecodeError: The line has the prefix but no valid JSON object after it.
    """
    if not line.startswith(READY_PREFIX):
        return None
    info = json.loads(line[len(READY_PREFIX) :])
    if not isinstance(info, dict):
        raise json.JSONDecodeError("expected a JSON object after the READY prefix", line, 0)
    return info


def read_ready_line(stream: IO[str], *, max_lines: int = 1000) -> dict[str, Any]:
    """Read ``stream`` (a server's stdout) up to its READY line; return the line's object.

    Other lines before it (a library printing at import) are skipped. Blocks until the line
    comes: the caller bounds the wait (a process's own timeout, a test's).

    Raises:
        ServerStartError: The stream ended, or ``max_lines`` lines came, before a READY line
            (the server exited or is not ``openenv-gym serve``); the lines read are in
            ``log``.
    """
    seen: list[str] = []
    for _ in range(max_lines):
        line = stream.readline()
        if not line:
            break
        info = parse_ready_line(line)
        if info is not None:
            return info
        seen.append(line)
    raise ServerStartError(
        f"expected a line starting with {READY_PREFIX!r} on the server's stdout, got "
        f"{'end of output' if len(seen) < max_lines else f'{max_lines} other lines'} "
        "(did it exit? run the same `openenv-gym serve ...` command by hand to see why)",
        log="".join(seen[-40:]),
    )


__all__ = ["READY_PREFIX", "format_ready_line", "parse_ready_line", "read_ready_line"]
