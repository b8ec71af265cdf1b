"""``python -m benchmarks.readme [bench options]``: re-run the suite and refresh the README.

Runs ``openenv-gym bench --out docs/benchmarks [options]`` (the full suite unless options
say otherwise), then replaces the README's benchmark results, between the
``<!-- bench:start -->`` and ``<!-- bench:end -->`` markers, with the run's ``bench.md``
(machine, date, table, targets; the picture is ``docs/benchmarks/bench.png``).

    python -m benchmarks.readme                 # the full suite, on an idle machine
    python -m benchmarks.readme --quick         # a check that the refresh works
"""

from __future__ import annotations

import sys
from pathlib import Path

from openenv_gym.bench import main as bench

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "benchmarks"
README = ROOT / "README.md"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def splice(readme: str, report: str, png: str) -> str:
    """``readme`` with the text between the markers replaced by ``report``."""
    head, start, rest = readme.partition(START)
    _, end, tail = rest.partition(END)
    if not start or not end:
        raise SystemExit(f"README.md has no {START} ... {END} block to replace")
    report = report.replace("](bench.png)", f"]({png})")
    return f"{head}{START}\n{report.strip()}\n{END}{tail}"


def main(argv: list[str]) -> int:
    """Run the suite into docs/benchmarks/ and splice its bench.md into the README."""
    code = bench(["--out", str(OUT), *argv], prog="python -m benchmarks.readme")
    if code == 0:
        report = (OUT / "bench.md").read_text()
        png = (OUT / "bench.png").relative_to(ROOT).as_posix()
        README.write_text(splice(README.read_text(), report, png))
        print(f"README.md: benchmark section refreshed from {OUT / 'bench.md'}")
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
