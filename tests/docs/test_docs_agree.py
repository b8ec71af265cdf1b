"""What the docs say agrees with the code: quoted messages, targets, install lines, and blocks
run in a reader's order (issue 34, item 8)."""

from __future__ import annotations

import ast
import re
import shutil
import sys
from pathlib import Path

import pytest

from openenv_gym.cli import main

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def _python_blocks(doc: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), flags=re.S)


def test_errors_md_quotes_the_cli_s_missing_extra_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    quoted = re.search(
        r"\$ openenv-gym serve atari\n(openenv-gym: error: [^\n]*)",
        (DOCS / "errors.md").read_text(),
    )
    assert quoted, "docs/errors.md no longer quotes `openenv-gym serve atari` without ale-py"
    monkeypatch.setitem(sys.modules, "ale_py", None)  # the base install: no [atari] extra
    assert main(["serve", "atari"]) != 0
    printed = capsys.readouterr().err.splitlines()
    assert quoted.group(1) in printed, f"the CLI printed:\n{chr(10).join(printed)}"


def test_wrappers_md_states_the_sb3_example_s_own_target() -> None:
    example = (REPO / "examples" / "train_sb3_ppo_cartpole.py").read_text()
    target = re.search(r'"--target", type=float, default=([0-9.]+)', example)
    assert target, "examples/train_sb3_ppo_cartpole.py has no --target default"
    stated = re.search(
        r"train_sb3_ppo_cartpole\.py` \(SB3 PPO, remote CartPole, mean return (\S+ \S+)",
        (DOCS / "wrappers.md").read_text(),
    )
    assert stated, "docs/wrappers.md no longer states the SB3 example's result"
    assert stated.group(1) == f">= {float(target.group(1)):g}"


def test_mcp_md_install_line_names_every_package_the_server_imports() -> None:
    guide = (DOCS / "mcp.md").read_text()
    install = re.search(r"`pip install ([^`]*)`", guide)
    assert install, "docs/mcp.md has no install line"
    installed = {re.split(r"[=<>\[]", name)[0] for name in install.group(1).split()}
    server = next(block for block in _python_blocks(DOCS / "mcp.md") if "create_app(" in block)
    imported = {
        (node.module or "").split(".")[0]
        for node in ast.walk(ast.parse(server))
        if isinstance(node, ast.ImportFrom)
    } | {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse(server))
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    ours = {"openenv_gym", "__future__", "pydantic"}  # pydantic: openenv-gym's own dependency
    third_party = imported - set(sys.stdlib_module_names) - ours
    assert third_party <= installed, (
        f"pip install {install.group(1)} misses {third_party - installed}"
    )


@pytest.mark.slow
def test_wrappers_md_blocks_in_a_reader_s_order_load_whole_episodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The config block (one step, in runs/cartpole), then the dataset block, one directory."""
    pytest.importorskip("datasets")
    pytest.importorskip("minari")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    blocks = _python_blocks(DOCS / "wrappers.md")
    config = next(block for block in blocks if "make_from_config" in block)
    dataset = next(block for block in blocks if "load_dataset(" in block)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    exec(compile(config, "wrappers.md:config", "exec"), namespace)
    exec(compile(dataset, "wrappers.md:dataset", "exec"), namespace)
    episodes = namespace["episodes"]
    assert isinstance(episodes, list)
    assert len(episodes) >= 2, f"the dataset block loaded {len(episodes)} episode(s)"
    assert len(namespace["dataset"]) > len(episodes)  # type: ignore[arg-type]
