"""The ``openenv-gym`` command line.

Usage::

    openenv-gym serve gymnasium --env-id CartPole-v1 [--host 127.0.0.1] [--port 8000]
                                [--env-kwargs JSON] [--max-sessions N] [--idle-timeout S]
                                [--max-message-size BYTES] [--exit-with-parent]
                                [--log-level LEVEL] [--debug]

``serve`` prints exactly one line to stdout once the server listens, then serves until
SIGINT/SIGTERM (or, with ``--exit-with-parent``, until its stdin reaches end of file)::

    OPENENV_GYM_READY {"host": "127.0.0.1", "port": 8000, "url": "http://127.0.0.1:8000"}

Exit codes: 0 after a clean stop, 1 when the server fails (unknown env id, port in use,
...), 2 for usage errors. Errors are one line on stderr; ``--debug`` adds the traceback.

Extending: a new server is one :class:`ServeTarget` in :data:`SERVE_TARGETS` (its own
options plus a function building the :class:`~openenv_gym.server.OpenEnvServer`); the
shared server flags come from :func:`add_server_options`. A new command is one entry in
:data:`COMMANDS`.

Example:
    >>> parser = build_parser()
    >>> args = parser.parse_args(["serve", "gymnasium", "--env-id", "CartPole-v1", "--port", "0"])
    >>> args.target, args.env_id, args.port, args.max_sessions
    ('gymnasium', 'CartPole-v1', 0, 64)
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from openenv_gym.commands.argument_types import port_number, positive_int, positive_seconds
from openenv_gym.commands.bench import add_bench_command
from openenv_gym.commands.record import add_record_command
from openenv_gym.envs.atari import cli as atari_cli
from openenv_gym.envs.chess import cli as chess_cli

if TYPE_CHECKING:
    from openenv_gym.server.app import OpenEnvServer

PROG: Final = "openenv-gym"
#: The environment variable with the bearer token (``serve --token`` default, client default).
TOKEN_ENV_VAR: Final = "OPENENV_TOKEN"
#: The prefix of the one stdout line ``serve`` prints when it listens.
READY_PREFIX: Final = "OPENENV_GYM_READY "
DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8000

EXIT_OK: Final = 0
EXIT_FAILURE: Final = 1
EXIT_USAGE: Final = 2


class UsageError(Exception):
    """A command-line value is invalid (exit code 2)."""


# --------------------------------------------------------------------------- serve


def _workers(text: str) -> int:
    from openenv_gym.server.workers import resolve_workers

    try:
        return resolve_workers(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(
            f"expected a JSON object, e.g. '{{\"render_mode\": null}}', got {text!r} ({exc.msg})"
        ) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f"expected a JSON object, got {type(value).__name__}: {text!r}"
        )
    return value


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """The flags every ``serve`` target shares (address, limits, lifetime, logging)."""
    from openenv_gym.server.app import (
        DEFAULT_MAX_MESSAGE_SIZE,
        DEFAULT_MAX_SESSIONS,
        HARD_CAP_FACTOR,
    )

    group = parser.add_argument_group("server options")
    group.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"address to bind (default: {DEFAULT_HOST}; use 0.0.0.0 to accept remote clients: "
        "that needs a token, or --insecure)",
    )
    group.add_argument(
        "--port",
        type=port_number,
        default=DEFAULT_PORT,
        help="port to bind; 0 picks a free port, named in the READY line "
        f"(default: {DEFAULT_PORT})",
    )
    group.add_argument(
        "--max-sessions",
        type=positive_int,
        default=DEFAULT_MAX_SESSIONS,
        metavar="N",
        help="concurrent WebSocket sessions; one more gets CAPACITY_REACHED "
        f"(default: {DEFAULT_MAX_SESSIONS})",
    )
    group.add_argument(
        "--workers",
        type=_workers,
        default=1,
        metavar="K",
        help="server processes sharing the port (SO_REUSEPORT; sessions stay on the process "
        "that accepted them; --max-sessions counts over all of them); 'auto': one per core "
        "(default: 1)",
    )
    group.add_argument(
        "--unix-socket",
        default=None,
        metavar="PATH",
        help="also serve sessions on this Unix socket (local clients skip TCP); with "
        "--workers K, worker k listens on PATH.k; the READY line lists them",
    )
    group.add_argument(
        "--idle-timeout",
        type=positive_seconds,
        default=None,
        metavar="S",
        help="close sessions without a message for S seconds (default: never)",
    )
    group.add_argument(
        "--max-message-size",
        type=positive_int,
        default=DEFAULT_MAX_MESSAGE_SIZE,
        metavar="BYTES",
        help="largest client message processed; larger ones get a VALIDATION_ERROR reply, "
        f"and ones over {HARD_CAP_FACTOR}x this close the connection (code 1009) "
        f"(default: {DEFAULT_MAX_MESSAGE_SIZE})",
    )
    group.add_argument(
        "--token",
        default=None,
        metavar="TOKEN",
        help="require 'Authorization: Bearer TOKEN' on the WebSocket and every route but "
        f"/health (default: ${TOKEN_ENV_VAR} if set, else no check; prefer the variable, "
        "a command line is visible to other users)",
    )
    group.add_argument(
        "--insecure",
        action="store_true",
        help="allow a --host beyond loopback without a token (logged as a warning)",
    )
    group.add_argument(
        "--exit-with-parent",
        action="store_true",
        help="stop when stdin reaches end of file (a parent holding the pipe has exited)",
    )
    group.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="server log level, logged to stderr (default: warning)",
    )


def server_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The :class:`OpenEnvServer` keyword arguments from the shared server flags."""
    return {
        "max_sessions": args.max_sessions,
        "idle_timeout": args.idle_timeout,
        "max_message_size": args.max_message_size,
        "token": serve_token(args),
    }


def serve_token(args: argparse.Namespace) -> str | None:
    """``--token``, else ``$OPENENV_TOKEN``, else ``None`` (an empty one is kept: refused)."""
    return args.token if args.token is not None else os.environ.get(TOKEN_ENV_VAR)


@dataclass(frozen=True)
class ServeTarget:
    """One ``openenv-gym serve <name>`` subcommand.

    Attributes:
        name: The subcommand name.
        help: One line for ``serve --help``.
        description: The subcommand's ``--help`` description.
        add_arguments: Adds the target's own options (the shared ones are added for it).
        build: Builds the server from the parsed arguments; raises on failure.
    """

    name: str
    help: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    build: Callable[[argparse.Namespace], OpenEnvServer]


def _gymnasium_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env-id",
        required=True,
        metavar="ID",
        help="the Gymnasium id to serve, e.g. CartPole-v1 or Pendulum-v1",
    )
    parser.add_argument(
        "--env-kwargs",
        type=_json_object,
        default=None,
        metavar="JSON",
        help="gymnasium.make keyword arguments as a JSON object, "
        "e.g. '{\"max_episode_steps\": 200}'",
    )


def _build_gymnasium(args: argparse.Namespace) -> OpenEnvServer:
    from openenv_gym.envs.gymnasium import gymnasium_server

    return gymnasium_server(args.env_id, make_kwargs=args.env_kwargs, **server_kwargs(args))


#: The servers ``openenv-gym serve`` can run; later targets (atari, chess) are added here.
SERVE_TARGETS: dict[str, ServeTarget] = {
    "gymnasium": ServeTarget(
        name="gymnasium",
        help="serve any Gymnasium env id over OpenEnv",
        description="Serve gymnasium.make(ENV_ID) over the OpenEnv protocol, one env "
        "instance per WebSocket session. Supported spaces: Box, Discrete, MultiDiscrete, "
        "MultiBinary.",
        add_arguments=_gymnasium_arguments,
        build=_build_gymnasium,
    ),
}
SERVE_TARGETS["atari"] = ServeTarget(
    "atari", atari_cli.HELP, atari_cli.DESCRIPTION, atari_cli.add_arguments, atari_cli.build
)
SERVE_TARGETS["chess"] = ServeTarget(
    "chess", chess_cli.HELP, chess_cli.DESCRIPTION, chess_cli.add_arguments, chess_cli.build
)


def _watch_stdin(on_eof: Callable[[], None]) -> None:
    """Call ``on_eof`` when stdin reaches end of file (in a daemon thread)."""

    def watch() -> None:
        try:
            fd = sys.stdin.fileno()
            while os.read(fd, 65536):
                pass
        except (AttributeError, OSError, ValueError):  # no stdin at all counts as EOF
            pass
        on_eof()

    threading.Thread(target=watch, name="openenv-gym-stdin-watch", daemon=True).start()


def _print_ready(host: str, port: int, unix_sockets: Sequence[str] = ()) -> None:
    from openenv_gym.server.app import format_url

    info: dict[str, Any] = {"host": host, "port": port, "url": format_url(host, port)}
    if unix_sockets:
        info["unix_sockets"] = list(unix_sockets)
    sys.stdout.write(READY_PREFIX + json.dumps(info) + "\n")
    sys.stdout.flush()


def run_serve(args: argparse.Namespace) -> int:
    """``openenv-gym serve <target>``: build the server, print READY, serve until stopped."""
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format=f"{PROG} %(levelname)s %(name)s: %(message)s",
    )
    from openenv_gym.errors import InsecureBindError
    from openenv_gym.server.bind_policy import check_bind

    try:
        check_bind(args.host, serve_token(args), insecure=args.insecure)
    except InsecureBindError as exc:
        raise UsageError(str(exc)) from exc
    build = SERVE_TARGETS[args.target].build
    if getattr(args, "workers", 1) > 1:
        return _run_serve_workers(args, build)
    server = build(args)
    if args.exit_with_parent:
        _watch_stdin(server.request_stop)
    unix_path = getattr(args, "unix_socket", None)
    sockets = [unix_path] if unix_path else []
    server.run(
        args.host,
        args.port,
        on_ready=lambda host, port: _print_ready(host, port, sockets),
        unix_path=unix_path,
    )
    return EXIT_OK


def _run_serve_workers(
    args: argparse.Namespace, build: Callable[[argparse.Namespace], OpenEnvServer]
) -> int:
    """``serve --workers K``: K processes on one port (see :mod:`openenv_gym.server.workers`)."""
    import signal

    from openenv_gym.server.workers import run_workers

    build(args)  # once in the parent: bad arguments (an unknown env id) fail before forking
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    if args.exit_with_parent:
        _watch_stdin(stop.set)
    unix_path = getattr(args, "unix_socket", None)
    sockets = [f"{unix_path}.{k}" for k in range(args.workers)] if unix_path else []
    run_workers(
        lambda: build(args),
        host=args.host,
        port=args.port,
        workers=args.workers,
        max_sessions=args.max_sessions,
        on_ready=lambda host, port: _print_ready(host, port, sockets),
        stop=stop,
        unix_paths=sockets or None,
    )
    return EXIT_OK


def _common_options() -> argparse.ArgumentParser:
    """Options accepted at every level (before or after the command names)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the full traceback when the command fails",
    )
    return common


def _add_serve_command(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="run an OpenEnv server",
        description="Run an OpenEnv-protocol server (WebSocket /ws plus GET /health, "
        "/schema, /metadata, /state). It prints one line, "
        f'{READY_PREFIX}{{"host": ..., "port": ..., "url": ...}}, once it listens.',
    )
    targets = serve.add_subparsers(dest="target", metavar="TARGET", required=True)
    for target in SERVE_TARGETS.values():
        parser = targets.add_parser(
            target.name,
            help=target.help,
            description=target.description,
            parents=[_common_options()],
        )
        target.add_arguments(parser)
        add_server_options(parser)
        parser.set_defaults(handler=run_serve)


def module_command(name: str, help: str, module: str) -> Callable[[Any], None]:
    """A command whose code lives in ``module``: its docstring is the ``--help`` text, its
    ``add_arguments(parser)`` adds the options and its ``run(args) -> int`` runs it."""

    def add(commands: Any) -> None:
        code = importlib.import_module(module)
        parser = commands.add_parser(
            name,
            help=help,
            description=code.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            parents=[_common_options()],
        )
        code.add_arguments(parser)
        parser.set_defaults(handler=code.run)

    return add


#: Top-level commands: name -> function adding its parser to the subparsers action.
COMMANDS: dict[str, Callable[[Any], None]] = {
    "serve": _add_serve_command,
    "check": module_command(
        "check", "check an OpenEnv server and print a report", "openenv_gym.commands.check"
    ),
    "build": module_command(
        "build", "build the Docker images of our servers", "openenv_gym.commands.build"
    ),
    "record": add_record_command,
}
COMMANDS["bench"] = add_bench_command


def build_parser() -> argparse.ArgumentParser:
    """The full ``openenv-gym`` argument parser."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Remote OpenEnv environments as Gymnasium envs: serve environments "
        "over the OpenEnv protocol, check a server, build the Docker images. "
        "`openenv-gym COMMAND --help` describes each command.",
        parents=[_common_options()],
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add_command in COMMANDS.values():
        add_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``openenv-gym`` command; return its exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(arguments)
    except SystemExit as exit_:  # argparse: --help (0) or a usage error (2)
        return int(exit_.code) if isinstance(exit_.code, int) else EXIT_USAGE
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        return EXIT_OK
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        if getattr(args, "debug", False):
            traceback.print_exc()
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"{PROG}: error: {type(exc).__name__}: {message}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
