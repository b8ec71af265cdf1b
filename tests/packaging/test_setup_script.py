"""``scripts/setup.sh`` asks pip only when there is something to install (issue 28, item 2).

CI runs ``setup.sh dev`` twice (before building the images, then in README command 2); the
second run finds the stamp the first left (same extras, same ``pyproject.toml``) and installs
nothing. The venv here is a stand-in whose ``python -m pip`` only logs its arguments, so the
test sees every pip call and installs nothing anywhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

FAKE_PYTHON = """#!/usr/bin/env bash
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then
    echo "$*" >>"$(dirname "$0")/../pip.log"
    exit 0
fi
exec {python} "$@"
"""


def _checkout(tmp_path: Path) -> Path:
    """A folder with the script, pyproject.toml and a stand-in .venv."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE_PYTHON.format(python=sys.executable))
    python.chmod(0o755)
    return tmp_path


def _setup(checkout: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "scripts/setup.sh", *args],
        cwd=checkout,
        env={**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def _pip_calls(checkout: Path) -> list[str]:
    log = checkout / ".venv" / "pip.log"
    return log.read_text().splitlines() if log.exists() else []


def test_a_second_run_with_the_same_extras_installs_nothing(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    _setup(checkout, "dev")
    assert any("-e .[dev]" in call for call in _pip_calls(checkout))
    calls = len(_pip_calls(checkout))
    again = _setup(checkout, "dev")
    assert len(_pip_calls(checkout)) == calls
    assert "already has openenv-gym (dev)" in again.stdout


def test_other_extras_or_a_changed_pyproject_install_again(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    _setup(checkout, "dev")
    _setup(checkout)
    assert _pip_calls(checkout)[-1].endswith("-e .")
    calls = len(_pip_calls(checkout))
    with (checkout / "pyproject.toml").open("a") as pyproject:
        pyproject.write("\n# changed\n")
    _setup(checkout)
    assert len(_pip_calls(checkout)) == calls + 1


@pytest.mark.slow  # a setup.sh run: ~5 s
def test_pip_shows_its_progress(tmp_path: Path) -> None:
    """A `dev` install takes minutes: pip's own lines are its progress (issue 34, item 6)."""
    checkout = _checkout(tmp_path)
    _setup(checkout, "dev")
    calls = _pip_calls(checkout)
    assert calls
    assert not any("--quiet" in call.split() or " -q " in f" {call} " for call in calls)
    assert all("--progress-bar off" in call for call in calls)
