"""How a command of ``openenv-gym`` is declared: one :class:`Command` per module.

Every command module (``serve``, ``check``, ``build``, ``record``, ``bench``) defines
``COMMAND = Command(...)``: its name, a one-line help for ``openenv-gym --help``, the
description of its own ``--help``, a function adding its options and the function running it.
:mod:`openenv_gym.cli.program` lists the modules and registers each the same way.

Exit codes, shared by every command: :data:`EXIT_OK` (0), :data:`EXIT_FAILURE` (1: the command
failed; the error is printed), :data:`EXIT_USAGE` (2: a bad command line) and
:data:`EXIT_INTERRUPTED` (130: Ctrl-C, the shell convention 128 + SIGINT).

Example:
    >>> import argparse
    >>> def add(parser: argparse.ArgumentParser) -> None:
    ...     parser.add_argument("--name", default="world", help="who to greet")
    >>> def run(args: argparse.Namespace) -> int:
    ...     print(f"hello {args.name}")
    ...     return EXIT_OK
    >>> hello = Command("hello", "greet someone", add, run, description="Print a greeting.")
    >>> commands = argparse.ArgumentParser(prog="demo").add_subparsers(dest="command")
    >>> parser = hello.register(commands)
    >>> args = parser.parse_args(["--name", "you"])
    >>> args.handler(args)
    hello you
    0
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from openenv_gym.errors import PicklableError

PROG: Final = "openenv-gym"
_ROLE: Final = re.compile(r":[a-z]+:`(~?)([^`]+)`")

EXIT_OK: Final = 0
EXIT_FAILURE: Final = 1
EXIT_USAGE: Final = 2
EXIT_INTERRUPTED: Final = 130


class UsageError(PicklableError):
    """A command-line value is invalid in a way argparse cannot see (exit code 2).

    Raise it from a command's ``run``; ``openenv-gym`` prints that command's usage line and
    the message.
    """


def common_options() -> argparse.ArgumentParser:
    """A parent parser with the options accepted at every level (``--debug``)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the full traceback when the command fails",
    )
    return common


def wrap_description(text: str, width: int = 100) -> str:
    """Wrap the lines of ``text`` longer than ``width``, keeping their indentation and every
    line break (``--help`` shows descriptions as written)."""
    lines = []
    for line in text.splitlines():
        if len(line) <= width:
            lines.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        lines.append(textwrap.fill(line, width, subsequent_indent=indent))
    return "\n".join(lines)


def _role_text(match: re.Match[str]) -> str:
    """``:func:`~a.b``` -> ``b``; ``:func:`a.b``` -> ``a.b``."""
    tilde, target = match.groups()
    return target.rsplit(".", 1)[-1] if tilde else target


def description_from_docstring(doc: str | None) -> str:
    r"""A module docstring as ``--help`` text: everything before its doctest ``Example:``,
    without reStructuredText markup.

    Example:
        >>> doc = "Do ``it`` (:func:`~a.b.c`).\n\nExample:\n    >>> 1\n"
        >>> print(description_from_docstring(doc))
        Do it (c).
    """
    lines = (doc or "").strip().splitlines()
    for index, line in enumerate(lines[:-1]):
        if line.strip() in ("Example:", "Examples:") and lines[index + 1].lstrip().startswith(
            ">>>"
        ):
            lines = lines[:index]
            break
    text = "\n".join(lines).strip()
    text = _ROLE.sub(_role_text, text)
    return text.replace("``", "").replace("::\n", ":\n")


@dataclass(frozen=True)
class Command:
    """One ``openenv-gym <name>`` command.

    Attributes:
        name: The command name.
        help: One line for ``openenv-gym --help``.
        add_arguments: Adds the command's options (and sub-commands) to its parser.
        run: Runs the parsed command; returns the exit code. It may raise: ``openenv-gym``
            prints the error (see :func:`openenv_gym.cli.program.describe_error`) and exits 1.
        description: The command's ``--help`` text (shown verbatim, line breaks kept);
            default: the docstring of ``run``'s module (:func:`description_from_docstring`).
    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""

    def register(self, commands: Any) -> argparse.ArgumentParser:
        """Add this command to ``commands`` (an ``add_subparsers()`` action); return its parser."""
        parser: argparse.ArgumentParser = commands.add_parser(
            self.name,
            help=self.help,
            description=wrap_description(
                self.description
                or description_from_docstring(sys.modules[self.run.__module__].__doc__)
            ),
            formatter_class=argparse.RawDescriptionHelpFormatter,
            parents=[common_options()],
        )
        self.add_arguments(parser)
        # A UsageError from run() prints this command's usage line, not the top-level one.
        parser.set_defaults(handler=self.run, print_usage=parser.print_usage)
        return parser


__all__ = [
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "PROG",
    "Command",
    "UsageError",
    "common_options",
    "description_from_docstring",
    "wrap_description",
]
