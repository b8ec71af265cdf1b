"""The options of an embedded server, declared once.

A server we ship (``openenv-gym serve atari``, ``serve chess``) takes options that travel a
long way: from ``gym.make("openenv/Atari-v0", frameskip=...)`` through the command line of a
child process (or a container) to the server builder and the environment class. Each server
declares its options once, as :class:`ServerOptions`; everything else derives from it:

* the ``serve`` sub-command's flags and help (:meth:`ServerOptions.add_arguments`),
* the options mapping of parsed flags (:meth:`ServerOptions.from_namespace`),
* the command line of a mapping (:meth:`ServerOptions.to_argv`),
* the split of a ``gym.make`` keyword mapping into server options and the rest
  (:meth:`ServerOptions.split`).

The server builder receives the mapping and passes it, unchanged, to the environment class.

Example:
    >>> import argparse
    >>> options = ServerOptions(
    ...     ServerOption("level", 1, "the level", type=int),
    ...     ServerOption("fast", False, "run fast"),
    ... )
    >>> parser = argparse.ArgumentParser()
    >>> options.add_arguments(parser)
    >>> options.from_namespace(parser.parse_args(["--level", "3", "--fast"]))
    {'level': 3, 'fast': True}
    >>> options.to_argv({"level": 2, "fast": True})
    ['--level', '2', '--fast']
    >>> options.split({"level": 2, "render_mode": "rgb_array"})
    ({'level': 2, 'fast': False}, {'render_mode': 'rgb_array'})
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ServerOption:
    """One option of a server.

    Attributes:
        name: The Python keyword (``repeat_action_probability``).
        default: Its default; ``False`` makes a boolean switch (``--full-action-space``).
        help: One line for ``--help`` (the default is appended).
        type: Converts the command-line text (``int``, an argparse ``type=`` converter);
            ``None`` keeps the text.
        choices: The accepted values, if there is a fixed set.
        flag: The command-line flag (default: ``--`` + the name with dashes).
        metavar: The value's name in ``--help``.
        required: The flag must be given (no default).
    """

    name: str
    default: Any
    help: str
    type: Callable[[str], Any] | None = None
    choices: Sequence[str] | None = None
    flag: str | None = None
    metavar: str | None = None
    required: bool = False

    @property
    def option_flag(self) -> str:
        """The command-line flag, e.g. ``--repeat-action-probability``."""
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def is_switch(self) -> bool:
        """Whether this is a boolean switch (present: ``True``)."""
        return self.default is False and self.type is None

    def add_argument(self, parser: argparse.ArgumentParser | Any) -> None:
        """Add the flag to ``parser`` (or an argument group)."""
        if self.is_switch:
            parser.add_argument(
                self.option_flag, dest=self.name, action="store_true", help=self.help
            )
            return
        if self.required:
            shown = "required"
        elif self.default is None:
            shown = "default: the server's own"
        else:
            shown = f"default: {self.default}"
        parser.add_argument(
            self.option_flag,
            dest=self.name,
            type=self.type or str,
            choices=self.choices,
            default=self.default,
            required=self.required,
            metavar=self.metavar,
            help=f"{self.help} ({shown})",
        )

    def to_argv(self, value: Any) -> list[str]:
        """The command-line words for ``value`` (none for ``None`` or an unset switch)."""
        if self.is_switch:
            return [self.option_flag] if value else []
        if value is None:
            return []
        if isinstance(value, Mapping):
            text = json.dumps(dict(value))
        elif isinstance(value, float):
            text = repr(value)
        else:
            text = str(value)
        return [self.option_flag, text]


class ServerOptions:
    """The ordered options of one server (see the module docstring)."""

    def __init__(self, *options: ServerOption) -> None:
        self._options = tuple(options)
        self._by_name = {option.name: option for option in options}

    def __len__(self) -> int:
        return len(self._options)

    def __iter__(self) -> Iterator[ServerOption]:
        return iter(self._options)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    @property
    def names(self) -> tuple[str, ...]:
        """The option names, in order."""
        return tuple(self._by_name)

    def defaults(self) -> dict[str, Any]:
        """Every option at its default."""
        return {option.name: option.default for option in self._options}

    def add_arguments(self, parser: argparse.ArgumentParser | Any) -> None:
        """Add every option's flag to ``parser`` (or an argument group)."""
        for option in self._options:
            option.add_argument(parser)

    def from_namespace(self, args: argparse.Namespace) -> dict[str, Any]:
        """The options mapping of parsed flags."""
        return {name: getattr(args, name) for name in self._by_name}

    def to_argv(self, options: Mapping[str, Any]) -> list[str]:
        """The command line of an options mapping (options it omits keep the server's default).

        Raises:
            TypeError: ``options`` names an option this server does not have.
        """
        unknown = [name for name in options if name not in self._by_name]
        if unknown:
            raise TypeError(
                f"unknown server option(s) {', '.join(map(repr, unknown))}; expected some of "
                f"{', '.join(self._by_name)}"
            )
        argv: list[str] = []
        for name, value in options.items():
            argv += self._by_name[name].to_argv(value)
        return argv

    def split(self, kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(options, rest)``: the server options of ``kwargs`` (defaults filled in) and the
        other keywords."""
        options = self.defaults()
        rest: dict[str, Any] = {}
        for name, value in kwargs.items():
            if name in self._by_name:
                options[name] = value
            else:
                rest[name] = value
        return options, rest


__all__ = ["ServerOption", "ServerOptions"]
