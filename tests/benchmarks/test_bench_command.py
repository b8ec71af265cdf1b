"""``openenv-gym bench``: complete --help, usage errors, the plan, skips, and a real tiny run
of the installed package from outside the clone."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_gym.bench import build_parser, contenders, options
from openenv_gym.bench import main as bench_main
from openenv_gym.bench.context import ENV_SPECS, Context, Settings, running_servers
from openenv_gym.bench.measure import STATUS_SKIPPED
from openenv_gym.bench.report import TABLE_COLUMNS, parse_table
from openenv_gym.bench.runner import run_cell
from openenv_gym.bench.suite import describe, plan, settings_from_args
from openenv_gym.bench.targets import TARGETS
from openenv_gym.cli import main

REPO = Path(__file__).resolve().parents[2]
TINY = ("--seconds", "0.2", "--warmup", "0.05")


def _installed_copy(tmp_path: Path) -> Path:
    """The package alone (no benchmarks/, no tests/), as a wheel would install it."""
    site = tmp_path / "site"
    shutil.copytree(REPO / "openenv_gym", site / "openenv_gym")
    return site


def _cli(*args: str, cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess[str]:
    code = "import sys; from openenv_gym.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(pythonpath), "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_help_lists_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for flag in (
        "--quick",
        "--envs",
        "--n",
        "--seconds",
        "--warmup",
        "--contenders",
        "--servers",
        "--workers",
        "--busy-poll-us",
        "--out",
        "--url",
        "--token",
        "--gym-id",
        "--debug",
    ):
        assert flag in text, flag
    for words in ("AsyncVectorEnv", "envpool", ".sync()", "p50/p90/p99", "CPU time", "bench.png"):
        assert words in text, words


def test_python_m_openenv_gym_bench_takes_the_same_options() -> None:
    """``python -m openenv_gym.bench`` is ``openenv-gym bench`` (its ``__main__``)."""
    done = subprocess.run(
        [sys.executable, "-m", "openenv_gym.bench", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    flags = set(re.findall(r"--[a-z][a-z-]*", build_parser().format_help()))
    assert {"--quick", "--n", "--contenders"} <= flags
    assert set(re.findall(r"--[a-z][a-z-]*", done.stdout)) == flags


def test_options_match_the_suite() -> None:
    assert options.CONTENDER_KEYS == contenders.CONTENDER_KEYS
    assert tuple(ENV_SPECS) == options.ENV_NAMES
    quick = settings_from_args(build_parser().parse_args(["--quick"]))
    assert (list(quick.envs), list(quick.sizes), quick.seconds) == (["CartPole"], [1, 8], 1.0)
    full = settings_from_args(build_parser().parse_args([]))
    assert (list(full.envs), list(full.sizes)) == (["CartPole", "Pong"], [1, 2, 4, 8, 16])
    assert full.busy_poll_us is None  # the servers' own default
    assert "--busy-poll-us" not in describe(full)
    tuned = settings_from_args(
        build_parser().parse_args(["--workers", "1", "--busy-poll-us", "300"])
    )
    assert (tuned.workers, tuned.busy_poll_us) == (1, 300)
    assert "--workers 1 --busy-poll-us 300" in describe(tuned)
    off = settings_from_args(build_parser().parse_args(["--busy-poll-us", "0"]))
    assert off.busy_poll_us == 0
    assert "--busy-poll-us 0" in describe(off)


def test_plan_runs_single_env_contenders_first_then_every_n() -> None:
    settings = Settings(envs=["CartPole", "Pong"], sizes=[1, 8], contenders=["raw", "async"])
    groups = plan(settings)
    assert [[(c.env, c.key, c.num_envs) for c in g.cells] for g in groups] == [
        [("CartPole", "raw", 1), ("CartPole", "async", 1), ("CartPole", "async", 8)],
        [("Pong", "raw", 1), ("Pong", "async", 1), ("Pong", "async", 8)],
    ]


def test_repeated_sizes_run_their_contenders_in_turn_reversed() -> None:
    settings = Settings(
        envs=["Pong"], sizes=[1, 8, 1, 8, 8], contenders=["raw", "ours-env", "async", "envpool"]
    )
    (group,) = plan(settings)
    assert [(c.key, c.num_envs) for c in group.cells] == [
        ("raw", 1),
        ("ours-env", 1),  # single-env contenders, once per 1 given
        ("ours-env", 1),
        ("raw", 1),
        ("async", 1),
        ("envpool", 1),
        ("async", 8),
        ("envpool", 8),
        ("envpool", 1),
        ("async", 1),  # the second 1: reversed
        ("envpool", 8),
        ("async", 8),
        ("async", 8),
        ("envpool", 8),  # the third 8: forward again
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--envs", "Breakout"], "expected a comma-separated list of CartPole, Pong"),
        (["--n", "0,8"], "expected a comma-separated list of positive integers"),
        (["--n", "eight"], "expected a comma-separated list of positive integers"),
        (["--seconds", "-1"], "expected a positive number of seconds"),
        (["--servers", "0"], "expected a positive integer"),
        (["--contenders", "gym"], "expected a comma-separated list of raw, sync"),
        (["--busy-poll-us", "-1"], "expected microseconds in 0..100000, got '-1'"),
    ],
)
def test_bad_options_are_usage_errors(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", *args]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--token", "t"], "--token go with --url URL"),
        (["--gym-id", "CartPole-v1", "--token", "t"], "--token and --gym-id go with --url URL"),
        (["--url", "http://127.0.0.1:1", "--envs", "Pong"], "--envs choose the servers"),
        (["--url", "http://127.0.0.1:1", "--servers", "2", "--workers", "2"], "--servers and"),
        (["--url", "http://127.0.0.1:1", "--busy-poll-us", "50"], "--busy-poll-us choose"),
    ],
)
def test_options_that_do_not_go_together_are_usage_errors(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", *args]) == 2
    assert message in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        bench_main(args)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def _context(**kwargs: object) -> Context:
    settings = Settings(envs=["CartPole"], sizes=[1], seconds=0.05, warmup=0.01)
    return Context(ENV_SPECS["CartPole"], settings, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("key", ["official", "official-sync", "ours-env", "ours-json"])
def test_contenders_needing_a_server_are_skipped_when_it_did_not_start(key: str) -> None:
    contender = next(c for c in contenders.CONTENDERS if c.key == key)
    context = _context(server_problem="our server did not start: ServerStartError: port in use")
    cell = plan(Settings(envs=["CartPole"], sizes=[1], contenders=[key]))[0].cells[0]
    cell.open = lambda: contender.open(context, 1)
    result = run_cell(cell, 0.05, 0.0, [])
    assert result.status == STATUS_SKIPPED
    assert result.reason == "our server did not start: ServerStartError: port in use"


def test_a_missing_package_is_a_skip_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "envpool", None)  # `import envpool` raises ImportError
    cell = plan(Settings(envs=["CartPole"], sizes=[2], contenders=["envpool"]))[0].cells[0]
    result = run_cell(cell, 0.05, 0.0, [])
    assert result.status == STATUS_SKIPPED
    assert result.reason.startswith("envpool is not installed (pip install 'openenv-gym[bench]')")


def test_the_bench_exits_1_when_every_cell_was_skipped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "envpool", None)  # `import envpool` raises ImportError
    args = ["--envs", "CartPole", "--n", "2", "--contenders", "envpool", *TINY]
    assert bench_main([*args, "--out", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert "no cell was measured" in captured.err
    assert "envpool is not installed" in captured.out  # the table says why
    assert "Targets" not in captured.out  # nothing measured: no targets table


def test_help_says_what_the_links_need_and_offers_contention(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "root or CAP_SYS_ADMIN" in text
    assert "unshare -m" in text
    assert "cells on our servers are skipped" in text
    assert "--contention K" in text
    assert "tunnel" in text


def test_contention_is_an_option_of_the_suite_and_named_in_what_ran() -> None:
    args = build_parser().parse_args(["--contention", "4", "--link", "tunnel"])
    settings = settings_from_args(args)
    assert settings.contention == 4
    assert settings.link.tunnel
    assert "--contention 4" in describe(settings)
    assert "--link tunnel" in describe(settings)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--contention", "-1"])


@pytest.mark.slow
def test_a_run_beside_cpu_bound_processes_says_so_and_stops_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--envs", "CartPole", "--n", "1", "--contenders", "raw", "--contention", "2"]
    assert bench_main([*args, *TINY, "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    pids = [
        int(pid)
        for line in captured.err.splitlines()
        if line.startswith("contention:")
        for pid in line.rsplit("(pids ", 1)[1].rstrip(")").split(", ")
    ]
    assert len(pids) == 2
    for pid in pids:  # stopped and reaped when the run ended
        assert not Path(f"/proc/{pid}").exists() or "zombie" not in _state(pid)
    assert "Contention: 2 CPU-bound pure-Python processes" in captured.out
    assert "**Contention:** 2 CPU-bound" in (tmp_path / "bench.md").read_text()


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return ""


def test_servers_start_with_workers_and_stop() -> None:
    settings = Settings(envs=["CartPole"], sizes=[1], servers=2, workers=1)
    context = Context(ENV_SPECS["CartPole"], settings)
    with running_servers(context, log=lambda line: None) as running:
        assert running.server_problem == ""
        assert len(set(running.urls)) == 2  # two processes, two ports


@pytest.mark.slow
def test_bench_runs_from_the_installed_package_outside_the_clone(tmp_path: Path) -> None:
    site = _installed_copy(tmp_path)
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    done = _cli(
        "bench",
        "--quick",
        *("--contenders", "raw,sync,async,envpool,official-sync,ours-env,ours-json", "--n", "1,2"),
        *TINY,
        cwd=workdir,
        pythonpath=site,
    )
    assert done.returncode == 0, done.stderr
    rows = parse_table(done.stdout)
    assert list(rows[0]) == list(TABLE_COLUMNS)
    measured = {(row["contender"], row["N"]): row for row in rows}
    labels = {c.key: c.label for c in contenders.CONTENDERS}
    for key, n in [("raw", "1"), ("ours-env", "1"), ("official-sync", "1"), ("async", "2")]:
        row = measured[(labels[key], n)]
        assert float(row["steps/s"].replace(",", "")) > 0, row
        assert float(row["p99 µs"].replace(",", "")) >= float(row["p50 µs"].replace(",", ""))
        assert float(row["CPU µs/step"].replace(",", "")) >= 0
    assert measured[(labels["async"], "2")]["vs Async(N)"] == "1.00x"
    assert measured[(labels["raw"], "1")]["vs raw"] == "1.00x"
    # progress on stderr with the time left, one line per cell
    progress = [line for line in done.stderr.splitlines() if line.startswith("[ ")]
    assert len(progress) == len(rows)
    assert all(line.endswith(" left)") for line in progress)
    # only the targets the run measured get a row, each with a verdict
    assert "Targets measured in this run" in done.stdout
    assert "not measured" not in done.stdout
    verdicts = parse_table(done.stdout, 1)
    assert verdicts
    assert {row["target"] for row in verdicts} <= {target.text for target in TARGETS}
    assert all(row["verdict"] in {"**met**", "not met"} for row in verdicts)
    # the default output folder is made under the working directory
    (out,) = (workdir / "bench-results").iterdir()
    assert {p.name for p in out.iterdir()} == {"bench.csv", "bench.md", "bench.png"}
    with (out / "bench.csv").open() as handle:
        assert [r["label"] for r in csv.DictReader(handle)] == [r["contender"] for r in rows]
    assert (out / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"PNG: {out / 'bench.png'}" in done.stdout
