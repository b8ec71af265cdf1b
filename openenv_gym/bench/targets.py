"""The throughput issue's targets, judged from one run's cells (ratios, never absolute times).

Example:
    >>> from openenv_gym.bench.measure import CellResult
    >>> cells = [
    ...     CellResult("CartPole", "async", "a", 8, "ok", steps_per_s=1000.0),
    ...     CellResult("CartPole", "ours-binary", "b", 8, "ok", steps_per_s=1600.0),
    ... ]
    >>> TARGETS[0].verdict(cells)
    '[met] vector CartPole N=8 >= 1.5x AsyncVectorEnv(8): ours-binary 1,600 / async 1,000 = 1.60x'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from openenv_gym.bench.measure import CellResult

#: Kinds of target.
RATE: Final = "steps/s"
CPU: Final = "cpu"


def find(cells: Sequence[CellResult], env: str, contender: str, n: int) -> CellResult | None:
    """The measured cell of ``contender`` at ``env`` and N, if any."""
    for cell in cells:
        if (cell.env, cell.contender, cell.num_envs) == (env, contender, n) and cell.ok:
            return cell
    return None


def _value(cell: CellResult | None, kind: str) -> float | None:
    if cell is None:
        return None
    return cell.steps_per_s if kind == RATE else cell.cpu_us_per_step


@dataclass(frozen=True)
class Target:
    """``best of ours`` against ``reference``: a rate ``>= factor x``, or CPU ``<= factor x``.

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

    def verdict(self, cells: Sequence[CellResult]) -> str:
        """``[met] ...``, ``[not met] ...`` or ``[not measured] ...`` with the numbers."""
        ours = [
            (value, key)
            for key in self.contenders
            if (value := _value(find(cells, self.env, key, self.n), self.kind)) is not None
        ]
        reference = _value(find(cells, self.env, self.reference, self.reference_n), self.kind)
        if not ours or not reference:
            missing = [] if ours else ["/".join(self.contenders) + f"({self.n})"]
            missing += [] if reference else [f"{self.reference}({self.reference_n})"]
            return f"[not measured] {self.text}: no result for {', '.join(missing)}"
        if self.kind == RATE:
            value, key = max(ours)
            ratio = value / reference
            met = ratio >= self.factor
            numbers = f"{value:,.0f} / {self.reference} {reference:,.0f}"
        else:
            value, key = min(ours)
            ratio = value / reference
            met = ratio <= self.factor
            numbers = f"{value:.1f} / {self.reference} {reference:.1f} µs CPU per step"
        return f"[{'met' if met else 'not met'}] {self.text}: {key} {numbers} = {ratio:.2f}x"


_OURS_VECTOR: Final = ("ours-json", "ours-binary")

#: The targets of the throughput issue (issue 11).
TARGETS: Final = (
    Target(
        "vector CartPole N=8 >= 1.5x AsyncVectorEnv(8)",
        "CartPole",
        _OURS_VECTOR,
        8,
        "async",
        8,
        1.5,
    ),
    Target(
        "vector CartPole N=16 >= 2x AsyncVectorEnv(16)",
        "CartPole",
        _OURS_VECTOR,
        16,
        "async",
        16,
        2.0,
    ),
    Target("vector Pong N=8 >= 1.0x AsyncVectorEnv(8)", "Pong", _OURS_VECTOR, 8, "async", 8, 1.0),
    Target("vector Pong N=8 >= 0.8x envpool async(8)", "Pong", _OURS_VECTOR, 8, "envpool", 8, 0.8),
    Target(
        "single-env CartPole >= 2x official client .sync()",
        "CartPole",
        ("ours-env",),
        1,
        "official-sync",
        1,
        2.0,
    ),
    Target(
        "client CPU per step, CartPole N=16 <= 1/3 official client's",
        "CartPole",
        _OURS_VECTOR,
        16,
        "official",
        16,
        1 / 3,
        CPU,
    ),
    Target(
        "client CPU per step, Pong N=16 <= 1/3 official client's",
        "Pong",
        _OURS_VECTOR,
        16,
        "official",
        16,
        1 / 3,
        CPU,
    ),
)


def format_targets(cells: Sequence[CellResult]) -> str:
    """One verdict line per target."""
    return "\n".join(target.verdict(cells) for target in TARGETS)
