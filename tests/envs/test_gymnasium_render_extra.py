"""A served CartPole advertises rgb_array only when its server can draw it (issue 28, item 4;
issue 34, item 2): without pygame, ``check_env`` and ``openenv-gym check`` pass with their
defaults, and asking for ``rgb_array`` names the install."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from openenv_gym import OpenEnvEnv
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.errors import RenderModeUnavailableError
from openenv_gym.providers.local import LocalServerProcess
from openenv_gym.server import ServerThread

# The base install in a server process: a sitecustomize blocks pygame before anything runs.
BLOCK_PYGAME = "import sys\nsys.modules['pygame'] = None\n"


def test_without_pygame_rgb_array_is_not_advertised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pygame", None)  # the server's side lacks pygame
    with ServerThread(gymnasium_server("CartPole-v1")) as server:
        env = OpenEnvEnv(server.url)
        try:
            assert env.metadata["render_modes"] == []
            with pytest.raises(RenderModeUnavailableError) as caught:
                OpenEnvEnv(server.url, render_mode="rgb_array")
            assert "pip install 'openenv-gym[render]'" in str(caught.value)
            env.reset(seed=0)
            env.step(0)  # the session lives on
        finally:
            env.close()


def test_with_pygame_rgb_array_returns_the_frame() -> None:
    pytest.importorskip("pygame")
    with ServerThread(gymnasium_server("CartPole-v1")) as server:
        env = OpenEnvEnv(server.url, render_mode="rgb_array")
        try:
            assert env.metadata["render_modes"] == ["rgb_array"]
            env.reset(seed=0)
            frame = env.render()
        finally:
            env.close()
    assert frame is not None
    assert frame.shape == (400, 600, 3)


@pytest.fixture
def server_without_pygame(tmp_path: Path) -> Iterator[str]:
    """``openenv-gym serve gymnasium --env-id CartPole-v1`` in a process without pygame."""
    (tmp_path / "sitecustomize.py").write_text(BLOCK_PYGAME)
    path = os.pathsep.join([str(tmp_path), *sys.path])
    server = LocalServerProcess(["gymnasium", "--env-id", "CartPole-v1"], env={"PYTHONPATH": path})
    url = server.start()
    try:
        yield url
    finally:
        server.stop()


@pytest.mark.slow
def test_a_newcomer_s_first_check_passes_without_pygame(server_without_pygame: str) -> None:
    """README's first check: ``openenv-gym check URL`` and ``check_env`` with defaults."""
    check_env(gym.make("openenv/CartPole-v1", base_url=server_without_pygame).unwrapped)
    done = subprocess.run(
        [sys.executable, "-m", "openenv_gym.cli", "check", server_without_pygame],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[FAIL]" not in done.stdout
