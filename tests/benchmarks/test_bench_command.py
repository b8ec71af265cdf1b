"""``openenv-gym bench``: complete --help, a real tiny run, and a readable error outside a clone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_gym.cli import main
from openenv_gym.cli.bench import ENV_NAMES

REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str, cwd: Path = REPO, pythonpath: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openenv_gym.cli", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(pythonpath), "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_help_lists_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--help"]) == 0
    text = capsys.readouterr().out
    for flag in (
        "--envs",
        "--n",
        "--seconds",
        "--warmup",
        "--quick",
        "--contenders",
        "--servers",
        "--workers",
        "--out",
        "--debug",
    ):
        assert flag in text, flag
    for name in (*ENV_NAMES, "AsyncVectorEnv", "envpool", "official", "PNG", "CSV"):
        assert name in text, name


def test_top_level_help_names_bench(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "bench" in capsys.readouterr().out


def test_bad_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--n", "0"]) == 2
    assert "expected a comma-separated list of positive integers" in capsys.readouterr().err


@pytest.mark.slow
def test_bench_runs_the_suite_and_prints_the_png_path(tmp_path: Path) -> None:
    done = _cli(
        "bench",
        *("--envs", "CartPole", "--contenders", "raw,echo,ours-json", "--n", "1"),
        *("--seconds", "0.2", "--warmup", "0.05", "--out", str(tmp_path)),
    )
    assert done.returncode == 0, done.stderr
    png = [line for line in done.stdout.splitlines() if line.startswith("PNG: ")]
    assert len(png) == 1
    assert Path(png[0].removeprefix("PNG: ")).is_file()
    assert "gymnasium env (raw, 1 env)" in done.stderr  # progress, one line per cell
    assert done.stderr.count("N=1 ") == 3


def test_outside_a_clone_bench_fails_with_one_readable_line(tmp_path: Path) -> None:
    installed = tmp_path / "site"
    shutil.copytree(REPO / "openenv_gym", installed / "openenv_gym")  # the package, no benchmarks/
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    done = _cli("bench", "--quick", cwd=workdir, pythonpath=installed)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("openenv-gym: error: BenchmarkSuiteNotFoundError: ")
    assert "run `openenv-gym bench` from the root of a clone" in lines[0]
    help_text = _cli("bench", "--help", cwd=workdir, pythonpath=installed)
    assert help_text.returncode == 0
    assert "--quick" in help_text.stdout  # the options are defined without the suite
    assert "run it from the clone's root" in " ".join(help_text.stdout.split())
