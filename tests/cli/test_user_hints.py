"""What a user meets on a wrong step: the hint fits the mistake (issue 28, item 6)."""

from __future__ import annotations

import socket
import warnings
from collections.abc import Iterator

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the openenv/... ids)
from openenv_gym import OpenEnvEnv
from openenv_gym.cli import main
from openenv_gym.errors import EnvConfigError, ServerConnectionError
from openenv_gym.server import ServerThread


def test_check_without_a_scheme_names_the_command_to_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", "127.0.0.1:8000"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: openenv-gym check")
    assert "run: openenv-gym check http://127.0.0.1:8000" in err
    assert "server running" not in err


def test_a_url_without_a_scheme_is_not_reported_as_a_missing_server() -> None:
    with pytest.raises(ServerConnectionError) as caught:
        OpenEnvEnv("127.0.0.1:8000")
    message = str(caught.value)
    assert "'127.0.0.1:8000' is not a server URL" in message
    assert "expected one like http://127.0.0.1:8000" in message
    assert ".." not in message
    assert "server running" not in message


def test_remote_render_mode_raises_no_false_warning(cartpole_url: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = gym.make("openenv/Remote-v0", base_url=cartpole_url, render_mode="rgb_array")
        env.close()
    assert [str(w.message) for w in caught if "render_mode" in str(w.message)] == []
    assert env.unwrapped.metadata["render_modes"] == ["rgb_array"]


def test_check_lists_no_render_mode_warning(
    cartpole_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", cartpole_url]) == 0
    report = capsys.readouterr().out
    assert "render_mode" not in report
    assert f"works: gym.make('openenv/Remote-v0', base_url='{cartpole_url}')" in report


@pytest.fixture(scope="module")
def chess_url() -> Iterator[str]:
    pytest.importorskip("chess")
    from openenv_gym.envs.chess import chess_server

    with ServerThread(chess_server()) as server:
        yield server.url


def test_check_recommends_the_chess_id_for_a_chess_server(
    chess_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", chess_url]) == 0
    report = capsys.readouterr().out
    assert f"works: gym.make('openenv/Chess-v0', base_url='{chess_url}')" in report


def test_a_bad_policy_prints_the_record_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["record", "--episodes", "1", "--out", "unused", "--policy", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: openenv-gym record")
    assert "--policy must look like 'package.module:function', got 'nope'" in err


def test_a_port_in_use_names_the_way_out(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["serve", "gymnasium", "--env-id", "CartPole-v1", "--port", str(port)])
    assert code == 1
    err = capsys.readouterr().err
    assert f"PortInUseError: 127.0.0.1:{port} is already in use" in err
    assert "`--port 0` for a free one" in err


@pytest.mark.parametrize(
    ("env_id", "call"),
    [
        ("openenv/Gymnasium-v0", "gym.make('openenv/Gymnasium-v0', env_id='Acrobot-v1')"),
        ("openenv/Docker-v0", "gym.make('openenv/Docker-v0', image='openenv-gym/gymnasium:latest'"),
    ],
)
def test_ids_without_their_required_keyword_name_it(env_id: str, call: str) -> None:
    with pytest.raises(EnvConfigError) as caught:
        gym.make(env_id)
    assert call in str(caught.value)
