"""Rendering a served CartPole without pygame names the install (issue 28, item 4)."""

from __future__ import annotations

import sys

import pytest

from openenv_gym import OpenEnvEnv
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.errors import ServerReplyError
from openenv_gym.server import ServerThread


def test_render_without_pygame_names_the_render_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pygame", None)  # the server's side lacks pygame
    with ServerThread(gymnasium_server("CartPole-v1")) as server:
        env = OpenEnvEnv(server.url, render_mode="rgb_array")
        try:
            env.reset(seed=0)
            with pytest.raises(ServerReplyError) as caught:
                env.render()
            message = str(caught.value)
            assert "rendering CartPole-v1 needs pygame" in message
            assert "pip install 'openenv-gym[render]'" in message
            # The session lives on: stepping still works.
            env.step(0)
        finally:
            env.close()


def test_render_with_pygame_returns_the_frame() -> None:
    pytest.importorskip("pygame")
    with ServerThread(gymnasium_server("CartPole-v1")) as server:
        env = OpenEnvEnv(server.url, render_mode="rgb_array")
        try:
            env.reset(seed=0)
            frame = env.render()
        finally:
            env.close()
    assert frame is not None
    assert frame.shape == (400, 600, 3)
