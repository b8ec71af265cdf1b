"""Every ``python`` code block of the README and of ``docs/*.md`` runs.

A block runs as written, in a fresh namespace, in a scratch directory. A marker comment on
the line before its fence changes that, visibly in the doc:

* ``<!-- docs-test: server (...) -->``: a CartPole server (ours, in this process) stands in
  at ``http://127.0.0.1:8000``; the block runs against it.
* ``<!-- docs-test: skip (reason) -->``: the block is reported as skipped with the reason
  (it needs a Docker engine, a long training run, network access, ...).

A block without a marker that fails, or a marker this test does not know, fails the test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.server import ServerThread

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
STANDIN_URL = "http://127.0.0.1:8000"
_BLOCK = re.compile(
    r"(?:<!-- docs-test: (?P<marker>[^\n]*?) -->\n)?```python\n(?P<code>.*?)```", re.S
)


@dataclass(frozen=True)
class CodeBlock:
    path: Path
    line: int
    marker: str
    code: str

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def code_blocks() -> list[CodeBlock]:
    blocks = []
    for path in DOCS:
        text = path.read_text()
        for match in _BLOCK.finditer(text):
            line = text.count("\n", 0, match.start("code"))
            blocks.append(CodeBlock(path, line, match.group("marker") or "", match.group("code")))
    return blocks


BLOCKS = code_blocks()


def test_the_docs_have_code_blocks() -> None:
    assert len(BLOCKS) >= 10
    assert {block.path.name for block in BLOCKS} >= {"README.md", "spaces.md", "vector.md"}


@pytest.mark.parametrize("block", BLOCKS, ids=[block.name for block in BLOCKS])
def test_code_block_runs(block: CodeBlock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = block.code
    if block.marker.startswith("skip"):
        pytest.skip(f"{block.name}: marked in the doc: {block.marker}")
    monkeypatch.chdir(tmp_path)
    if block.marker.startswith("server"):
        with ServerThread(gymnasium_server("CartPole-v1", max_sessions=64)) as server:
            _run(block, code.replace(STANDIN_URL, server.url))
        return
    assert not block.marker, f"{block.name}: unknown docs-test marker {block.marker!r}"
    _run(block, code)


def _run(block: CodeBlock, code: str) -> None:
    namespace: dict[str, object] = {"__name__": "__docs__"}
    exec(compile(code, block.name, "exec"), namespace)
