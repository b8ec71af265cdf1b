"""Every ``python`` code block of the README and of ``docs/*.md`` runs.

A block runs as written, in a fresh namespace, in a scratch directory. A marker comment on
the line before its fence changes that, visibly in the doc:

* ``<!-- docs-test: server (...) -->``: a CartPole server (ours, in this process) stands in
  at ``http://127.0.0.1:8000``; the block runs against it.
* ``<!-- docs-test: atari-server (...) -->``: the same with our Atari server (Pong).
* ``<!-- docs-test: recording (...) -->``: the block records its own episodes (a reader runs
  it after the block before it); Minari datasets go into the scratch directory.
* ``<!-- docs-test: examples (...) -->``: the repository's ``examples/`` is copied into the
  scratch directory first.
* ``<!-- docs-test: docker (...) -->``: runs when a Docker engine and our images are there
  (CI builds them when it has an engine); skipped, naming what is missing, otherwise.
* ``<!-- docs-test: elsewhere (tests/FILE.py ...) -->``: that test runs the block (it reads
  it from this doc): the named file must exist and name the doc.
* ``<!-- docs-test: skip (reason) -->``: for what no test machine has (a Ray cluster with a
  GPU). The block is still compiled and its imports run, so a renamed API fails here.

A block that imports an optional package the venv lacks is skipped, naming it (the fast subset
runs in ``.venv-gym-latest``, without Ray); ``.venv`` has every extra, so the full suite runs it.

A block without a marker that fails, or a marker this test does not know, fails the test.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
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
    kind = block.marker.split(" ", 1)[0]
    monkeypatch.chdir(tmp_path)
    if kind == "skip":
        _run_imports(block)
        pytest.skip(f"{block.name}: marked in the doc: {block.marker} (imports ran)")
    elif kind == "elsewhere":
        _check_elsewhere(block)
    elif kind == "server":
        with ServerThread(gymnasium_server("CartPole-v1", max_sessions=64)) as server:
            _run(block, code.replace(STANDIN_URL, server.url))
    elif kind == "atari-server":
        pytest.importorskip("ale_py", reason="the Atari server needs the [atari] extra")
        from openenv_gym.envs.atari import atari_server

        with ServerThread(atari_server("pong", max_sessions=8)) as server:
            _run(block, code.replace(STANDIN_URL, server.url))
    elif kind == "recording":
        pytest.importorskip("pyarrow", reason="recordings need the [datasets] extra")
        monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
        _run(block, code)
    elif kind == "examples":
        shutil.copytree(REPO / "examples", tmp_path / "examples")
        _run(block, code)
    elif kind == "docker":
        missing = _docker_missing()
        if missing:
            _run_imports(block)
            pytest.skip(f"{block.name}: {missing} (imports ran)")
        _run(block, code)
    else:
        assert not block.marker, f"{block.name}: unknown docs-test marker {block.marker!r}"
        _run(block, code)


def _run(block: CodeBlock, code: str) -> None:
    namespace: dict[str, object] = {"__name__": "__docs__"}
    try:
        # dont_inherit: run as a reader runs it, not under this file's __future__ annotations
        # (pydantic must see the block's classes, not their names as strings)
        exec(compile(code, block.name, "exec", dont_inherit=True), namespace)
    except ModuleNotFoundError as exc:
        # An optional package this venv lacks (.venv-gym-latest has no Ray); the full suite's
        # venv has every extra, so there the block runs. Our own modules never skip.
        top = (exc.name or "").partition(".")[0]
        if not top or top == "openenv_gym" or importlib.util.find_spec(top) is not None:
            raise
        pytest.skip(f"{block.name}: needs {top}, which this venv does not have")


def _run_imports(block: CodeBlock) -> None:
    """Compile the block and run its import lines (a renamed module or name fails)."""
    compile(block.code, block.name, "exec")
    imports = [line for line in block.code.splitlines() if re.match(r"(from \S+ )?import \S", line)]
    _run(block, "\n".join(imports))


def _check_elsewhere(block: CodeBlock) -> None:
    match = re.search(r"\(((tests/\S+\.py))", block.marker)
    assert match, f"{block.name}: 'elsewhere' names no tests/FILE.py: {block.marker!r}"
    test_file = REPO / match.group(1)
    assert test_file.is_file(), f"{block.name}: {test_file} does not exist"
    doc = str(block.path.relative_to(REPO))
    assert doc in test_file.read_text(), f"{block.name}: {test_file} does not read {doc}"
    compile(block.code, block.name, "exec")


def _docker_missing() -> str:
    """What the ``docker`` blocks lack here ("" when a Docker engine has our images)."""
    if shutil.which("docker") is None:
        return "no docker command"
    image = "openenv-gym/gymnasium:latest"
    done = subprocess.run(
        ["docker", "image", "inspect", image],
        capture_output=True,
        timeout=30,
        check=False,
    )
    return "" if done.returncode == 0 else f"no Docker engine with {image} (openenv-gym build)"
