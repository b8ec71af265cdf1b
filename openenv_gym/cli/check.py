"""openenv-gym check URL: is this an OpenEnv server our Gymnasium env can train on?

Checks, in order: GET /health (any 2xx is healthy), GET /schema (else the models in FastAPI's
GET /openapi.json), GET /metadata (optional: a missing one is a note, not a failure), the
Gymnasium spaces derived from the schema (printed as a tree with their sources, the shapes
taken from the reset observation and the fields left to info), one episode with random
(legal, where the observation lists them) actions in the form agreed (WebSocket, or HTTP for
a server without /ws), and gymnasium's check_env with its defaults (render modes included).
Each runs when it can: only an unreachable server or a refused token stops the rest. It prints a
report meant to be pasted into an issue, ending with the ``gym.make(...)`` call that works
(the options given plus the pins of the shapes taken from the data) and, on a failure, the
``cause:`` (the first real one); it exits with 1 when a check fails (0 when all pass). A
server that ignores the seed or steps at random (a random opponent) is a server finding,
never a failure. --json prints the same as one JSON object; --debug adds tracebacks.
``--episodes K`` (default 5, 0 for none) then surveys K short random episodes on a session
of its own and lists the values each field held, labelled as observed (ranges, shapes,
lengths, how often ``None``, the legal actions): a sample to choose a pin from, never made
into a space (:mod:`openenv_gym.cli.survey`).
A server started with a token needs --token (or OPENENV_TOKEN).

The mapping options are those of ``gym.make("openenv/Remote-v0", ...)``:
``--observation-exclude F``, ``--action-include F``, ``--observation-field-shape F=4,4``,
``--action-field-shape F=6``, ``--observation-field-space F=JSON`` and
``--action-field-space F=JSON`` (a space as ``openenv_gym.spaces.space_to_json`` writes it,
e.g. ``'{"type": "Discrete", "n": 7}'``); each may be repeated. ``--action-model
module:Class`` and ``--observation-model module:Class`` are ``action_model=`` and
``observation_model=`` (the environment's own Pydantic class or dataclass, imported with
the current directory on the path, as ``python -m`` would).

Example:

    $ openenv-gym check http://127.0.0.1:8000
    openenv-gym check http://127.0.0.1:8000
      openenv-gym 0.1.0, gymnasium 1.2.2, numpy 2.4.6, Python 3.11.7 (Linux-...)
    [ok]   health     HTTP 200 {"status":"healthy"} in 2.1 ms
    ...
    works: gym.make('openenv/Remote-v0', base_url='http://127.0.0.1:8000')
    form: websocket+binary_zstd_measured
    result: PASS (6 checks)
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any, Final

from gymnasium import spaces

from openenv_gym.argument_types import int_argument, positive_int
from openenv_gym.cli.checker import Checker
from openenv_gym.cli.command import Command, UsageError
from openenv_gym.errors import SpaceMappingError

#: Episodes ``--episodes`` surveys unless told (short ones: see :mod:`openenv_gym.cli.survey`).
DEFAULT_SURVEY_EPISODES: Final = 5
#: ``--episodes K``: ``0..100``.
survey_episodes = int_argument(
    "a number of episodes", minimum=0, maximum=100, bound="a number of episodes in 0..100"
)
#: The URL schemes a server address may have (ws/wss: the WebSocket address of the same server).
URL_SCHEMES: Final = ("http://", "https://", "ws://", "wss://")


def check_url(url: str) -> str:
    """``url`` when it has a scheme; else a :class:`UsageError` naming the command to run.

    Example:
        >>> check_url("http://127.0.0.1:8000")
        'http://127.0.0.1:8000'
        >>> check_url("127.0.0.1:8000")
        Traceback (most recent call last):
        ...
        openenv_gym.cli.command.UsageError: expected a URL starting with http://, https://, \
ws:// or wss://, got '127.0.0.1:8000'; run: openenv-gym check http://127.0.0.1:8000
    """
    if url.lower().startswith(URL_SCHEMES):
        return url
    return_url = "http://" + url.split("://", 1)[-1]
    raise UsageError(
        f"expected a URL starting with {', '.join(URL_SCHEMES[:-1])} or {URL_SCHEMES[-1]}, "
        f"got {url!r}; run: openenv-gym check {return_url}"
    )


def _field_option(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected FIELD=VALUE, got {text!r}")
    return name, value


def field_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """``"screen=210,160,3"`` -> ``("screen", (210, 160, 3))``."""
    name, value = _field_option(text)
    try:
        shape = tuple(int(n) for n in value.replace("(", "").replace(")", "").split(",") if n)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected FIELD=N[,N...] (e.g. screen=210,160,3), got {text!r}"
        ) from None
    if any(n < 0 for n in shape):
        raise argparse.ArgumentTypeError(f"expected sizes >= 0, got {text!r}")
    return name, shape


def field_space(text: str) -> tuple[str, spaces.Space[Any]]:
    """``'action_id={"type": "Discrete", "n": 6}'`` -> ``("action_id", Discrete(6))``."""
    from openenv_gym.errors import CodecError
    from openenv_gym.spaces import space_from_json

    name, value = _field_option(text)
    try:
        return name, space_from_json(json.loads(value), field=name)
    except (ValueError, CodecError, SpaceMappingError) as exc:
        raise argparse.ArgumentTypeError(
            f'expected FIELD=JSON of a space (e.g. \'action_id={{"type": "Discrete", '
            f'"n": 6}}\'), got {text!r}: {exc}'
        ) from None


def model_class(text: str) -> type:
    """``"models:WalkAction"`` -> the class ``WalkAction`` of module ``models`` (imported
    with the current directory first on ``sys.path``, as ``python -m`` would).

    Example:
        >>> model_class("fractions:Fraction")
        <class 'fractions.Fraction'>
        >>> model_class("fractions.Fraction")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: expected MODULE:CLASS (e.g. models:MyAction, the module \
importable from the current directory), got 'fractions.Fraction'
    """
    module_name, sep, name = text.partition(":")
    if not sep or not module_name or not name:
        raise argparse.ArgumentTypeError(
            "expected MODULE:CLASS (e.g. models:MyAction, the module importable from the "
            f"current directory), got {text!r}"
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise argparse.ArgumentTypeError(
            f"cannot import {module_name!r} for {text!r}: {exc}; run from the directory that "
            "holds it, or set PYTHONPATH"
        ) from None
    found: Any = module
    for part in name.split("."):
        if not hasattr(found, part):
            classes = (k for k, v in vars(module).items() if isinstance(v, type) and k[0] != "_")
            raise argparse.ArgumentTypeError(
                f"module {module_name!r} has no {name!r} (for {text!r}); its classes: "
                + ", ".join(classes)[:300]
            )
        found = getattr(found, part)
    if not isinstance(found, type):
        raise argparse.ArgumentTypeError(
            f"expected {text!r} to name a class (a Pydantic model or a dataclass), got "
            f"{type(found).__name__}"
        )
    return found


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``check`` options."""
    parser.add_argument("url", metavar="URL", help="the server, e.g. http://127.0.0.1:8000")
    parser.add_argument(
        "--token",
        default=None,
        help="bearer token for the server (default: $OPENENV_TOKEN)",
    )
    parser.add_argument(
        "--max-steps",
        type=positive_int,
        default=1000,
        metavar="N",
        help="longest episode to play (default: 1000)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="reset seed and action sampling seed (default: 0)"
    )
    parser.add_argument(
        "--episodes",
        type=survey_episodes,
        default=DEFAULT_SURVEY_EPISODES,
        metavar="K",
        help="survey K short random episodes and report the values observed (never made "
        f"into a space; 0: no survey; default: {DEFAULT_SURVEY_EPISODES})",
    )
    mapping = parser.add_argument_group(
        "mapping options (those of gym.make('openenv/Remote-v0', ...); each may be repeated)"
    )
    mapping.add_argument(
        "--observation-exclude",
        action="append",
        default=[],
        metavar="FIELD",
        help="leave an observation field out of the space (it goes to info)",
    )
    mapping.add_argument(
        "--action-include",
        action="append",
        default=[],
        metavar="FIELD",
        help="put an optional action field (one with a default) into the action space",
    )
    for role in ("observation", "action"):
        for flag, parse, metavar, help_text in (
            ("shape", field_shape, "FIELD=N,N", f"the shape of a {role} array of unstated length"),
            (
                "space",
                field_space,
                "FIELD=JSON",
                f"an explicit space for a {role} field, as JSON (space_to_json)",
            ),
        ):
            mapping.add_argument(
                f"--{role}-field-{flag}",
                action="append",
                type=parse,
                default=[],
                metavar=metavar,
                help=help_text,
            )
    for role in ("action", "observation"):
        mapping.add_argument(
            f"--{role}-model",
            type=model_class,
            default=None,
            metavar="MODULE:CLASS",
            help=f"the env's own {role} class (Pydantic or dataclass), as gym.make's "
            f"{role}_model=; imported from the current directory",
        )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the report as one JSON object (checks, inferred spaces, gym.make call)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds for each HTTP call and for opening the session (default: 10)",
    )


def run(args: argparse.Namespace) -> int:
    """Run the checks, print the report; 0 when all pass, 1 otherwise."""
    checker = Checker(
        check_url(args.url),
        token=args.token,
        max_steps=args.max_steps,
        seed=args.seed,
        timeout=args.timeout,
        debug=bool(getattr(args, "debug", False)),
        episodes=args.episodes,
        mapping={
            "observation_exclude": list(args.observation_exclude),
            "action_include": list(args.action_include),
            "observation_field_shapes": dict(args.observation_field_shape),
            "action_field_shapes": dict(args.action_field_shape),
            "observation_field_spaces": dict(args.observation_field_space),
            "action_field_spaces": dict(args.action_field_space),
            "action_model": args.action_model,
            "observation_model": args.observation_model,
        },
    )
    passed = checker.run_all()
    if args.json:
        checker.report_json(sys.stdout)
    else:
        checker.report(sys.stdout)
    return 0 if passed else 1


COMMAND: Final = Command(
    name="check",
    help="check an OpenEnv server and print a report",
    add_arguments=add_arguments,
    run=run,
)
