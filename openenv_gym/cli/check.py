"""openenv-gym check URL: is this an OpenEnv server our Gymnasium env can train on?

Checks, in order: GET /health, GET /schema, GET /metadata, the Gymnasium spaces derived
from the schema (printed as a tree), one episode with random actions over the WebSocket,
and gymnasium's check_env. It prints a report meant to be pasted into an issue and exits
with 1 when a check fails (0 when all pass); --debug adds tracebacks to the report.
A server started with a token needs --token (or OPENENV_TOKEN).

Example:

    $ openenv-gym check http://127.0.0.1:8000
    openenv-gym check http://127.0.0.1:8000
      openenv-gym 0.1.0, gymnasium 1.2.2, numpy 2.4.6, Python 3.11.7 (Linux-...)
    [ok]   health     {"status": "healthy"} in 2.1 ms
    ...
    result: PASS (6 checks)
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import platform
import re
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, TextIO

from gymnasium import spaces

from openenv_gym.cli.arguments import positive_int
from openenv_gym.cli.command import Command, description_from_docstring
from openenv_gym.spaces.describe import describe_space

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class CheckResult:
    """One line of the report: a check's name, outcome and details."""

    name: str
    ok: bool
    summary: str
    details: list[str] = field(default_factory=list)


def space_tree(space: spaces.Space[Any], name: str = "", indent: str = "") -> list[str]:
    """The space as an indented tree, one line per (sub)space.

    Example:
        >>> tree = space_tree(spaces.Dict([("x", spaces.Discrete(3)), ("y", spaces.Box(0, 1))]))
        >>> print("\\n".join(tree))
        Dict
        ├── x: Discrete(3)
        └── y: Box(0.0, 1.0, (1,), float32)
    """
    label = f"{name}: " if name else ""
    children: list[tuple[str, spaces.Space[Any]]] = []
    if isinstance(space, spaces.Dict):
        children = list(space.spaces.items())
        head = "Dict"
    elif isinstance(space, spaces.Tuple):
        children = [(f"[{i}]", sub) for i, sub in enumerate(space.spaces)]
        head = "Tuple"
    else:
        head = describe_space(space)
    lines = [f"{label}{head}"]
    for index, (key, sub) in enumerate(children):
        last = index == len(children) - 1
        sub_lines = space_tree(sub, str(key))
        lines.append(("└── " if last else "├── ") + sub_lines[0])
        lines += [("    " if last else "│   ") + line for line in sub_lines[1:]]
    return [indent + line for line in lines]


def _versions() -> str:
    found = []
    for package in ("openenv-gym", "gymnasium", "numpy", "websockets", "pydantic"):
        try:
            found.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{package} (not installed)")
    python = platform.python_version()
    return ", ".join(found) + f", Python {python} ({platform.platform()})"


class Checker:
    """Runs the checks against one URL and collects :class:`CheckResult` lines."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None,
        max_steps: int,
        seed: int,
        timeout: float,
        debug: bool,
    ) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.max_steps = max_steps
        self.seed = seed
        self.timeout = timeout
        self.debug = debug
        self.results: list[CheckResult] = []
        self.env: Any = None

    def _run(self, name: str, check: Callable[[], tuple[str, list[str]]]) -> bool:
        try:
            summary, details = check()
        except Exception as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            details = traceback.format_exc().rstrip().splitlines() if self.debug else []
            self.results.append(CheckResult(name, False, f"{type(exc).__name__}: {first}", details))
            return False
        self.results.append(CheckResult(name, True, summary, details))
        return True

    def health(self) -> tuple[str, list[str]]:
        from openenv_gym.client import get_json
        from openenv_gym.wire.messages import HEALTH_PATH

        started = time.perf_counter()
        body = get_json(self.url, HEALTH_PATH, timeout=self.timeout, token=self.token)
        elapsed = (time.perf_counter() - started) * 1000
        if not (isinstance(body, dict) and body.get("status") == "healthy"):
            raise ValueError(f'expected {{"status": "healthy"}}, got {json.dumps(body)[:200]}')
        return f"{json.dumps(body)} in {elapsed:.1f} ms", []

    def schema(self) -> tuple[str, list[str]]:
        from openenv_gym.client import fetch_schema

        schema = fetch_schema(self.url, timeout=self.timeout, token=self.token)
        parts = []
        for key in ("action", "observation", "state"):
            fields = list((schema.get(key) or {}).get("properties", {}))
            parts.append(f"{key}: {', '.join(fields) or '(no fields)'}")
        return "action, observation and state schemas present", parts

    def metadata(self) -> tuple[str, list[str]]:
        from openenv_gym.client import get_json
        from openenv_gym.wire.messages import METADATA_PATH

        body = get_json(self.url, METADATA_PATH, timeout=self.timeout, token=self.token)
        if not isinstance(body, dict):
            raise ValueError(f"expected a JSON object, got {json.dumps(body)[:200]}")
        shown = {k: body[k] for k in ("name", "version") if body.get(k) is not None}
        return json.dumps(shown) if shown else "(no name/version)", []

    def spaces(self) -> tuple[str, list[str]]:
        from openenv_gym.env import OpenEnvEnv

        self.env = OpenEnvEnv(self.url, token=self.token, connect_timeout=self.timeout)
        lines = space_tree(self.env.action_space, "action_space")
        lines += space_tree(self.env.observation_space, "observation_space")
        return "derived from the schema", lines

    def episode(self) -> tuple[str, list[str]]:
        env = self.env
        env.action_space.seed(self.seed)
        observation, _ = env.reset(seed=self.seed)
        if observation not in env.observation_space:
            raise ValueError("the reset observation is not in the observation space")
        total, steps, ended = 0.0, 0, "not finished"
        started = time.perf_counter()
        while steps < self.max_steps:
            observation, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            steps += 1
            total += reward
            if observation not in env.observation_space:
                raise ValueError(f"step {steps}: the observation is not in the observation space")
            if terminated or truncated:
                ended = "terminated" if terminated else "truncated"
                break
        elapsed = time.perf_counter() - started
        rate = steps / elapsed if elapsed > 0 else float("inf")
        if ended == "not finished":
            ended = f"not finished within --max-steps {self.max_steps}"
        return f"{steps} steps, return {total:g}, {ended} ({rate:.0f} steps/s)", []

    def check_env(self) -> tuple[str, list[str]]:
        from gymnasium.utils.env_checker import check_env

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(self.env, skip_render_check=True)
        details = [f"warning: {_ANSI.sub('', str(w.message)).splitlines()[0]}" for w in caught]
        return f"passed ({len(caught)} warning(s))", details

    def run_all(self) -> bool:
        """Run every check (later ones only when they can); return whether all passed."""
        try:
            if self._run("health", self.health) and self._run("schema", self.schema):
                self._run("metadata", self.metadata)
                if self._run("spaces", self.spaces):
                    self._run("episode", self.episode)
                    self._run("check_env", self.check_env)
        finally:
            if self.env is not None:
                self.env.close()
        return all(result.ok for result in self.results)

    def report(self, out: TextIO) -> None:
        """Write the report."""
        out.write(f"openenv-gym check {self.url}\n  {_versions()}\n")
        for result in self.results:
            mark = "[ok]  " if result.ok else "[FAIL]"
            out.write(f"{mark} {result.name:<10} {result.summary}\n")
            for line in result.details:
                out.write(f"         {line}\n")
        failed = [r.name for r in self.results if not r.ok]
        verdict = f"FAIL ({', '.join(failed)})" if failed else "PASS"
        out.write(f"result: {verdict} ({len(self.results)} checks)\n")
        out.flush()


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
        "--timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds for each HTTP call and for opening the session (default: 10)",
    )


def run(args: argparse.Namespace) -> int:
    """Run the checks, print the report; 0 when all pass, 1 otherwise."""
    checker = Checker(
        args.url,
        token=args.token,
        max_steps=args.max_steps,
        seed=args.seed,
        timeout=args.timeout,
        debug=bool(getattr(args, "debug", False)),
    )
    passed = checker.run_all()
    checker.report(sys.stdout)
    return 0 if passed else 1


COMMAND: Final = Command(
    name="check",
    help="check an OpenEnv server and print a report",
    description=description_from_docstring(__doc__),
    add_arguments=add_arguments,
    run=run,
)
