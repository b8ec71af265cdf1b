"""The ``openenv-gym`` commands' help, errors and ``--debug`` (``build`` without an engine)."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from openenv_gym.cli.program import commands, main
from openenv_gym.envs.registry import SERVER_ENVS
from openenv_gym.errors import ImageBuildError
from openenv_gym.images.base_image import write_rootfs
from openenv_gym.images.env_images import IMAGES
from openenv_gym.images.wheelhouse import find_context, requirements

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openenv_gym.cli", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ([], ["serve", "check", "build", "--debug"]),
        (["check"], ["URL", "--token", "--max-steps", "--seed", "--timeout", "check_env"]),
        (["build"], ["IMAGE", "--base", "--host-python", "--rebuild-base", "--context"]),
        (["serve", "gymnasium"], ["--env-id", "--token", "--port", "--host", "OPENENV_TOKEN"]),
    ],
)
def test_help_is_complete(
    command: list[str], expected: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*command, "--help"]) == 0
    text = capsys.readouterr().out
    for word in expected:
        assert word in text, (command, word)


def test_every_command_and_target_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    for name in commands():
        assert main([name, "--help"]) == 0
    for target in SERVER_ENVS:
        assert main(["serve", target, "--help"]) == 0
    assert "--debug" in capsys.readouterr().out


def test_build_outside_a_clone_is_one_readable_line(tmp_path: Path) -> None:
    done = run_cli("build", "--context", str(tmp_path))
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("openenv-gym: error: ImageBuildError: no openenv-gym source")


def test_debug_gives_the_traceback(tmp_path: Path) -> None:
    done = run_cli("build", "--context", str(tmp_path), "--debug")
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr
    assert done.stderr.rstrip().endswith(
        "openenv-gym: error: ImageBuildError: no openenv-gym source tree found at "
        f"{tmp_path.resolve()}: the images are built from a clone of the repository (it holds "
        "pyproject.toml and docker/*.Dockerfile). Run the command inside the clone, or pass "
        "--context PATH."
    )


def test_build_rejects_an_unknown_image(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "nope"]) == 2
    assert "unknown image 'nope'; expected one of gymnasium, atari, chess" in (
        capsys.readouterr().err
    )


def test_find_context_is_this_clone(monkeypatch: pytest.MonkeyPatch) -> None:
    assert find_context(REPO) == REPO
    monkeypatch.chdir(REPO / "openenv_gym" / "providers")
    assert find_context() == REPO
    with pytest.raises(ImageBuildError, match=r"found at .*/docker: .*--context"):
        find_context(REPO / "docker")


def test_every_dockerfile_exists_and_serves_its_target() -> None:
    for spec in IMAGES.values():
        text = (REPO / spec.dockerfile).read_text()
        assert "ARG BASE=python:3.11-slim" in text
        assert "USER 10001:10001" in text
        assert 'ENTRYPOINT ["python3", "-m", "openenv_gym.cli", "serve"]' in text
        assert f'CMD ["{spec.name}", ' in text
        if spec.extra is not None:
            assert f"/tmp/src[{spec.extra}]" in text


def test_requirements_pin_this_environment() -> None:
    import gymnasium
    import numpy

    reqs = requirements(REPO, [None, "atari", "chess"])
    assert f"gymnasium=={gymnasium.__version__}" in reqs
    assert f"numpy=={numpy.__version__}" in reqs
    assert any(req.startswith("pip") for req in reqs)
    assert any(req.startswith("setuptools") for req in reqs)
    assert any(req.startswith("ale-py") for req in reqs)
    assert any(req.startswith("chess") for req in reqs)


def test_rootfs_holds_the_host_python_and_its_libraries(tmp_path: Path) -> None:
    host = Path("/usr/bin/python3")
    if not host.exists():
        pytest.skip("no host /usr/bin/python3 to build a base image from")
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    with pytest.raises(ImageBuildError, match="no pip wheel"):
        write_rootfs(tmp_path / "no.tar", wheelhouse)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "pip",
         "-d", str(wheelhouse), "--quiet"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"no pip wheel available: {done.stderr[-200:]}")
    try:
        version = write_rootfs(tmp_path / "rootfs.tar", wheelhouse)
    except ImageBuildError as exc:
        if "is 3." in str(exc):
            pytest.skip(f"host Python differs from this one: {exc}")
        raise
    with tarfile.open(tmp_path / "rootfs.tar") as tar:
        names = set(tar.getnames())
        members = {m.name: m for m in tar.getmembers()}
    assert f"usr/bin/python{version}" in names
    assert "bin" in names
    assert members["bin"].issym()
    assert f"usr/lib/python{version}/os.py" in names
    assert not any("/test/" in name for name in names)
    assert "etc/passwd" in names
    assert members["tmp"].mode == 0o1777
    assert any(name.endswith("libc.so.6") for name in names)
    assert any(name.endswith("libpthread.so.0") for name in names)
    assert f"usr/local/lib/python{version}/dist-packages/pip/__init__.py" in names
    assert all(m.uid == 0 and m.gid == 0 for m in members.values())
