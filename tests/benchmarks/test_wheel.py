"""The suite ships in the wheel: build it, install it (without the clone) and run ``bench``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow
def test_the_wheel_carries_the_suite_and_bench_runs_from_it(tmp_path: Path) -> None:
    source = tmp_path / "source"  # a copy: building in the clone would leave build/ behind
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "openenv_gym", source / "openenv_gym")
    _run(
        sys.executable,
        *("-m", "pip", "wheel", ".", "--no-deps", "-q"),  # isolated: the declared backend
        *("-w", str(tmp_path / "dist")),
        cwd=source,
    )
    (wheel,) = (tmp_path / "dist").glob("openenv_gym-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "openenv_gym/bench/__init__.py" in names
    assert "openenv_gym/bench/plot.py" in names
    assert not any(name.startswith(("benchmarks/", "tests/")) for name in names)

    site = tmp_path / "site"  # the wheel alone; its dependencies come from this interpreter
    _run(
        sys.executable,
        *("-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)),
        cwd=tmp_path,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = _run(
        sys.executable,
        "-c",
        "import openenv_gym.bench as b; print(b.__file__)",
        cwd=elsewhere,
        env=env,
    )
    assert where.startswith(str(site))
    out = _run(
        sys.executable,
        *("-m", "openenv_gym.bench", "--quick", "--contenders", "raw,ours-env", "--n", "1"),
        *("--seconds", "0.1", "--warmup", "0.02", "--out", "results"),
        cwd=elsewhere,
        env=env,
    )
    assert "| CartPole | ours OpenEnvEnv (1 env) | 1 |" in out
    assert "p50 µs" in out
    assert "CPU µs/step" in out
    assert (elsewhere / "results" / "bench.png").is_file()
