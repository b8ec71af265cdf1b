"""``openenv-gym serve TARGET``: run one of our OpenEnv servers.

Usage::

    openenv-gym serve gymnasium --env-id CartPole-v1 [--env-kwargs JSON]
    openenv-gym serve gymnasium --env-id ale_py:ALE/Pong-v5   # an id another package registers
    openenv-gym serve atari --game pong [--obs-type rgb] [--frameskip 4] ...
    openenv-gym serve chess [--opponent random] ...
        [--host 127.0.0.1] [--port 8000] [--workers K] [--unix-socket auto|off|PATH]
        [--max-sessions N] [--idle-timeout S] [--max-message-size BYTES] [--token TOKEN]
        [--handshake-timeout S] [--max-pending N] [--ping-interval S] [--ping-timeout S]
        [--busy-poll-us US] [--insecure] [--exit-with-parent] [--log-level LEVEL] [--debug]

A ``--host`` beyond loopback needs a token (``--token`` or ``$OPENENV_TOKEN``) or
``--insecure``; an empty token is a usage error (see :mod:`openenv_gym.server.bind_policy`).

``serve`` prints exactly one line to stdout once the server listens (see
:mod:`openenv_gym.providers.ready_line`), then serves until SIGINT/SIGTERM (a clean stop, exit
code 0) or, with ``--exit-with-parent``, until its stdin reaches end of file::

    OPENENV_GYM_READY {"host": "127.0.0.1", "port": 8000, "url": "http://127.0.0.1:8000"}

Extending: a new server is one entry of :data:`~openenv_gym.envs.registry.SERVER_ENVS`
(its options, declared once next to the server, and the dotted path of the function building
the :class:`~openenv_gym.server.OpenEnvServer` from them); each entry is one sub-command here.
The builder is imported only when the target runs, so ``--help`` needs no extra.

Example:
    >>> from openenv_gym.cli.program import build_parser
    >>> parser = build_parser()
    >>> args = parser.parse_args(["serve", "gymnasium", "--env-id", "CartPole-v1", "--port", "0"])
    >>> args.target, args.env_id, args.port, args.max_sessions
    ('gymnasium', 'CartPole-v1', 0, 64)
    >>> SERVER_ENVS["gymnasium"].options_of(args)
    {'env_id': 'CartPole-v1', 'make_kwargs': None}
"""

from __future__ import annotations

import argparse
import errno
import gc
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from openenv_gym.argument_types import (
    microseconds,
    port_number,
    positive_int,
    positive_seconds,
)
from openenv_gym.cli.command import EXIT_OK, PROG, Command, UsageError, common_options
from openenv_gym.client import TOKEN_ENV_VAR
from openenv_gym.envs.registry import SERVER_ENVS, ServerEnvSpec
from openenv_gym.providers.ready_line import READY_PREFIX, format_ready_line

if TYPE_CHECKING:
    from openenv_gym.server.app import OpenEnvServer

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8000


# --------------------------------------------------------------------------- server flags


def _workers(text: str) -> int:
    from openenv_gym.server.workers import resolve_workers

    try:
        return resolve_workers(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def ping_seconds(flag: str, minimum: float, *, off: bool) -> Callable[[str], float]:
    """A converter of ``--ping-interval`` / ``--ping-timeout``: at least ``minimum`` seconds
    (our clients' keeper answers idle connections within that), or ``0`` when ``off``.

    Example:
        >>> ping_seconds("--ping-timeout", 1.0, off=False)("2.5")
        2.5
        >>> ping_seconds("--ping-interval", 1.0, off=True)("0.5")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: expected at least 1 s (openenv-gym clients answer the \
pings of an idle connection within 0.75 s; shorter settings drop healthy clients that pause \
between steps) or 0 (off), got '0.5': use --ping-interval 1
    """
    allowed = f"at least {minimum:g} s" + (" or 0 (off)" if off else "")

    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {allowed}, got {text!r}") from None
        if (off and value == 0) or value >= minimum:  # NaN compares false: refused
            return value
        raise argparse.ArgumentTypeError(
            f"expected at least {minimum:g} s (openenv-gym clients answer the pings of an idle "
            "connection within 0.75 s; shorter settings drop healthy clients that pause "
            f"between steps){' or 0 (off)' if off else ''}, got {text!r}: use {flag} "
            f"{minimum:g}"
        )

    return convert


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """The flags every ``serve`` target shares (address, limits, lifetime, logging)."""
    from openenv_gym.busy_poll import DEFAULT_BUSY_POLL
    from openenv_gym.server.admission import DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_PENDING
    from openenv_gym.server.app import DEFAULT_MAX_SESSIONS, HARD_CAP_FACTOR
    from openenv_gym.server.heartbeat import (
        DEFAULT_PING_INTERVAL,
        DEFAULT_PING_TIMEOUT,
        MIN_PING_SECONDS,
    )
    from openenv_gym.wire.messages import SERVER_INBOUND_LIMIT

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
        default="auto",
        metavar="PATH",
        help="also serve sessions on this Unix socket (same-host clients skip TCP); with "
        "--workers K, worker k listens on PATH.k; the READY line and GET /health list them. "
        "'auto' (default): a fresh one in /dev/shm (else the temp directory); 'off': none",
    )
    group.add_argument(
        "--idle-timeout",
        type=positive_seconds,
        default=None,
        metavar="S",
        help="close sessions without a message for S seconds (default: never)",
    )
    group.add_argument(
        "--handshake-timeout",
        type=positive_seconds,
        default=DEFAULT_HANDSHAKE_TIMEOUT,
        metavar="S",
        help="drop a connection that has not sent its whole request head (WebSocket "
        "handshake, route, or request with a body) S seconds after it was accepted "
        f"(default: {DEFAULT_HANDSHAKE_TIMEOUT:g})",
    )
    group.add_argument(
        "--max-pending",
        type=positive_int,
        default=DEFAULT_MAX_PENDING,
        metavar="N",
        help="connections per server process that may wait for their request head (not yet "
        "authenticated) at once; one more drops the oldest waiting one "
        f"(default: {DEFAULT_MAX_PENDING})",
    )
    for flag, off, default, help_text in (
        (
            "--ping-interval",
            True,
            DEFAULT_PING_INTERVAL,
            f"ping WebSocket connections silent for S seconds (at least {MIN_PING_SECONDS:g}); "
            "0: never ping, so the sessions of frozen or vanished clients are kept",
        ),
        (
            "--ping-timeout",
            False,
            DEFAULT_PING_TIMEOUT,
            "drop a connection, and free its sessions, when its ping goes unanswered for "
            f"S seconds (at least {MIN_PING_SECONDS:g})",
        ),
    ):
        group.add_argument(
            flag,
            type=ping_seconds(flag, MIN_PING_SECONDS, off=off),
            default=default,
            metavar="S",
            help=f"{help_text} (default: {default:g})",
        )
    group.add_argument(
        "--max-message-size",
        type=positive_int,
        default=SERVER_INBOUND_LIMIT,
        metavar="BYTES",
        help="largest client message processed; larger ones get a VALIDATION_ERROR reply, "
        f"and ones over {HARD_CAP_FACTOR}x this close the connection (code 1009) "
        f"(default: {SERVER_INBOUND_LIMIT})",
    )
    group.add_argument(
        "--busy-poll-us",
        type=microseconds,
        default=round(DEFAULT_BUSY_POLL * 1e6),
        metavar="US",
        help="after a reply, spin up to US microseconds for the next request instead of "
        "sleeping (no wake-up cost for a client stepping in a tight loop; stops spinning "
        f"for slow clients); 0 turns it off (default: {round(DEFAULT_BUSY_POLL * 1e6)})",
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
        "busy_poll": args.busy_poll_us * 1e-6,
        "handshake_timeout": args.handshake_timeout,
        "max_pending": args.max_pending,
        "ping_interval": args.ping_interval or None,  # 0: never ping
        "ping_timeout": args.ping_timeout,
    }


def serve_token(args: argparse.Namespace) -> str | None:
    """``--token``, else ``$OPENENV_TOKEN``, else ``None`` (an empty one is kept: refused)."""
    return args.token if args.token is not None else os.environ.get(TOKEN_ENV_VAR)


# --------------------------------------------------------------------------- running


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
    sys.stdout.write(format_ready_line(info) + "\n")
    sys.stdout.flush()


def run(args: argparse.Namespace) -> int:
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
    try:
        return _serve(args, SERVER_ENVS[args.target])
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        from openenv_gym.errors import PortInUseError

        raise PortInUseError(
            f"{args.host}:{args.port} is already in use (another server?): {exc.strerror}. "
            f"Stop the process listening there, or pick another port: `--port {args.port + 1}`, "
            "or `--port 0` for a free one (the READY line names it)."
        ) from exc


def _serve(args: argparse.Namespace, target: ServerEnvSpec) -> int:
    """Build and run the server (one process, or ``--workers K``)."""
    if args.workers > 1:
        return _run_workers(args, target)
    server = build_server(target, args)
    # Everything built so far lives until exit: keep it out of the collector, so neither
    # collections while serving nor the one at interpreter exit walk it (exit: ~0.4 s less).
    gc.freeze()
    if args.exit_with_parent:
        _watch_stdin(server.request_stop)
    from openenv_gym.server.unix_sockets import choose_unix_socket

    unix_path = choose_unix_socket(args.unix_socket)
    sockets = [unix_path] if unix_path else []
    server.run(
        args.host,
        args.port,
        on_ready=lambda host, port: _print_ready(host, port, sockets),
        unix_path=unix_path,
    )
    return EXIT_OK


def build_server(target: ServerEnvSpec, args: argparse.Namespace) -> OpenEnvServer:
    """Build ``target``'s server for parsed arguments (imports the builder, and the extra)."""
    return target.build_server(target.options_of(args), **server_kwargs(args))


def _run_workers(args: argparse.Namespace, target: ServerEnvSpec) -> int:
    """``serve --workers K``: K processes on one port (see :mod:`openenv_gym.server.workers`)."""
    import signal

    from openenv_gym.server.workers import run_workers

    build_server(
        target, args
    )  # once in the parent: bad arguments (an unknown env id) fail before forking
    gc.freeze()  # as in run(): a prompt exit
    stop = threading.Event()
    stop_signals = (signal.SIGINT, signal.SIGTERM)
    previous = [signal.signal(sig, lambda *_: stop.set()) for sig in stop_signals]
    if args.exit_with_parent:
        _watch_stdin(stop.set)
    from openenv_gym.server.unix_sockets import choose_unix_socket

    unix_path = choose_unix_socket(args.unix_socket)
    sockets = [f"{unix_path}.{k}" for k in range(args.workers)] if unix_path else []
    try:
        run_workers(
            lambda: build_server(target, args),
            host=args.host,
            port=args.port,
            workers=args.workers,
            max_sessions=args.max_sessions,
            on_ready=lambda host, port: _print_ready(host, port, sockets),
            stop=stop,
            unix_paths=sockets or None,
        )
    finally:  # a host process (pytest) stops on Ctrl-C again afterwards
        for sig, handler in zip(stop_signals, previous, strict=True):
            if handler is not None:
                signal.signal(sig, handler)
    return EXIT_OK


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One sub-command per :data:`~openenv_gym.envs.registry.SERVER_ENVS` entry, each with
    its options and the shared server flags."""
    targets = parser.add_subparsers(dest="target", metavar="TARGET", required=True)
    for target in SERVER_ENVS.values():
        sub = targets.add_parser(
            target.name,
            help=target.help,
            description=target.serve_description,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            parents=[common_options()],
        )
        target.options.add_arguments(sub.add_argument_group(f"{target.name} options"))
        add_server_options(sub)


COMMAND: Final = Command(
    name="serve",
    help="run an OpenEnv server (gymnasium, atari, chess)",
    description="Run an OpenEnv-protocol server (WebSocket /ws plus GET /health, /schema,\n"
    "/metadata, /state). It prints one line once it listens:\n"
    f'  {READY_PREFIX}{{"host": ..., "port": ..., "url": ...}}\n'
    "and serves until SIGINT/SIGTERM (exit code 0). `openenv-gym serve TARGET --help`\n"
    "lists a target's options.",
    add_arguments=add_arguments,
    run=run,
)

__all__ = [
    "COMMAND",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "add_server_options",
    "build_server",
    "server_kwargs",
]
