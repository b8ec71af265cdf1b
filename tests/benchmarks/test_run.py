"""The benchmark harness in its smallest mode: real servers, real contenders, no timings checked."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

import openenv_gym
from benchmarks import contenders, suite
from benchmarks.report import TARGETS, format_table, parse_table
from benchmarks.run import _run_cell, build_parser, settings_from_args
from openenv_gym.cli import bench

REPO = Path(__file__).resolve().parents[2]
SMALLEST = ["--envs", "CartPole", "--n", "1", "--seconds", "0.2", "--warmup", "0.05"]


def _run(
    *args: str, module: str = "benchmarks.run", cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def _paths(stdout: str, kind: str) -> Path:
    lines = [line for line in stdout.splitlines() if line.startswith(f"{kind}: ")]
    assert len(lines) == 1, stdout
    return Path(lines[0].removeprefix(f"{kind}: "))


@pytest.fixture(scope="module")
def smallest_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("bench")
    return _run(*SMALLEST, "--out", str(out)), out


@pytest.mark.slow
def test_smallest_run_writes_a_parseable_table_csv_and_png(
    smallest_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, out = smallest_run
    assert done.returncode == 0, done.stderr
    rows = parse_table(done.stdout)
    assert {row["env"] for row in rows} == {"CartPole"}
    labels = {c.key: c.label for c in contenders.CONTENDERS}
    by_label = {row["contender"]: row for row in rows}
    # every contender has exactly one row at N=1 (or "*" when skipped)
    assert sorted(by_label) == sorted(labels.values())
    for row in rows:
        rate = row["steps/s"]
        if rate.startswith("skipped: ") or rate.startswith("error: "):
            assert rate.split(": ", 1)[1].strip(), row
            assert row["N"] == ("*" if rate.startswith("skipped") else "1")
        else:
            assert float(rate.replace(",", "")) > 0, row
            assert row["N"] == "1"
    # the in-process anchors and the echo cannot be skipped on this machine
    for key in ("raw", "sync", "async", "echo", "ours-env", "official"):
        assert not by_label[labels[key]]["steps/s"].startswith(("skipped", "error")), by_label[
            labels[key]
        ]
    assert by_label[labels["async"]]["vs Async(N)"] == "1.00x"
    assert by_label[labels["official"]]["vs official(N)"] == "1.00x"

    csv_path, png_path = _paths(done.stdout, "CSV"), _paths(done.stdout, "PNG")
    assert csv_path.parent == out
    assert png_path.parent == out
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with csv_path.open() as handle:
        records = list(csv.DictReader(handle))
    assert [r["label"] for r in records] == [row["contender"] for row in rows]
    assert all(r["status"] in {"ok", "skipped", "error"} for r in records)

    # one progress line per cell, on stderr, never on stdout
    progress = [line for line in done.stderr.splitlines() if line.startswith("[")]
    assert len([p for p in progress if " N=" in p]) == len(rows)
    # the four targets are always reported, with a verdict
    verdicts = [line for line in done.stdout.splitlines() if line.startswith("[")]
    assert len(verdicts) == len(TARGETS)
    assert all(line.startswith(("[met]", "[not met]", "[not measured]")) for line in verdicts)


@pytest.mark.slow
def test_missing_contenders_are_skipped_with_the_reason(
    smallest_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, _ = smallest_run
    rows = {row["contender"]: row["steps/s"] for row in parse_table(done.stdout)}
    labels = {c.key: c.label for c in contenders.CONTENDERS}
    if hasattr(openenv_gym, "OpenEnvVectorEnv"):
        assert not rows[labels["ours-json"]].startswith("skipped"), rows
    else:
        for key in ("ours-json", "ours-binary"):
            assert rows[labels[key]] == (
                "skipped: openenv_gym.OpenEnvVectorEnv is not in this install"
            )
    try:
        import envpool  # noqa: F401
    except ImportError:
        assert rows[labels["envpool"]].startswith("skipped: envpool is not installed")
    else:
        assert not rows[labels["envpool"]].startswith("skipped"), rows


def _context(**kwargs: object) -> suite.Context:
    settings = suite.Settings(envs=["CartPole"], sizes=[1], seconds=0.05, warmup=0.01)
    return suite.Context(suite.ENV_SPECS["CartPole"], settings, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("key", ["official", "ours-env", "ours-json", "ours-binary"])
def test_contenders_needing_a_server_are_skipped_when_it_did_not_start(key: str) -> None:
    contender = next(c for c in contenders.CONTENDERS if c.key == key)
    context = _context(server_problem="our server did not start: ServerStartError: port in use")
    result = _run_cell(context, contender, 1)
    assert result.status == suite.STATUS_SKIPPED
    assert result.reason  # the server's problem, or a missing feature found first
    if key in ("official", "ours-env"):
        assert result.reason == "our server did not start: ServerStartError: port in use"


def test_a_missing_package_is_a_skip_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "envpool", None)  # `import envpool` raises ImportError
    envpool = next(c for c in contenders.CONTENDERS if c.key == "envpool")
    result = _run_cell(_context(), envpool, 1)
    assert result.status == suite.STATUS_SKIPPED
    assert result.reason.startswith("envpool is not installed (pip install envpool)")


def test_a_missing_server_target_is_reported_for_its_env() -> None:
    spec = suite.ENV_SPECS["Pong"]
    context = suite.Context(spec, suite.Settings(envs=["Pong"], sizes=[1]))
    with suite.running_servers(context, log=lambda line: None) as running:
        if suite.serve_target_available("atari"):  # it runs, or says why not (e.g. no ale-py)
            assert bool(running.urls) != bool(running.server_problem)
        else:
            assert running.urls == []
            assert "openenv-gym serve atari" in running.server_problem


def test_error_rows_keep_their_reason_in_the_table() -> None:
    rows = [
        suite.CellResult(
            "CartPole", "sync", "gymnasium SyncVectorEnv", 4, "error", reason="boom | x"
        ),
        suite.CellResult("CartPole", "envpool", "envpool async", 0, "skipped", reason="no envpool"),
    ]
    parsed = parse_table(format_table(rows))
    assert parsed[0]["steps/s"] == "error: boom / x"
    assert parsed[1] == {
        "env": "CartPole",
        "contender": "envpool async",
        "N": "*",
        "steps/s": "skipped: no envpool",
        "vs Async(N)": "-",
        "vs official(N)": "-",
    }


def test_quick_settings_and_option_lists_match_the_suite() -> None:
    settings = settings_from_args(build_parser().parse_args(["--quick"]))
    assert list(settings.sizes) == [1, 8]
    assert list(settings.envs) == ["CartPole"]
    assert settings.seconds == bench.QUICK_SECONDS
    full = settings_from_args(build_parser().parse_args([]))
    assert list(full.sizes) == [1, 2, 4, 8, 16]
    assert list(full.envs) == ["CartPole", "Pong"]
    assert tuple(suite.ENV_SPECS) == bench.ENV_NAMES
    assert bench.CONTENDER_KEYS == contenders.CONTENDER_KEYS


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--envs", "Breakout"], "expected a comma-separated list of CartPole, Pong"),
        (["--n", "0,8"], "expected a comma-separated list of positive integers"),
        (["--n", "eight"], "expected a comma-separated list of positive integers"),
        (["--seconds", "-1"], "expected a positive number of seconds"),
        (["--servers", "0"], "expected a positive integer"),
        (["--contenders", "gym"], "expected a comma-separated list of raw, sync"),
    ],
)
def test_bad_options_are_usage_errors(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(args)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_workers_are_passed_only_where_serve_supports_them() -> None:
    spec = suite.ENV_SPECS["CartPole"]
    settings = suite.Settings(envs=["CartPole"], sizes=[1], servers=2, workers=2)
    context = suite.Context(spec, settings)
    supported = suite.serve_option_supported(spec.serve_args, "--workers", "2")
    with suite.running_servers(context, log=lambda line: None) as running:
        assert len(running.urls) == 2
        assert len(set(running.urls)) == 2  # two processes, two ports
        if supported:
            assert running.notes == []
        else:
            assert running.notes == [
                "`serve gymnasium` has no --workers option here: ran 2 single-process server(s)"
            ]
    assert not suite.serve_option_supported(spec.serve_args, "--no-such-flag", "1")
