"""The ``openenv-gym`` command line: ``serve``, ``check``, ``record``, ``build``, ``bench``.

One module per command, each declaring ``COMMAND`` (:mod:`openenv_gym.cli.command`);
:mod:`openenv_gym.cli.program` builds the parser and runs them. ``python -m openenv_gym.cli``
is the same as the ``openenv-gym`` console script.

This package imports nothing on import: ``import openenv_gym.cli`` does not load every
command.
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``openenv-gym`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    from openenv_gym.cli.program import main as run

    return run(argv)


__all__ = ["main"]
