"""The ``openenv-gym`` entry point: the parser of every command, error display, exit codes.

Commands are registered one way: each module in :data:`COMMAND_MODULES` defines
``COMMAND`` (a :class:`~openenv_gym.cli.command.Command`), and :func:`build_parser` adds
them in that order. A command that raises gets its whole error printed, causes included
(:func:`describe_error`); ``--debug`` prints the traceback before it. Exit codes are those of
:mod:`openenv_gym.cli.command`: 0 ok, 1 failure, 2 usage, 130 interrupted (Ctrl-C).

Example:
    >>> main(["--version"])  # doctest: +ELLIPSIS
    openenv-gym ...
    0
    >>> try:
    ...     raise ValueError("no such thing") from KeyError("thing")
    ... except ValueError as exc:
    ...     print(describe_error(exc))
    ValueError: no such thing
    caused by KeyError: 'thing'
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence
from typing import Final

import openenv_gym
from openenv_gym.cli.command import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    PROG,
    Command,
    UsageError,
    common_options,
)

#: The modules defining the commands, in ``--help`` order.
COMMAND_MODULES: Final = (
    "openenv_gym.cli.serve",
    "openenv_gym.cli.check",
    "openenv_gym.cli.record",
    "openenv_gym.cli.build",
    "openenv_gym.cli.bench",
)
#: Longest error printed without ``--debug``; longer ones keep their head and tail.
MAX_ERROR_LINES: Final = 40


def commands() -> dict[str, Command]:
    """Every command, by name."""
    found = (importlib.import_module(module).COMMAND for module in COMMAND_MODULES)
    return {command.name: command for command in found}


def build_parser() -> argparse.ArgumentParser:
    """The full ``openenv-gym`` argument parser."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Remote OpenEnv environments as Gymnasium envs: serve environments over "
        "the OpenEnv protocol, check a server, record episodes, build the Docker images, run "
        "the benchmarks. `openenv-gym COMMAND --help` describes each command.",
        epilog="Exit codes: 0 ok, 1 the command failed, 2 a bad command line, 130 interrupted.",
        parents=[common_options()],
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {openenv_gym.__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in commands().values():
        command.register(subparsers)
    return parser


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes (``raise ... from``) and contexts, outermost first."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        if current.__cause__ is not None:
            current = current.__cause__
        elif current.__suppress_context__:
            current = None
        else:
            current = current.__context__
    return chain


def describe_error(exc: BaseException, *, max_lines: int = MAX_ERROR_LINES) -> str:
    """The whole curated message of ``exc`` and of each cause, as printed by ``openenv-gym``.

    Every line of every message is kept (a server's output, a build log's tail), except
    that a message longer than ``max_lines`` keeps its first line and its last lines, and
    a cause whose message an earlier one already quotes is left out.
    """
    parts: list[str] = []
    for index, error in enumerate(_chain(exc)):
        text = str(error).strip() or "(no message)"
        if index > 0 and text in "\n".join(parts):
            continue  # the message above already says it (wrappers quote their cause)
        lines = text.splitlines()
        if len(lines) > max_lines:
            kept = max_lines - 2
            omitted = len(lines) - 1 - kept
            lines = [lines[0], f"... ({omitted} lines omitted; --debug shows all)", *lines[-kept:]]
        head = f"{type(error).__name__}: {lines[0]}"
        parts.append(head if index == 0 else f"caused by {head}")
        parts.extend(lines[1:])
    return "\n".join(parts)


def _forget_unhandled_keyboard_interrupt() -> None:
    """Clear CPython's record of a Ctrl-C that ended a string ``exec``, so exit code 130 holds.

    CPython notes "an unhandled KeyboardInterrupt" when code run from a *string* (``exec`` or
    ``eval`` of source text, as :mod:`dataclasses` and :func:`collections.namedtuple` do when
    a module is imported lazily) ends with one, even if a caller catches it afterwards. Under
    ``python -m openenv_gym.cli`` that note outlives our ``except`` and the interpreter, after
    a clean exit with 130, kills itself with SIGINT (exit status -2). Each string ``exec``
    clears the note when it starts, so one that does nothing clears a stale one; on an
    interpreter without the note it is harmless. It runs only after a KeyboardInterrupt was
    caught, so it never hides one.
    """
    exec("pass", {})  # a constant string: see the docstring


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``openenv-gym`` command; return its exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(arguments)
    except SystemExit as exit_:  # argparse: --help/--version (0) or a usage error (2)
        return int(exit_.code) if isinstance(exit_.code, int) else EXIT_USAGE
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        _forget_unhandled_keyboard_interrupt()
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except UsageError as exc:
        getattr(args, "print_usage", parser.print_usage)(sys.stderr)
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        if getattr(args, "debug", False):
            traceback.print_exc()
        print(f"{PROG}: error: {describe_error(exc)}", file=sys.stderr)
        return EXIT_FAILURE


__all__ = ["COMMAND_MODULES", "build_parser", "commands", "describe_error", "main"]
