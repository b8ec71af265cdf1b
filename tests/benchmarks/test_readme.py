"""``python -m benchmarks.readme``: the README's benchmark block is replaced, nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.readme import END, README, START, splice


def test_splice_replaces_only_the_marked_block_and_points_at_the_png() -> None:
    readme = f"# Title\n\ntext\n\n{START}\nold table\n{END}\n\n## Next\n"
    report = "- **Date:** today\n\n| a |\n\n![plot](bench.png)\n"
    new = splice(readme, report, "docs/benchmarks/bench.png")
    assert new == (
        f"# Title\n\ntext\n\n{START}\n- **Date:** today\n\n| a |\n\n"
        f"![plot](docs/benchmarks/bench.png)\n{END}\n\n## Next\n"
    )
    assert splice(new, report, "docs/benchmarks/bench.png") == new  # idempotent


def test_a_readme_without_the_markers_is_refused() -> None:
    with pytest.raises(SystemExit, match=r"README\.md has no <!-- bench:start -->"):
        splice("# Title\n", "table", "bench.png")


def test_the_readme_has_one_block_with_a_table_and_the_picture() -> None:
    text = README.read_text()
    assert text.count(START) == text.count(END) == 1
    block = text.split(START)[1].split(END)[0]
    assert "| env | contender | N | steps/s |" in block
    assert "- **Machine:**" in block
    assert "- **Date:**" in block
    png = block.split("](")[-1].split(")")[0]
    assert (README.parent / png).is_file()
    assert Path(png) == Path("docs/benchmarks/bench.png")
