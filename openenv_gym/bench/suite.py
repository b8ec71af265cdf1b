"""The full suite: every contender for CartPole and Pong at N sub-envs, on this machine.

Our servers (``openenv-gym serve ...``) run as child processes on 127.0.0.1 for the
duration of each env's cells; every other contender runs in this process (and its workers).

Example:
    >>> settings = Settings(envs=["CartPole"], sizes=[1, 8])
    >>> [(cell.key, cell.num_envs) for cell in plan(settings)[0].cells][:3]
    [('raw', 1), ('official-sync', 1), ('ours-env', 1)]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from functools import partial
from typing import Any

from openenv_gym.bench.contenders import CONTENDERS, Contender
from openenv_gym.bench.context import ENV_SPECS, Context, EnvSpec, Settings, running_servers
from openenv_gym.bench.links import PROFILES
from openenv_gym.bench.measure import ActionStream
from openenv_gym.bench.options import (
    DEFAULT_SECONDS,
    DEFAULT_SIZES,
    MAX_WARMUP,
    QUICK_SECONDS,
    QUICK_SIZES,
    workers,
)
from openenv_gym.bench.runner import Group, Log, PlannedCell, stderr_line


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The :class:`Settings` for parsed arguments (``--quick`` fills what was not given)."""
    seconds = args.seconds or (QUICK_SECONDS if args.quick else DEFAULT_SECONDS)
    return Settings(
        envs=args.envs or default_envs(args.quick, args.contenders),
        sizes=args.n or list(QUICK_SIZES if args.quick else DEFAULT_SIZES),
        seconds=seconds,
        warmup=args.warmup if args.warmup is not None else min(MAX_WARMUP, seconds / 6),
        servers=int(args.servers),
        workers=workers("auto") if args.workers is None else int(args.workers),
        busy_poll_us=None if args.busy_poll_us is None else int(args.busy_poll_us),
        contenders=args.contenders,
        link=args.link or PROFILES["loopback"],
        server_bounds=args.link is not None and args.link.name != "loopback",
        contention=int(getattr(args, "contention", 0)),
    )


def default_envs(quick: bool, contenders: Sequence[str] | None) -> list[str]:
    """The envs without ``--envs``: CartPole (``--quick``) or every env open to all
    contenders, and each env of its own contenders (``Variable``) that ``contenders`` names.

    Example:
        >>> default_envs(False, None), default_envs(True, ["ours-pool", "variable-pool"])
        (['CartPole', 'Pong'], ['CartPole', 'Variable'])
    """
    envs = ["CartPole"] if quick else [n for n, s in ENV_SPECS.items() if s.contenders is None]
    named = set(contenders or ())
    envs += [n for n, s in ENV_SPECS.items() if s.contenders and named.intersection(s.contenders)]
    return envs


def _chosen(settings: Settings, spec: EnvSpec) -> list[Contender]:
    """The contenders of ``spec``: those it names, or every one no env claims; an opt-in
    contender only when ``--contenders`` names it."""
    claimed = {key for s in ENV_SPECS.values() for key in s.contenders or ()}
    named = settings.contenders
    return [
        c
        for c in CONTENDERS
        if (c.key in spec.contenders if spec.contenders is not None else c.key not in claimed)
        and (c.key in named if named is not None else not c.opt_in)
    ]


def planned_cell(context: Context, contender: Contender, n: int) -> PlannedCell:
    """The cell of ``contender`` at N=``n`` on ``context``'s env (with its bounds when the
    settings ask for them and it is remote)."""
    spec = context.spec
    bounded = context.settings.server_bounds and contender.remote
    return PlannedCell(
        env=spec.name,
        key=contender.key,
        label=contender.label,
        num_envs=n,
        open=partial(contender.open, context, n),
        actions=lambda: ActionStream.discrete(spec.n_actions, n, context.settings.seed),
        annotate=context.add_bounds if bounded else None,
    )


def _in_turn(contenders: list[Contender], repeat: int) -> list[Contender]:
    """The order of a size's ``repeat``-th run (from 0): as chosen, then reversed, in turn."""
    return contenders if repeat % 2 == 0 else contenders[::-1]


def plan(settings: Settings, log: Log = stderr_line) -> list[Group]:
    """One group per env: the single-env contenders at N=1 first (once per ``1`` in the
    sizes, at least once), then every N in turn. A size given again is a repeat: its
    contenders run in the reverse order of the time before (A B, then B A), so no contender
    is always the first on fresh servers or the last on warm ones; the targets take the
    median of the repeats."""
    groups = []
    for env in settings.envs:
        context = Context(ENV_SPECS[env], settings)
        chosen = _chosen(settings, context.spec)
        single = [c for c in chosen if c.single_only]
        cells = [
            planned_cell(context, c, 1)
            for repeat in range(max(1, list(settings.sizes).count(1)))
            for c in _in_turn(single, repeat)
        ]
        vector = [c for c in chosen if not c.single_only]
        seen: dict[int, int] = {}
        for n in settings.sizes:
            seen[n] = seen.get(n, -1) + 1
            cells += [planned_cell(context, c, n) for c in _in_turn(vector, seen[n])]
        if not cells:  # no contender of this env was chosen: no servers to start
            continue

        def setup(context: Context = context) -> Any:
            return running_servers(context, log)

        groups.append(Group(cells, setup, context.notes))
    return groups


def describe(settings: Settings) -> str:
    """What ran, as the ``openenv-gym bench`` command that runs it again."""
    words = [
        "openenv-gym bench",
        f"--envs {','.join(settings.envs)}",
        f"--n {','.join(map(str, settings.sizes))}",
        f"--seconds {settings.seconds:g}",
        f"--warmup {settings.warmup:.2g}",
        f"--servers {settings.servers}",
    ]
    if settings.workers:
        words.append(f"--workers {settings.workers}")
    if settings.busy_poll_us is not None:
        words.append(f"--busy-poll-us {settings.busy_poll_us}")
    if settings.link.name != "loopback":
        words.append(f"--link {settings.link.name}")
    if settings.contention:
        words.append(f"--contention {settings.contention}")
    if settings.contenders:
        words.append(f"--contenders {','.join(settings.contenders)}")
    return "`" + " ".join(words) + "`"
