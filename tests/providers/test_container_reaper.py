"""The container reaper against a real Docker engine: containers go with their owner.

An owner killed with SIGKILL runs no clean-up of its own; the detached reaper it started
removes its containers anyway. Skipped (reason shown by ``pytest -ra``) without an engine.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

from openenv_gym.providers import DockerProvider
from openenv_gym.providers.container_reaper import REAPER_LABEL, ContainerReaper
from openenv_gym.providers.docker import LABEL

#: The test's own label: never ours (LABEL), so remove_orphans() of other tests leaves these be.
TEST_LABEL = "org.openenv-gym.test-reaper"


def labelled(client: Any, label: str) -> set[str]:
    return {
        c.id
        for c in client.containers.list(all=True, filters={"label": label}, ignore_removed=True)
    }


def wait_until_gone(client: Any, label: str, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while labelled(client, label):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def sleeper(client: Any, image: str, labels: dict[str, str]) -> Any:
    """A container that only sleeps, labelled ``labels`` (not by our provider)."""
    return client.containers.run(
        image,
        entrypoint=["python3", "-c", "import time; time.sleep(600)"],
        command=[],
        detach=True,
        labels={TEST_LABEL: "1", **labels},
        network_mode="none",
    )


OWNER = textwrap.dedent(
    """
    import json, sys, time
    from openenv_gym.providers.container_reaper import ContainerReaper
    reaper = ContainerReaper.start()
    print(json.dumps(reaper.key), flush=True)
    time.sleep(600)
    """
)


def test_a_killed_owner_s_containers_are_removed(docker_engine: Any, gymnasium_image: str) -> None:
    owner = subprocess.Popen([sys.executable, "-c", OWNER], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None
        key = json.loads(owner.stdout.readline())
        label = f"{REAPER_LABEL}={key}"
        container = sleeper(docker_engine, gymnasium_image, {REAPER_LABEL: key})
        other = sleeper(docker_engine, gymnasium_image, {})  # not the reaper's: stays
        try:
            time.sleep(1.0)
            assert labelled(docker_engine, label) == {container.id}
            os.kill(owner.pid, signal.SIGKILL)
            owner.wait(10)
            assert wait_until_gone(docker_engine, label), "the reaper left the container"
            other.reload()
            assert other.status == "running"
        finally:
            other.remove(force=True)
    finally:
        owner.kill()
        owner.wait(10)


def test_close_lets_the_reaper_remove_what_is_left(
    docker_engine: Any, gymnasium_image: str
) -> None:
    reaper = ContainerReaper.start()
    sleeper(docker_engine, gymnasium_image, {REAPER_LABEL: reaper.key})
    assert labelled(docker_engine, reaper.label_filter)
    reaper.close()
    reaper.close()  # idempotent
    assert repr(reaper).endswith("released)")
    assert wait_until_gone(docker_engine, reaper.label_filter)


PROVIDER_OWNER = textwrap.dedent(
    """
    import json, sys, time
    from openenv_gym.providers import DockerProvider
    provider = DockerProvider.serving(
        sys.argv[1], ["gymnasium", "--env-id", "CartPole-v1"], remove_with_owner=True
    )
    provider.start()
    print(json.dumps(provider.container_id), flush=True)
    time.sleep(600)
    """
)


def test_remove_with_owner_survives_sigkill_of_the_owner(
    docker_engine: Any, gymnasium_image: str
) -> None:
    owner = subprocess.Popen(
        [sys.executable, "-c", PROVIDER_OWNER, gymnasium_image], stdout=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout is not None
        container_id = json.loads(owner.stdout.readline())
        container = docker_engine.containers.get(container_id)
        assert container.labels[LABEL] == "1"
        key = container.labels[REAPER_LABEL]
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait(10)
        assert wait_until_gone(docker_engine, f"{REAPER_LABEL}={key}")
    finally:
        owner.kill()
        owner.wait(10)


def test_a_provider_without_remove_with_owner_starts_no_reaper(
    docker_engine: Any, gymnasium_image: str
) -> None:
    provider = DockerProvider.serving(gymnasium_image, ["gymnasium", "--env-id", "CartPole-v1"])
    with provider:
        container = docker_engine.containers.get(provider.container_id)
        assert REAPER_LABEL not in container.labels
        assert provider.container_pid is not None
        assert provider.container_pid > 0
    assert provider.container_pid is None
