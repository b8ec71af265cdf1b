"""The Docker provider against a real engine: our gymnasium image, stepped over the wire.

Every test here needs a running engine and is skipped (reason shown by ``pytest -ra``)
without one. The image is built when missing (``openenv-gym build`` in CI builds it first).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import httpx
import numpy as np
import pytest

from openenv_gym import OpenEnvEnv
from openenv_gym.client import is_healthy
from openenv_gym.errors import (
    AuthenticationError,
    ImageNotFoundError,
    ServerStartError,
    UnsupportedRenderModeError,
)
from openenv_gym.providers import DockerProvider, ServerSpec, remove_orphans, server_provider
from tests.providers.conftest import our_container_ids

REPO = Path(__file__).resolve().parents[2]
CARTPOLE = ["gymnasium", "--env-id", "CartPole-v1"]


def wait_until_removed(client: Any, container_id: str, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while container_id in our_container_ids(client):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_gym_make_with_image_steps_cartpole_in_a_container(
    docker_engine: Any, gymnasium_image: str
) -> None:
    env = gym.make("openenv/CartPole-v1", image=gymnasium_image)
    provider = env.unwrapped.provider
    assert isinstance(provider, DockerProvider)
    container_id = provider.container_id
    assert container_id in our_container_ids(docker_engine)
    assert env.unwrapped.base_url.startswith("http://127.0.0.1:")
    observation, _ = env.reset(seed=0)
    reference = gym.make("CartPole-v1")
    expected, _ = reference.reset(seed=0)
    np.testing.assert_array_equal(observation, expected)
    for _ in range(5):
        observation, reward, terminated, truncated, _ = env.step(1)
        expected, *_ = reference.step(1)
        np.testing.assert_allclose(observation, expected, rtol=1e-6)
        assert reward == 1.0
        assert terminated is False
        assert truncated is False
    env.close()
    assert wait_until_removed(docker_engine, container_id)


def test_docker_v0_runs_an_image_with_serve_args(gymnasium_image: str) -> None:
    env = gym.make(
        "openenv/Docker-v0",
        image=gymnasium_image,
        serve_args=["gymnasium", "--env-id", "Pendulum-v1"],
    )
    try:
        assert env.action_space == gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
        observation, _ = env.reset(seed=3)
        assert observation in env.observation_space
        _, reward, *_ = env.step(np.array([0.5], dtype=np.float32))
        assert reward < 0.0
    finally:
        env.close()


def test_server_is_ready_when_start_returns(gymnasium_image: str) -> None:
    provider = DockerProvider.serving(gymnasium_image, CARTPOLE)
    with provider:
        url = provider.base_url
        assert url is not None
        assert is_healthy(url)  # no retry needed: start() waited for /health
        assert httpx.get(url + "/metadata").json()["name"] == "CartPole-v1"
    assert provider.base_url is None


def test_container_is_hardened_and_published_on_loopback_only(
    docker_engine: Any, gymnasium_image: str
) -> None:
    with DockerProvider.serving(gymnasium_image, CARTPOLE) as provider:
        container = docker_engine.containers.get(provider.container_id)
        host_config = container.attrs["HostConfig"]
        assert container.attrs["Config"]["User"] == "10001:10001"
        assert host_config["CapDrop"] == ["ALL"]
        assert host_config["ReadonlyRootfs"] is True
        assert "no-new-privileges" in host_config["SecurityOpt"]
        exit_code, output = container.exec_run(["id", "-u"])
        assert (exit_code, output.decode().strip()) == (0, "10001")
        exit_code, _ = container.exec_run(["python3", "-c", "open('/usr/x', 'w')"])
        assert exit_code != 0  # read-only root filesystem
        published = container.attrs["NetworkSettings"]["Ports"]
        assert list(published) == ["8000/tcp"]
        assert {binding["HostIp"] for binding in published["8000/tcp"]} == {"127.0.0.1"}


def test_image_default_user_is_not_root(docker_engine: Any, gymnasium_image: str) -> None:
    assert docker_engine.images.get(gymnasium_image).attrs["Config"]["User"] == "10001:10001"


def test_a_container_that_cannot_start_reports_its_log(
    docker_engine: Any, gymnasium_image: str
) -> None:
    provider = DockerProvider.serving(gymnasium_image, ["gymnasium", "--env-id", "NoSuchEnv-v9"])
    before = our_container_ids(docker_engine)
    with pytest.raises(ServerStartError, match="exited with code 1") as caught:
        provider.start()
    # the server's own error, from the container log
    assert "Environment `NoSuchEnv` doesn't exist" in caught.value.log
    assert "--- container log ---" in str(caught.value)
    assert our_container_ids(docker_engine) <= before  # removed, nothing left behind


def test_a_bad_command_line_reports_the_usage_error(gymnasium_image: str) -> None:
    provider = DockerProvider.serving(gymnasium_image, [*CARTPOLE, "--no-such-flag"])
    with pytest.raises(ServerStartError, match="exited with code 2") as caught:
        provider.start()
    assert "unrecognized arguments: --no-such-flag" in caught.value.log


def test_a_missing_image_says_how_to_build_it(docker_engine: Any) -> None:
    provider = DockerProvider("openenv-gym/no-such-image:never")
    with pytest.raises(ImageNotFoundError, match="openenv-gym build"):
        provider.start()


def test_container_is_removed_when_env_construction_fails(
    docker_engine: Any, gymnasium_image: str
) -> None:
    provider = DockerProvider.serving(gymnasium_image, CARTPOLE)
    before = our_container_ids(docker_engine)
    with pytest.raises(UnsupportedRenderModeError):
        OpenEnvEnv(provider=provider, render_mode="human")
    assert provider.container_id is None
    assert our_container_ids(docker_engine) <= before


SCRIPT = textwrap.dedent(
    """
    import sys, time
    import gymnasium as gym
    import openenv_gym
    env = gym.make("openenv/CartPole-v1", image=sys.argv[1])
    env.reset(seed=0)
    print(env.unwrapped.provider.container_id, flush=True)
    if sys.argv[2] == "raise":
        raise RuntimeError("boom")
    if sys.argv[2] == "hang":
        time.sleep(600)
    # "exit": leave without close(); the finalizer removes the container at exit
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["exit", "raise"])
def test_container_is_removed_at_interpreter_exit(
    docker_engine: Any, gymnasium_image: str, how: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, gymnasium_image, how],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    assert done.returncode == (0 if how == "exit" else 1), done.stderr
    container_id = done.stdout.strip().splitlines()[-1]
    assert len(container_id) == 64
    assert container_id not in our_container_ids(docker_engine)


@pytest.mark.slow
def test_orphans_of_a_killed_process_are_removed(docker_engine: Any, gymnasium_image: str) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, gymnasium_image, "hang"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert child.stdout is not None
        container_id = child.stdout.readline().strip()
        assert container_id in our_container_ids(docker_engine)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    assert container_id in our_container_ids(docker_engine)  # SIGKILL: no clean-up ran
    assert container_id in remove_orphans(docker_engine)
    assert container_id not in our_container_ids(docker_engine)


def test_token_is_required_through_the_container(gymnasium_image: str) -> None:
    provider = server_provider(
        CARTPOLE, ServerSpec(image=gymnasium_image, token="container-secret")
    )
    env = OpenEnvEnv(provider=provider, token="container-secret")
    try:
        env.reset(seed=0)
        assert env.step(0)[1] == 1.0
        url = env.base_url
        assert httpx.get(url + "/health").status_code == 200  # health stays open
        assert httpx.get(url + "/schema").status_code == 401
        with pytest.raises(AuthenticationError, match="refused"):
            OpenEnvEnv(url, token="wrong")
        with pytest.raises(AuthenticationError, match="no token"):
            OpenEnvEnv(url, token="")  # explicitly none, even if OPENENV_TOKEN is set
    finally:
        env.close()


def test_check_command_passes_against_a_container(
    gymnasium_image: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from openenv_gym.cli import main

    with DockerProvider.serving(gymnasium_image, CARTPOLE, token="check-token") as provider:
        assert provider.base_url is not None
        assert main(["check", provider.base_url, "--token", "check-token"]) == 0
    assert capsys.readouterr().out.endswith("result: PASS (6 checks)\n")


def test_a_server_that_never_answers_times_out_with_its_log(
    docker_engine: Any, gymnasium_image: str
) -> None:
    # The server listens on 9000 inside, but 8000 is the published port: never ready.
    command = [
        *CARTPOLE,
        "--host",
        "0.0.0.0",
        "--port",
        "9000",
        "--insecure",
        "--log-level",
        "info",
    ]
    provider = DockerProvider(gymnasium_image, command, startup_timeout=4)
    before = our_container_ids(docker_engine)
    with pytest.raises(ServerStartError, match="was not ready within 4s") as caught:
        provider.start()
    assert "listening on http://0.0.0.0:9000" in caught.value.log
    assert our_container_ids(docker_engine) <= before


FORK_SCRIPT = textwrap.dedent(
    """
    import os, sys
    from openenv_gym.providers import DockerProvider
    from openenv_gym.client import is_healthy
    provider = DockerProvider.serving(sys.argv[1], ["gymnasium", "--env-id", "CartPole-v1"])
    url = provider.start()
    pid = os.fork()
    if pid == 0:
        sys.exit(0)  # a normal exit runs the inherited finalizer: it must not remove it
    os.waitpid(pid, 0)
    print("alive after child exit:", is_healthy(url), flush=True)
    provider.stop()
    print("alive after stop:", is_healthy(url), flush=True)
    """
)


@pytest.mark.slow
def test_a_forked_child_leaves_the_parents_container_alone(gymnasium_image: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", FORK_SCRIPT, gymnasium_image],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["alive after child exit: True", "alive after stop: False"]
