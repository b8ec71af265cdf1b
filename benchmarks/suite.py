"""The measurement core: env specs, the action stream, timed loops, cells and servers.

A *cell* is one contender (e.g. gymnasium ``AsyncVectorEnv``) at one env and one number of
sub-envs N. Every cell is measured the same way: open the contender, run a short warm-up,
then step for a fixed wall time with the same seeded random actions, and count env steps
(N per vector step). Nothing in here prints results; :mod:`benchmarks.report` does.

Example:
    >>> stream = ActionStream(n_actions=2, num_envs=4, seed=0)
    >>> stream.next().shape
    (4,)
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, redirect_stderr
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import numpy as np

#: Statuses a cell can end with.
STATUS_OK: Final = "ok"
STATUS_SKIPPED: Final = "skipped"
STATUS_ERROR: Final = "error"

_ACTION_BLOCK: Final = 4096


@dataclass(frozen=True)
class EnvSpec:
    """One benchmarked environment, named the way each contender needs it.

    Attributes:
        name: Short name used in tables and ``--envs`` (``CartPole``, ``Pong``).
        gym_id: The Gymnasium id for the raw / Sync / Async contenders.
        make_kwargs: ``gymnasium.make`` keyword arguments.
        n_actions: Size of the Discrete action space (random actions are drawn from it).
        serve_args: ``openenv-gym serve ...`` arguments for our server.
        openenv_id: Our Gymnasium id for the same env served remotely.
        openenv_kwargs: Extra keyword arguments for our env / vector env.
        official_action_field: The action field name on the wire (for the official client).
        envpool_id: The envpool task id.
        envpool_kwargs: ``envpool.make`` keyword arguments matching ``make_kwargs``.
        requires_module: A module the raw env needs (``ale_py``), or ``None``.
    """

    name: str
    gym_id: str
    make_kwargs: dict[str, Any]
    n_actions: int
    serve_args: tuple[str, ...]
    openenv_id: str
    openenv_kwargs: dict[str, Any]
    official_action_field: str
    envpool_id: str
    envpool_kwargs: dict[str, Any]
    requires_module: str | None = None

    @property
    def serve_target(self) -> str:
        """The ``openenv-gym serve`` target name (``gymnasium``, ``atari``)."""
        return self.serve_args[0]


ENV_SPECS: Final[dict[str, EnvSpec]] = {
    "CartPole": EnvSpec(
        name="CartPole",
        gym_id="CartPole-v1",
        make_kwargs={},
        n_actions=2,
        serve_args=("gymnasium", "--env-id", "CartPole-v1"),
        openenv_id="openenv/CartPole-v1",
        openenv_kwargs={},
        official_action_field="action",
        envpool_id="CartPole-v1",
        envpool_kwargs={},
    ),
    "Pong": EnvSpec(
        name="Pong",
        gym_id="ALE/Pong-v5",
        # Our Atari server steps with frameskip 4 and no sticky actions: match it.
        make_kwargs={"frameskip": 4, "repeat_action_probability": 0.0},
        n_actions=6,
        serve_args=(
            "atari",
            "--game",
            "pong",
            "--obs-type",
            "rgb",
            "--frameskip",
            "4",
            "--repeat-action-probability",
            "0",
        ),
        openenv_id="openenv/Atari-v0",
        openenv_kwargs={"game": "pong"},
        official_action_field="action_id",
        envpool_id="Pong-v5",
        # Full RGB frames, no stacking, no sticky actions, no episodic life or clipping.
        envpool_kwargs={
            "frame_skip": 4,
            "repeat_action_probability": 0.0,
            "img_height": 210,
            "img_width": 160,
            "gray_scale": False,
            "stack_num": 1,
            "episodic_life": False,
            "reward_clip": False,
            "noop_max": 1,
        },
        requires_module="ale_py",
    ),
}


class ActionStream:
    """The same seeded random actions for every contender: one row of N actions per step.

    Args:
        n_actions: Actions are drawn from ``0 .. n_actions - 1``.
        num_envs: Actions per row (N).
        seed: The generator seed; equal seeds give equal streams.
    """

    def __init__(self, n_actions: int, num_envs: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self._block = rng.integers(0, n_actions, size=(_ACTION_BLOCK, num_envs), dtype=np.int64)
        self._index = 0

    def next(self) -> np.ndarray:
        """The next row of N actions (cycling through a fixed block)."""
        row = self._block[self._index]
        self._index = (self._index + 1) % _ACTION_BLOCK
        return row


class Driver(Protocol):
    """An opened contender: steps N envs for a wall time, then closes."""

    def run(self, actions: ActionStream, seconds: float) -> tuple[int, float]:
        """Step for about ``seconds``; return (vector steps done, elapsed seconds)."""
        ...

    def close(self) -> None:
        """Release envs, sessions and worker processes."""
        ...


def timed_loop(
    step: Callable[[np.ndarray], object], actions: ActionStream, seconds: float
) -> tuple[int, float]:
    """Call ``step(row)`` until ``seconds`` have passed; return (calls, elapsed seconds)."""
    clock = time.perf_counter
    start = clock()
    deadline = start + seconds
    calls = 0
    while True:
        step(actions.next())
        calls += 1
        now = clock()
        if now >= deadline:
            return calls, now - start


class LoopDriver:
    """A :class:`Driver` over a synchronous ``step(row)`` function.

    Args:
        step: Performs one vector step (N env steps) for a row of N actions.
        close: Releases what ``step`` uses.
    """

    def __init__(self, step: Callable[[np.ndarray], object], close: Callable[[], object]) -> None:
        self._step = step
        self._close = close

    def run(self, actions: ActionStream, seconds: float) -> tuple[int, float]:
        return timed_loop(self._step, actions, seconds)

    def close(self) -> None:
        self._close()


class ContenderUnavailableError(Exception):
    """A contender cannot run here (a missing package, server or feature); carries why."""


@dataclass
class CellResult:
    """One measured (or skipped) cell.

    Attributes:
        env: The env name (``CartPole``).
        contender: The contender key (``async``).
        label: Its human name (``gymnasium AsyncVectorEnv``).
        num_envs: N, or 0 for a contender skipped at every N.
        status: ``ok``, ``skipped`` or ``error``.
        steps_per_s: Env steps per wall second (``ok`` only).
        env_steps: Env steps counted in the timed window.
        seconds: Length of the timed window.
        reason: Why a cell was skipped or failed.
        setup_seconds: Time to open the contender (servers excluded), not part of the rate.
    """

    env: str
    contender: str
    label: str
    num_envs: int
    status: str
    steps_per_s: float | None = None
    env_steps: int = 0
    seconds: float = 0.0
    reason: str = ""
    setup_seconds: float = 0.0


@dataclass
class Settings:
    """How the suite runs.

    Attributes:
        envs: Env names from :data:`ENV_SPECS`, in order.
        sizes: The N values, in order.
        seconds: Timed window per cell.
        warmup: Warm-up before each timed window.
        servers: Our server processes per env (sessions are spread over them).
        workers: ``--workers`` per server process (``None``: the server's default).
        contenders: Contender keys to run (``None``: all).
        seed: The action stream seed.
    """

    envs: Sequence[str]
    sizes: Sequence[int]
    seconds: float = 3.0
    warmup: float = 0.5
    servers: int = 1
    workers: int | None = None
    contenders: Sequence[str] | None = None
    seed: int = 0


@dataclass
class Context:
    """What the contenders of one env share: the spec, our servers, the settings.

    Attributes:
        spec: The env.
        settings: The suite settings.
        urls: Base URLs of our running servers (empty when they could not start).
        server_problem: Why there are no servers, or ``""``.
        notes: Remarks for the report (e.g. ``--workers`` not supported).
    """

    spec: EnvSpec
    settings: Settings
    urls: list[str] = field(default_factory=list)
    server_problem: str = ""
    notes: list[str] = field(default_factory=list)

    def require_servers(self) -> list[str]:
        """Our servers' URLs, or :class:`ContenderUnavailableError` saying why there are none."""
        if not self.urls:
            raise ContenderUnavailableError(self.server_problem or "no server running")
        return self.urls


def measure(driver: Driver, actions: ActionStream, num_envs: int, settings: Settings) -> CellResult:
    """Warm up, then time ``driver``; returns an ``ok`` result without env/contender names."""
    if settings.warmup > 0:
        driver.run(actions, settings.warmup)
    vector_steps, elapsed = driver.run(actions, settings.seconds)
    env_steps = vector_steps * num_envs
    return CellResult(
        env="",
        contender="",
        label="",
        num_envs=num_envs,
        status=STATUS_OK,
        steps_per_s=env_steps / elapsed if elapsed > 0 else None,
        env_steps=env_steps,
        seconds=elapsed,
    )


def serve_option_supported(serve_args: Sequence[str], option: str, value: str) -> bool:
    """Whether ``openenv-gym serve <serve_args> <option> <value>`` parses in this install."""
    from openenv_gym.cli.program import build_parser

    try:
        with redirect_stderr(io.StringIO()):
            build_parser().parse_args(["serve", *serve_args, option, value])
    except SystemExit:
        return False
    return True


def serve_target_available(target: str) -> bool:
    """Whether ``openenv-gym serve <target>`` exists in this install."""
    from openenv_gym.cli.serve import SERVE_TARGETS

    return target in SERVE_TARGETS


@contextmanager
def running_servers(context: Context, log: Callable[[str], None]) -> Iterator[Context]:
    """Start ``settings.servers`` of our servers for ``context.spec`` (children, 127.0.0.1).

    A server that cannot start is not fatal: ``context.server_problem`` says why, and the
    contenders that need it are skipped with that reason.
    """
    from openenv_gym.providers import LocalServerProcess

    spec, settings = context.spec, context.settings
    if not serve_target_available(spec.serve_target):
        context.server_problem = (
            f"`openenv-gym serve {spec.serve_target}` is not in this install "
            f"(needs the {spec.serve_target} server)"
        )
        yield context
        return
    serve_args = list(spec.serve_args)
    if settings.workers is not None:
        if serve_option_supported(spec.serve_args, "--workers", str(settings.workers)):
            serve_args += ["--workers", str(settings.workers)]
        else:
            context.notes.append(
                f"`serve {spec.serve_target}` has no --workers option here: "
                f"ran {settings.servers} single-process server(s)"
            )
    with ExitStack() as stack:
        try:
            for _ in range(settings.servers):
                server = LocalServerProcess(serve_args)
                stack.callback(server.stop)
                context.urls.append(server.start())
        except Exception as exc:
            context.urls.clear()
            context.server_problem = f"our server did not start: {_one_line(exc)}"
        else:
            log(f"[{spec.name}] servers: {', '.join(context.urls)} ({' '.join(serve_args)})")
        yield context


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
