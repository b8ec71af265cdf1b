"""The targets of one run's situation, judged from its cells (ratios, never absolute times).

The idle targets of the throughput issue on loopback, those beside CPU-bound processes
(``--contention``), through a tunnel, and on one host without shared memory (issue 33);
only those the run measured are printed.

Example:
    >>> from openenv_gym.bench.measure import CellResult
    >>> cells = [
    ...     CellResult("CartPole", "async", "a", 8, "ok", steps_per_s=1000.0),
    ...     CellResult("CartPole", "ours-binary", "b", 8, "ok", steps_per_s=1600.0),
    ... ]
    >>> verdict = TARGETS[0].assess(cells)
    >>> verdict.status, verdict.numbers, verdict.ratio
    ('met', 'ours-binary 1,600 / async 1,000 steps/s', 1.6)
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from openenv_gym.bench.links import LinkProfile
from openenv_gym.bench.measure import CellResult

#: Kinds of target.
RATE: Final = "steps/s"
CPU: Final = "cpu"
#: Verdicts.
MET: Final = "met"
NOT_MET: Final = "not met"
NOT_MEASURED: Final = "not measured"


@dataclass(frozen=True)
class Verdict:
    """One target judged.

    Attributes:
        text: The target.
        status: :data:`MET`, :data:`NOT_MET` or :data:`NOT_MEASURED`.
        numbers: What was compared (or what was missing).
        ratio: Ours over the reference, when both were measured.
    """

    text: str
    status: str
    numbers: str
    ratio: float | None = None

    def __str__(self) -> str:
        ratio = "" if self.ratio is None else f" = {self.ratio:.2f}x"
        return f"[{self.status}] {self.text}: {self.numbers}{ratio}"


def find(cells: Sequence[CellResult], env: str, contender: str, n: int) -> CellResult | None:
    """The measured cell of ``contender`` at ``env`` and N, if any."""
    for cell in cells:
        if (cell.env, cell.contender, cell.num_envs) == (env, contender, n) and cell.ok:
            return cell
    return None


def _value(
    cells: Sequence[CellResult], env: str, contender: str, n: int, kind: str
) -> float | None:
    """The median over the measured cells of ``contender`` at ``env`` and N (a run that gives
    an N twice, ``--n 16,16``, measures interleaved pairs), or ``None``."""
    values = [
        value
        for cell in cells
        if (cell.env, cell.contender, cell.num_envs) == (env, contender, n) and cell.ok
        if (value := cell.steps_per_s if kind == RATE else cell.cpu_us_per_step) is not None
    ]
    return float(statistics.median(values)) if values else None


@dataclass(frozen=True)
class Target:
    """``best of ours`` against ``reference``: a rate ``>= factor x``, or CPU ``<= factor x``
    (each the median of its cells when a run measured them more than once).

    Attributes:
        text: The goal as the issue states it.
        env: The env name.
        contenders: Ours; the best measured one counts.
        n: N for ours.
        reference: The contender compared against.
        reference_n: N for the reference.
        factor: The required ratio.
        kind: :data:`RATE` (higher is better) or :data:`CPU` (client CPU per step, lower).
    """

    text: str
    env: str
    contenders: tuple[str, ...]
    n: int
    reference: str
    reference_n: int
    factor: float
    kind: str = RATE

    def assess(self, cells: Sequence[CellResult]) -> Verdict:
        """Judge the target from one run's cells."""
        ours = [
            (value, key)
            for key in self.contenders
            if (value := _value(cells, self.env, key, self.n, self.kind)) is not None
        ]
        reference = _value(cells, self.env, self.reference, self.reference_n, self.kind)
        if not ours or not reference:
            missing = [] if ours else ["/".join(self.contenders) + f"({self.n})"]
            missing += [] if reference else [f"{self.reference}({self.reference_n})"]
            return Verdict(self.text, NOT_MEASURED, f"no result for {', '.join(missing)}")
        if self.kind == RATE:
            value, key = max(ours)
            met = value / reference >= self.factor
            numbers = f"{key} {value:,.0f} / {self.reference} {reference:,.0f} steps/s"
        else:
            value, key = min(ours)
            met = value / reference <= self.factor
            numbers = f"{key} {value:.1f} / {self.reference} {reference:.1f} µs CPU per step"
        return Verdict(self.text, MET if met else NOT_MET, numbers, value / reference)

    def verdict(self, cells: Sequence[CellResult]) -> str:
        """``[met] ...``, ``[not met] ...`` or ``[not measured] ...`` with the numbers."""
        return str(self.assess(cells))


_OURS_VECTOR: Final = ("ours-json", "ours-binary")
_OURS_ENV: Final = ("ours-env",)


def vs(
    text: str,
    env: str,
    n: int,
    reference: str,
    factor: float,
    ours: tuple[str, ...] = _OURS_VECTOR,
    kind: str = RATE,
) -> Target:
    """The :class:`Target` of ``ours`` (default: our vector env, JSON or binary) against
    ``reference`` at the same N (every target of the suite compares at one N)."""
    return Target(text, env, ours, n, reference, n, factor, kind)


#: The targets of the throughput issue (issue 11).
TARGETS: Final = (
    vs("vector CartPole N=8 >= 1.5x AsyncVectorEnv(8)", "CartPole", 8, "async", 1.5),
    vs("vector CartPole N=16 >= 2x AsyncVectorEnv(16)", "CartPole", 16, "async", 2.0),
    vs("vector Pong N=8 >= 1.0x AsyncVectorEnv(8)", "Pong", 8, "async", 1.0),
    vs("vector Pong N=8 >= 0.8x envpool async(8)", "Pong", 8, "envpool", 0.8),
    vs(
        "single-env CartPole >= 2x official client .sync()",
        "CartPole",
        1,
        "official-sync",
        2.0,
        _OURS_ENV,
    ),
    *(
        vs(
            f"client CPU per step, {env} N=16 <= 1/3 official client's",
            env,
            16,
            "official",
            1 / 3,
            kind=CPU,
        )
        for env in ("CartPole", "Pong")
    ),
)
_BESIDE: Final = "beside CPU-bound processes:"
#: Targets beside CPU-bound processes (issue 33: ``--contention K``).
CONTENTION_TARGETS: Final = (
    vs(
        f"{_BESIDE} single-env CartPole >= 1.3x official client .sync()",
        "CartPole",
        1,
        "official-sync",
        1.3,
        _OURS_ENV,
    ),
    vs(f"{_BESIDE} vector CartPole N=8 >= 1.5x AsyncVectorEnv(8)", "CartPole", 8, "async", 1.5),
)
#: Targets of compression chosen by measurement (issue 33): through a tunnel, and on one
#: host without shared memory (``--link rtt_ms=0``), the default against each forced choice.
TUNNEL_TARGETS: Final = (
    vs(
        "tunnel Pong N=16: defaults >= 0.9x compression='zstd'",
        "Pong",
        16,
        "ours-zstd",
        0.9,
        ("ours-binary",),
    ),
)
NO_SHARED_MEMORY_TARGETS: Final = tuple(
    vs(
        f"same host without shared memory, Pong N=16: defaults >= 0.95x compression={name!r}",
        "Pong",
        16,
        key,
        0.95,
        ("ours-binary",),
    )
    for name, key in (("off", "ours-raw"), ("zstd", "ours-zstd"))
)


def situation_targets(link: LinkProfile, contention: int) -> list[Target]:
    """The targets of the situation a run measures: the idle ones (:data:`TARGETS`) on
    loopback without contention, those beside CPU-bound processes with ``contention``, the
    tunnel's, and those of one host without shared memory (a link of 0 ms, no cap).

    Example:
        >>> from openenv_gym.bench.links import PROFILES, parse_link
        >>> len(situation_targets(PROFILES["loopback"], 0)) == len(TARGETS)
        True
        >>> [t.reference for t in situation_targets(PROFILES["tunnel"], 0)]
        ['ours-zstd']
        >>> [t.reference for t in situation_targets(parse_link("rtt_ms=0"), 4)]
        ['official-sync', 'async', 'ours-raw', 'ours-zstd']
    """
    chosen: list[Target] = []
    if link.name == "loopback" and not contention:
        chosen += TARGETS
    if contention:
        chosen += CONTENTION_TARGETS
    if link.tunnel:
        chosen += TUNNEL_TARGETS
    if link.emulated and not link.proxied:
        chosen += NO_SHARED_MEMORY_TARGETS
    return chosen


def format_targets(cells: Sequence[CellResult], targets: Sequence[Target] = TARGETS) -> str:
    """The ``targets`` this run measured as a Markdown table: target, verdict, the numbers
    compared, the ratio (``""`` when it measured none of them: a table of "not measured"
    rows tells a reader nothing)."""
    lines = ["| target | verdict | measured | ratio |", "|---|---|---|---:|"]
    verdicts = [v for v in (t.assess(cells) for t in targets) if v.status != NOT_MEASURED]
    if not verdicts:
        return ""
    for verdict in verdicts:
        ratio = "-" if verdict.ratio is None else f"{verdict.ratio:.2f}x"
        status = f"**{verdict.status}**" if verdict.status == MET else verdict.status
        lines.append(f"| {verdict.text} | {status} | {verdict.numbers} | {ratio} |")
    return "\n".join(lines)
