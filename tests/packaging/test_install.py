"""A plain ``pip install`` of the package (a wheel, no extras) in a fresh venv, as a new user
gets it: the base install works, ``py.typed`` ships, and every path that needs an extra says
which one to install."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _clean_env() -> dict[str, str]:
    """This environment without the test run's PYTHONPATH (it points at the clone, whose
    egg-info would pass for an installed openenv-gym)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


class FreshVenv:
    """A venv with only the package's wheel and its base dependencies installed."""

    def __init__(self, root: Path, wheel: Path) -> None:
        self.root = root
        self.wheel = wheel
        self.python = root / "venv" / "bin" / "python"
        self.workdir = root / "work"  # not the clone: its openenv_gym/ must not shadow the install
        self.workdir.mkdir()

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.python), *args],
            cwd=self.workdir,
            env=_clean_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def command(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run("-m", "openenv_gym.cli", *args)


def _source_copy(target: Path) -> Path:
    """What the wheel is built from, copied so the build writes nothing into the clone."""
    target.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, target / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "openenv_gym", target / "openenv_gym", ignore=ignore)
    return target


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> FreshVenv:
    root = tmp_path_factory.mktemp("fresh-install")
    source = _source_copy(root / "source")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    built = subprocess.run(
        [*pip, "wheel", "--no-deps", "--wheel-dir", str(root / "dist"), str(source)],
        capture_output=True, text=True, timeout=300, check=False, env=_clean_env(),
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (root / "dist").glob("openenv_gym-*.whl")
    subprocess.run(
        [sys.executable, "-m", "venv", str(root / "venv")],
        check=True,
        timeout=120,
        env=_clean_env(),
    )
    installed = subprocess.run(
        [str(root / "venv" / "bin" / "python"), *pip[1:], "install", str(wheel)],
        capture_output=True, text=True, timeout=600, check=False, env=_clean_env(),
    )  # fmt: skip
    if installed.returncode != 0 and "No matching distribution" in installed.stderr:
        pytest.skip(f"the base dependencies cannot be installed here: {installed.stderr[-500:]}")
    assert installed.returncode == 0, installed.stderr[-3000:]
    return FreshVenv(root, wheel)


def test_the_wheel_ships_py_typed(venv: FreshVenv) -> None:
    with zipfile.ZipFile(venv.wheel) as wheel:
        assert "openenv_gym/py.typed" in wheel.namelist()


def test_no_extra_is_installed(venv: FreshVenv) -> None:
    probe = "import importlib.util as u; print([m for m in {mods!r} if u.find_spec(m)])"
    modules = ["ale_py", "chess", "stable_baselines3", "ray", "docker", "pyarrow", "yaml"]
    done = venv.run("-c", probe.format(mods=modules))
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_the_base_install_plays_cartpole(venv: FreshVenv) -> None:
    code = (
        "import gymnasium as gym, openenv_gym\n"
        "env = gym.make('openenv/CartPole-v1')\n"
        "obs, info = env.reset(seed=0)\n"
        "obs, reward, terminated, truncated, info = env.step(env.action_space.sample())\n"
        "env.close()\n"
        "print(reward)\n"
    )
    done = venv.run("-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1.0"
    version = venv.command("--version")
    assert version.returncode == 0
    assert version.stdout.startswith("openenv-gym ")


@pytest.mark.parametrize(
    ("args", "extra", "package"),
    [
        (["serve", "atari", "--port", "0"], "atari", "ale-py"),
        (["serve", "chess", "--port", "0"], "chess", "chess"),
    ],
)
def test_serve_names_the_extra(venv: FreshVenv, args: list[str], extra: str, package: str) -> None:
    done = venv.command(*args)
    assert done.returncode == 1, done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith("openenv-gym: error: MissingExtraError: "), done.stderr
    assert f"needs {package}" in first
    assert first.endswith(f"Install the extra: pip install 'openenv-gym[{extra}]'"), first
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("code", "extra"),
    [
        ("import gymnasium as gym, openenv_gym; gym.make('openenv/Atari-v0')", "atari"),
        ("import gymnasium as gym, openenv_gym; gym.make('openenv/Chess-v0')", "chess"),
        ("import openenv_gym.integrations.sb3", "sb3"),
        (
            "from openenv_gym.integrations.rllib import register_env; "
            "register_env('openenv/CartPole-v1')",
            "rllib",
        ),
        (
            "import gymnasium as gym, openenv_gym; "
            "gym.make('openenv/CartPole-v1', image='openenv-gym/gymnasium:latest')",
            "docker",
        ),
        (
            "import gymnasium as gym; from openenv_gym.wrappers import RecordTrajectories; "
            "RecordTrajectories(gym.make('CartPole-v1'), 'run')",
            "datasets",
        ),
        (
            "import pathlib; from openenv_gym.config_files import load_config; "
            "pathlib.Path('shaping.yaml').write_text('terms: []'); load_config('shaping.yaml')",
            "yaml",
        ),
    ],
)
def test_python_api_names_the_extra(venv: FreshVenv, code: str, extra: str) -> None:
    done = venv.run("-c", code)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert f"Install the extra: pip install 'openenv-gym[{extra}]'" in last, done.stderr
    assert "ModuleNotFoundError" not in last
