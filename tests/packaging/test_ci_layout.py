"""What CI runs and what pyproject declares (issue 28, items 3 and 8).

CI covers the Gymnasium users get: the dev venv has the one ray[rllib] pins, so ``.ci/run``
also runs the fast subset in ``.venv-gym-latest`` (``scripts/setup.sh gym-latest``: the
``test`` extra, no Ray, the newest Gymnasium the package allows). The fast subset is
``-m "not slow"``, documented in the README; the full suite still runs (README command 2).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
EXTRAS = PYPROJECT["project"]["optional-dependencies"]


def _names(extra: str) -> set[str]:
    return {Requirement(item).name for item in EXTRAS[extra]}


def test_gymnasium_range_is_declared_with_a_tested_floor_and_a_major_ceiling() -> None:
    (gymnasium,) = [
        Requirement(r) for r in PYPROJECT["project"]["dependencies"] if r.startswith("gymnasium")
    ]
    assert gymnasium.specifier.contains("1.2.2")  # the dev venv (ray[rllib] pins it)
    assert not gymnasium.specifier.contains("1.1.0")  # untested: refused
    assert not gymnasium.specifier.contains("2.0.0")
    assert gymnasium.specifier.contains("1.4.0")


def test_the_test_extra_is_dev_without_ray() -> None:
    pulled = set()
    for item in EXTRAS["test"]:
        match = re.fullmatch(r"openenv-gym\[(\w+)\]", item)
        if match:
            pulled |= _names(match.group(1))
    assert "ray" not in pulled | _names("test")
    assert EXTRAS["dev"] == ["openenv-gym[test]", "openenv-gym[rllib]"]


def test_ci_runs_the_full_suite_and_the_fast_subset_on_the_newest_gymnasium() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    readme = (REPO / "README.md").read_text()
    assert "test_cmd='bash scripts/setup.sh dev && .venv/bin/python -m pytest'" in ci
    assert "bash scripts/setup.sh gym-latest\n" in ci
    assert '.venv-gym-latest/bin/python -m pytest -m "not slow"' in ci
    setup = (REPO / "scripts" / "setup.sh").read_text()
    assert 'venv=".venv-gym-latest"' in setup
    assert '.venv/bin/python -m pytest -m "not slow"' in readme
    assert ".venv-gym-latest/" in (REPO / ".gitignore").read_text()


def test_the_readme_shows_a_new_user_exactly_two_commands_and_ci_runs_them() -> None:
    """Item 4: one command sets up and runs the main job, one sets up and runs the tests."""
    readme = (REPO / "README.md").read_text()
    section = readme.split("\n## Two commands\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.DOTALL)
    assert [block.strip() for block in blocks] == [
        "bash scripts/setup.sh && .venv/bin/python examples/rollout.py",
        "bash scripts/setup.sh dev && .venv/bin/python -m pytest",
    ]
    ci = (REPO / ".ci" / "run").read_text()
    for block in blocks:
        assert f"='{block.strip()}'" in ci
    assert 'for cmd in "$run_cmd" "$test_cmd"' in ci
    assert 'eval "$run_cmd"' in ci
    assert 'eval "$test_cmd"' in ci
