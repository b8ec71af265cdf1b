"""The event loop a server process runs on: ``uvloop`` when installed, else asyncio's own.

``uvloop`` (libuv) cuts the loop's share of a step: its read callbacks and writes cost a
fraction of the pure-Python selector loop's. It is a dependency of the package on Linux and
macOS; elsewhere, or with ``OPENENV_GYM_LOOP=asyncio`` in the environment, servers run on
asyncio's default loop and behave the same, only slower.

Example:
    >>> loop = new_server_loop()
    >>> loop.run_until_complete(asyncio.sleep(0))
    >>> loop.close()
"""

from __future__ import annotations

import asyncio
import os
from typing import Final

#: Set to ``asyncio`` to run servers on asyncio's default loop even when uvloop is installed.
LOOP_VARIABLE: Final = "OPENENV_GYM_LOOP"


def new_server_loop() -> asyncio.AbstractEventLoop:
    """A new event loop for a server: ``uvloop``'s when available (see the module docstring).

    Raises:
        ValueError: ``OPENENV_GYM_LOOP`` is set to something other than ``uvloop`` or
            ``asyncio``.
    """
    choice = os.environ.get(LOOP_VARIABLE, "uvloop").strip().lower() or "uvloop"
    if choice not in ("uvloop", "asyncio"):
        raise ValueError(
            f"{LOOP_VARIABLE}={choice!r}: expected 'uvloop' or 'asyncio'; unset it to use "
            "uvloop when installed"
        )
    if choice == "uvloop":
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return uvloop.new_event_loop()
    return asyncio.new_event_loop()


__all__ = ["LOOP_VARIABLE", "new_server_loop"]
