"""The checks of ``openenv-gym check`` and their report: :class:`Checker` runs them against
one URL (health, schema, metadata, the derived spaces, one episode, gymnasium's
``check_env``, the survey) and writes the report as text or JSON.

The command line (:mod:`openenv_gym.cli.check`) parses the options and calls it; tests and
scripts may call it directly.

Example:
    >>> print("\\n".join(space_tree(spaces.Dict([("x", spaces.Discrete(3))]))))
    Dict
    └── x: Discrete(3)
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import re
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any, Final, TextIO

from gymnasium import spaces

from openenv_gym.cli.check_findings import (
    DETERMINISM,
    CheckResult,
    finding,
    randomness,
    refuses_illegal,
    sample_action,
)
from openenv_gym.errors import PicklableError, ServerReplyError, SpaceMappingError
from openenv_gym.spaces.describe import describe_space

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: The checks on the env's own way to play (the others, /health and /metadata, inform).
ENV_PATH: Final = ("schema", "spaces", "episode", "check_env")
#: The Gymnasium id to use for a server whose schema is one of our game schemas (the official
#: OpenEnv ones): (action fields, observation fields) it must have -> id.
GAME_ENV_IDS: Final = (
    (frozenset({"action_id"}), frozenset({"screen", "screen_shape", "legal_actions"}), "Atari-v0"),
    (frozenset({"move"}), frozenset({"fen", "legal_moves"}), "Chess-v0"),
)


def game_env_id(schema: dict[str, Any]) -> str | None:
    """``"openenv/Atari-v0"`` or ``"openenv/Chess-v0"`` for a server speaking that game's
    schema (ours or the official one), else ``None`` (``openenv/Remote-v0`` then).

    Example:
        >>> game_env_id({"action": {"properties": {"move": {}}},
        ...              "observation": {"properties": {"fen": {}, "legal_moves": {}}}})
        'openenv/Chess-v0'
        >>> game_env_id({"action": {"properties": {"x": {}}}}) is None
        True
    """
    action = set((schema.get("action") or {}).get("properties") or {})
    observation = set((schema.get("observation") or {}).get("properties") or {})
    for needs_action, needs_observation, env_id in GAME_ENV_IDS:
        if needs_action <= action and needs_observation <= observation:
            return f"openenv/{env_id}"
    return None


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
        mapping: dict[str, Any] | None = None,
        episodes: int = 0,
    ) -> None:
        self.url = url.rstrip("/")
        self.episodes = episodes
        self.schema_body: dict[str, Any] = {}
        #: ``--episodes``: the survey's (summary, details), reported apart from the checks.
        self.survey_report: tuple[str, list[str]] | None = None
        self.mapping = {k: v for k, v in (mapping or {}).items() if v}
        self.make_call: str | None = None
        self.token = token
        self.max_steps = max_steps
        self.seed = seed
        self.timeout = timeout
        self.debug = debug
        self.results: list[CheckResult] = []
        #: The server's own properties found on the way (e.g. it ignores seeds): reported
        #: apart, they do not fail the check.
        self.findings: list[CheckResult] = []
        self.env: Any = None
        self._probed_form: str | None = None
        self.env_id = "openenv/Remote-v0"
        #: The error of the last check run, ``None`` when it passed.
        self.last_error: Exception | None = None

    def _run(self, name: str, check: Callable[[], tuple[str, list[str]]]) -> bool:
        self.last_error = None
        try:
            summary, details = check()
        except _NoteError as note:
            self.results.append(CheckResult(name, True, str(note), note=True))
            return True
        except Exception as exc:
            self.last_error = exc
            lines = str(exc).splitlines()
            first = lines[0] if lines else ""
            details = lines[1:] if isinstance(exc, SpaceMappingError) else []
            if self.debug:
                details += traceback.format_exc().rstrip().splitlines()
            self.results.append(CheckResult(name, False, f"{type(exc).__name__}: {first}", details))
            return False
        self.results.append(CheckResult(name, True, summary, details))
        return True

    def health(self) -> tuple[str, list[str]]:
        from openenv_gym.client import health

        started = time.perf_counter()
        status, body = health(self.url, timeout=self.timeout, token=self.token)
        elapsed = (time.perf_counter() - started) * 1000
        if not 200 <= status < 300:  # any 2xx is healthy: {"status": "ok"}, an empty body
            raise ValueError(f"expected HTTP 2xx from GET /health, got {status}: {body[:200]!r}")
        return f"HTTP {status} {body[:200] or '(empty body)'} in {elapsed:.1f} ms", []

    def schema(self) -> tuple[str, list[str]]:
        from openenv_gym.env_mapping import SpaceMapper
        from openenv_gym.spaces.sources import SCHEMA_SOURCE

        # GET /schema, else the other sources (FastAPI's /openapi.json): a server without
        # /schema whose models are elsewhere passes; with none, the error names action_model=.
        mapper = SpaceMapper(self.url, token=self.token, timeout=self.timeout, options={})
        models = (self.mapping.get("action_model"), self.mapping.get("observation_model"))
        found = mapper.find_schemas(*models)
        schema = found.schema
        self.schema_body = schema
        game = game_env_id(schema)
        if game is not None and not self.mapping:  # the mapping options are Remote-v0's
            self.env_id = game
        parts = []
        for key in ("action", "observation", "state"):
            fields = list((schema.get(key) or {}).get("properties", {}))
            parts.append(f"{key}: {', '.join(fields) or '(no fields)'}")
        if found.sources.action == found.sources.observation == SCHEMA_SOURCE:
            return "action, observation and state schemas present", parts
        return f"no GET /schema: {found.sources.describe()}", parts

    def metadata(self) -> tuple[str, list[str]]:
        """``GET /metadata``: optional (first-release servers and plain FastAPI apps have
        none), so its absence is a note, not a failure; the verdict is whether the env plays."""
        from openenv_gym.client import get_json
        from openenv_gym.errors import NotAnOpenEnvServerError
        from openenv_gym.wire.messages import METADATA_PATH

        try:
            body = get_json(self.url, METADATA_PATH, timeout=self.timeout, token=self.token)
        except NotAnOpenEnvServerError as exc:  # 404, not JSON (a refused token is not one)
            raise _NoteError(f"none: {exc} (optional; the env does not need it)") from None
        if not isinstance(body, dict):
            raise _NoteError(f"not a JSON object (optional; ignored): {json.dumps(body)[:200]}")
        shown = {k: body[k] for k in ("name", "version") if body.get(k) is not None}
        return json.dumps(shown) if shown else "(no name/version)", []

    def spaces(self) -> tuple[str, list[str]]:
        import gymnasium as gym

        import openenv_gym  # noqa: F401  (registers the openenv/... ids)

        made = gym.make(
            self.env_id,
            base_url=self.url,
            token=self.token,
            connect_timeout=self.timeout,
            disable_env_checker=True,
            **self.mapping,
        )
        self.env = made.unwrapped
        env = self.env
        lines = [f"sources: {env.space_sources.describe()}"]
        lines += space_tree(env.action_space, "action_space")
        lines += space_tree(env.observation_space, "observation_space")
        for inference in env.inferred_spaces:
            lines.append(f"taken from the data: {inference.describe()}")
        for path, why in env.action_codec.left_out.items():
            lines.append(f"left out of the action: {path!r} ({why})")
        codec = env.observation_codec
        for path, why in codec.variable.items():
            lines.append(f"left to info: {path!r} ({why})")
        if codec.legal_key is not None and env.action_codec.maskable:
            lines.append(f"action_masks(): from {codec.legal_key!r}")
        kwargs = [f"{k}={v!r}" for k, v in self._mapping_source().items()]
        pins = env.pinning_kwargs()
        self.make_call = (
            f"gym.make({self.env_id!r}, base_url={self.url!r}"
            + "".join(f", {k}" for k in kwargs)
            + (f", {pins}" if pins else "")
            + ")"
        )
        summary = "derived from the schema"
        if env.inferred_spaces:
            summary += f" and the reset observation ({len(env.inferred_spaces)} inferred)"
        return summary, lines

    @property
    def form(self) -> str | None:
        """The protocol form the env agreed with the server, in words (``None``: no env)."""
        from openenv_gym.client import form_summary

        form = getattr(self.env, "form", None) or self._probed_form
        return None if form is None else form_summary(form)

    def _probe_form(self) -> None:
        """Open (and close) a session to learn the form, when no env got as far; a failure
        leaves it unknown (the checks report the causes)."""
        from openenv_gym.client import ConnectOptions, open_session

        options = ConnectOptions(token=self.token, connect_timeout=self.timeout)
        try:
            session = open_session(self.url, options)
        except Exception:  # the form is context; the checks already say what failed
            return
        self._probed_form = session.form
        session.close()

    def _mapping_source(self) -> dict[str, Any]:
        """The options given, as values whose repr is Python source for ``gym.make``."""
        out: dict[str, Any] = {}
        for key, value in self.mapping.items():
            if key.endswith("field_spaces"):
                out[key] = {path: _SpaceSource(space) for path, space in value.items()}
            elif key.endswith("_model"):  # the class, as `module.Class` (import module)
                out[key] = _Verbatim(f"{value.__module__}.{value.__qualname__}")
            else:
                out[key] = value
        return out

    def episode(self) -> tuple[str, list[str]]:
        env = self.env
        env.action_space.seed(self.seed)
        observation, _ = env.reset(seed=self.seed)
        if observation not in env.observation_space:
            raise ValueError("the reset observation is not in the observation space")
        total, steps, ended = 0.0, 0, "not finished"
        started = time.perf_counter()
        while steps < self.max_steps:
            observation, reward, terminated, truncated, _ = env.step(sample_action(env))
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

        found = randomness(self.env, self.seed)
        self.findings += found
        # A server of the http form holds one environment: a second env (the close check's)
        # cannot open beside this one.
        one_env = self.env.form == "http"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                check_env(self.env, skip_close_check=one_env)
            except ServerReplyError as exc:  # a refused unmasked action: a finding, or a FAIL
                self.findings += [refused] if (refused := refuses_illegal(exc, self.env)) else []
                if refused is None:
                    raise
                return "passed up to Gymnasium's unmasked random step (see illegal actions)", []
            except AssertionError as exc:
                if not DETERMINISM.search(str(exc)):
                    raise
                if not found:  # check_env saw what the tries did not
                    name = "seeding" if "reset" in str(exc) else "stepping"
                    found = [finding(name, self.seed)]
                    self.findings += found
                names = ", ".join(f.name for f in found)
                return f"passed up to Gymnasium's determinism check (see {names} below)", []
        details = [f"warning: {_ANSI.sub('', str(w.message)).splitlines()[0]}" for w in caught]
        if one_env:
            details.append("close check skipped: the server holds one environment (form http)")
        return f"passed ({len(caught)} warning(s))", details

    def survey(self) -> tuple[str, list[str]]:
        """``--episodes K``: what the server sent over K short episodes, as observed (its
        own session, opened after the env's is closed: one-session servers take it)."""
        from openenv_gym.cli.survey import survey_server

        mapped = any(r.name == "spaces" and r.ok for r in self.results)
        return survey_server(
            self.url,
            self.schema_body,
            self.env if mapped else None,
            episodes=self.episodes,
            seed=self.seed,
            timeout=self.timeout,
            token=self.token,
        )

    def run_all(self) -> bool:
        """Run every check that can run; return whether all passed.

        A failed check stops the others only when they cannot run at all: the server is
        unreachable, or refused the token. Otherwise each runs (a ``/health`` or
        ``/schema`` that failed does not hide the spaces' own verdict); the episode and
        ``check_env`` need the spaces. :meth:`cause` names the first real cause.
        """
        schema_ok = False
        try:
            if self._run("health", self.health) or not self._unreachable():
                schema_ok = self._run("schema", self.schema)
                if schema_ok or not self._unreachable():
                    self._run("metadata", self.metadata)
                    if self._run("spaces", self.spaces):
                        self._run("episode", self.episode)
                        self._run("check_env", self.check_env)
        finally:
            if self.env is not None:
                self.env.close()
        if self.env is None and self.results[0].ok:  # healthy, but no env: what form?
            self._probe_form()
        if schema_ok and self.episodes:
            try:
                self.survey_report = self.survey()
            except Exception as exc:  # the survey informs; it never fails the check
                lines = str(exc).splitlines()
                self.survey_report = (f"not run: {type(exc).__name__}: {lines[0]}", [])
        return all(result.ok for result in self.results)

    def _unreachable(self) -> bool:
        """Whether the last check failed because nothing can be asked of the server:
        connection refused or timed out, or the token refused."""
        from openenv_gym.errors import NotAnOpenEnvServerError, ServerConnectionError

        error = self.last_error
        return isinstance(error, ServerConnectionError) and not isinstance(
            error, NotAnOpenEnvServerError
        )

    def cause(self) -> CheckResult | None:
        """The first real cause of a failed check: the first failure on the env's own path
        (schema, spaces, episode, check_env), else the first failure; ``None`` when all
        passed. A failed ``/health`` or ``/metadata`` is reported, but a server whose env
        does not play failed for the reason the env gave."""
        failed = [r for r in self.results if not r.ok]
        on_path = [r for r in failed if r.name in ENV_PATH]
        first = on_path or failed
        return first[0] if first else None

    def report(self, out: TextIO) -> None:
        """Write the report."""
        out.write(f"openenv-gym check {self.url}\n  {_versions()}\n")
        for result in self.results:
            mark = "[note]" if result.note else "[ok]  " if result.ok else "[FAIL]"
            out.write(f"{mark} {result.name:<10} {result.summary}\n")
            for line in result.details:
                out.write(f"         {line}\n")
        for server in self.findings:
            out.write(f"[server] {server.name:<10} {server.summary}\n")
            for line in server.details:
                out.write(f"         {line}\n")
        if self.survey_report is not None:
            summary, details = self.survey_report
            out.write(f"[survey] {summary}\n")
            for line in details:
                out.write(f"         {line}\n")
        failed = [r.name for r in self.results if not r.ok]
        verdict = f"FAIL ({', '.join(failed)})" if failed else "PASS"
        if self.make_call is not None:
            out.write(f"works: {self.make_call}\n" if not failed else f"tried: {self.make_call}\n")
        if self.form is not None:
            out.write(f"form: {self.form}\n")
        cause = self.cause()
        if cause is not None:
            out.write(f"cause: {cause.name}: {cause.summary}\n")
        found = ", ".join(f.name for f in self.findings)
        found = f"; server findings: {found}" if found else ""
        out.write(f"result: {verdict} ({len(self.results)} checks{found})\n")
        out.flush()

    def report_json(self, out: TextIO) -> None:
        """Write the report as one JSON object."""
        env = self.env
        cause = self.cause()
        body = {
            "url": self.url,
            "versions": _versions(),
            "passed": all(r.ok for r in self.results),
            "cause": None if cause is None else {"check": cause.name, "summary": cause.summary},
            "checks": [
                {
                    "name": r.name,
                    "ok": r.ok,
                    "note": r.note,
                    "summary": r.summary,
                    "details": r.details,
                }
                for r in self.results
            ],
            "server_findings": [
                {"name": f.name, "summary": f.summary, "details": f.details} for f in self.findings
            ],
            "survey": (
                None
                if self.survey_report is None
                else {"summary": self.survey_report[0], "details": self.survey_report[1]}
            ),
            "make_call": self.make_call,
            "form": getattr(env, "form", None) or self._probed_form,
            "space_sources": None if env is None else env.space_sources.describe(),
            "inferred": [
                {"role": i.role, "field": i.path, "space": i.value, "source": i.source}
                for i in (env.inferred_spaces if env is not None else ())
            ],
            "info_fields": dict(env.observation_codec.variable) if env is not None else {},
        }
        out.write(json.dumps(body, indent=2) + "\n")
        out.flush()


class _NoteError(PicklableError):
    """A check found something absent that the env does not need: reported, not failed."""


class _Verbatim(str):  # Python source whose repr is itself (a class's dotted name)
    __repr__ = str.__str__


class _SpaceSource:
    """A space whose repr is the ``gymnasium.spaces`` call that builds it."""

    def __init__(self, space: spaces.Space[Any]) -> None:
        self.space = space

    def __repr__(self) -> str:
        from openenv_gym.spaces.inference import space_source

        return space_source(self.space)


__all__ = ["ENV_PATH", "GAME_ENV_IDS", "Checker", "game_env_id", "space_tree"]
