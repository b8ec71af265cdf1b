"""Servers placed by Ray, on a real two-node Ray cluster on this machine.

The cluster is two ``ray start`` processes (a head on 127.0.0.2, a second node on 127.0.0.3
with a ``node2`` resource), 1 CPU each; the test process joins it as the driver. Vector
envs get their servers from it (``fleet="ray"`` or a ``RayFleet``), as processes or as
containers of our image on the real Docker engine, step, and lose servers, a whole node and
their driver; afterwards no actor, server process or container may be left. Every server
requires the fleet's token. The container tests are skipped (reason shown) without a
Docker engine, like ``test_docker.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import closing
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from openenv_gym import OpenEnvEnv, OpenEnvVectorEnv
from openenv_gym.bench.ray_cluster import LocalRayCluster, alive, wait_gone
from openenv_gym.client import TOKEN_ENV_VAR, fetch_schema
from openenv_gym.errors import (
    AuthenticationError,
    FleetConfigError,
    ImageNotFoundError,
    OpenEnvGymError,
    ServerStartError,
    SubEnvError,
    VectorUsageError,
)
from openenv_gym.providers import ServerSpec, server_provider
from openenv_gym.providers.container_reaper import REAPER_LABEL
from openenv_gym.providers.docker import LABEL
from openenv_gym.providers.ray import RayFleet, RayServer
from openenv_gym.providers.ray_actor import ServerLocation
from tests.providers.conftest import our_container_ids

ray = pytest.importorskip("ray")

CARTPOLE = "openenv/CartPole-v1"
CARTPOLE_ARGS = ["gymnasium", "--env-id", "CartPole-v1"]
#: A quarter CPU per server: up to 4 servers on a node (each node has 1 CPU).
SMALL = RayFleet(num_cpus=0.25)


# --------------------------------------------------------------------------- without a cluster


def test_bad_fleet_options_are_refused_with_the_fix() -> None:
    with pytest.raises(FleetConfigError, match="num_cpus to be a number >= 0, got -1"):
        RayFleet(num_cpus=-1)
    with pytest.raises(FleetConfigError, match="num_cpus to be a number >= 0, got '2'"):
        RayFleet(num_cpus="2")  # type: ignore[arg-type]
    with pytest.raises(FleetConfigError, match=r"resources\['GPU'\] to be a number >= 0"):
        RayFleet(resources={"GPU": -1})
    with pytest.raises(FleetConfigError, match="resources to be a dict"):
        RayFleet(resources=["GPU"])  # type: ignore[arg-type]
    with pytest.raises(FleetConfigError, match=r"one of \['SPREAD', 'DEFAULT'\].*'PACK'"):
        RayFleet(scheduling_strategy="PACK")
    with pytest.raises(FleetConfigError, match="placement_timeout to be a number > 0"):
        RayFleet(placement_timeout=0)
    with pytest.raises(FleetConfigError, match=r"may not set \['max_restarts', 'num_cpus'\]"):
        RayFleet(actor_options={"num_cpus": 2, "max_restarts": 3})
    with pytest.raises(FleetConfigError, match="host to be an address string or None, got ''"):
        RayFleet(host="")
    with pytest.raises(FleetConfigError, match=r"one of \['local', 'ray'\].*got 'k8s'"):
        OpenEnvVectorEnv(CARTPOLE, 2, fleet="k8s")
    with pytest.raises(VectorUsageError, match="fleet='ray' starts servers, but base_url"):
        OpenEnvVectorEnv(CARTPOLE, 2, fleet="ray", base_url="http://127.0.0.1:1")


def test_bad_image_options_are_refused_with_the_fix() -> None:
    fleet = RayFleet()
    with pytest.raises(FleetConfigError, match="image to be an image name or None, got 3"):
        fleet.server(CARTPOLE_ARGS, ServerSpec(image=3))  # type: ignore[arg-type]
    with pytest.raises(FleetConfigError, match="image to be an image name or None, got ' '"):
        fleet.server(CARTPOLE_ARGS, ServerSpec(image=" "))
    with pytest.raises(
        FleetConfigError, match=r"docker_kwargs=\{'pull': True\} apply to a container: pass image="
    ):
        fleet.server(CARTPOLE_ARGS, ServerSpec(docker_kwargs={"pull": True}))
    with pytest.raises(
        FleetConfigError,
        match=r"docker_kwargs may not set \['client', 'publish_ip'\] on a RayFleet: .*takes "
        r"\['container_port', 'env', 'read_only', 'user', 'pull', 'run_kwargs'\]",
    ):
        fleet.server(
            CARTPOLE_ARGS, ServerSpec(image="x", docker_kwargs={"client": 1, "publish_ip": "::"})
        )
    with pytest.raises(FleetConfigError, match="docker_kwargs to be a dict, got"):
        fleet.server(CARTPOLE_ARGS, ServerSpec(image="x", docker_kwargs=[1]))  # type: ignore[arg-type]
    with pytest.raises(FleetConfigError, match=r"needs serve_args .* or an image=.*got neither"):
        RayServer(None, fleet)
    with pytest.raises(OpenEnvGymError, match=r"no server to start: pass serve_args .*image="):
        server_provider(None)


def test_an_image_server_runs_the_image_on_a_node() -> None:
    server = RayFleet(num_cpus=2).server(
        CARTPOLE_ARGS,
        ServerSpec(
            image="openenv-gym/gymnasium:latest",
            workers="auto",
            docker_kwargs={"run_kwargs": {"mem_limit": "1g"}},
            unix_socket=True,
        ),
    )
    assert server.image == "openenv-gym/gymnasium:latest"
    assert server.serve_args == [*CARTPOLE_ARGS, "--workers", "2"]
    assert server.docker_kwargs == {"run_kwargs": {"mem_limit": "1g"}}
    own = RayFleet().server(None, ServerSpec(image="someone/openenv-echo", workers="auto"))
    assert own.serve_args is None  # the image's own command
    assert repr(own) == "RayServer('someone/openenv-echo None', not started)"


def test_a_fleet_makes_up_a_token_on_every_bind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(TOKEN_ENV_VAR, raising=False)
    first, second = RayFleet(), RayFleet(host="192.0.2.7")
    assert len(first.token) >= 43  # secrets.token_urlsafe(32)
    assert first.token != second.token  # one per fleet
    assert first.token not in repr(first)
    # Loopback too: any local user could reach an unguarded server on 127.0.0.1.
    for loopback in ("127.0.0.1", "127.0.0.3", "localhost", "::1"):
        fleet = RayFleet(host=loopback)
        assert len(fleet.token) >= 43
        assert fleet.server(CARTPOLE_ARGS).token == fleet.token
    # The servers require the fleet's token unless the env or the driver names one.
    assert first.server(CARTPOLE_ARGS).token == first.token
    assert first.server(CARTPOLE_ARGS, ServerSpec(image="x")).token == first.token
    assert first.server(CARTPOLE_ARGS, ServerSpec(token="given")).token == "given"
    monkeypatch.setenv(TOKEN_ENV_VAR, "from-the-driver")
    assert first.server(CARTPOLE_ARGS).token == "from-the-driver"
    assert first.server(CARTPOLE_ARGS, ServerSpec(token="given")).token == "given"


def test_workers_auto_means_one_per_reserved_cpu() -> None:
    args = ["gymnasium", "--env-id", "CartPole-v1"]
    assert RayFleet(num_cpus=3).server(args, ServerSpec(workers="auto")).serve_args[-2:] == [
        "--workers",
        "3",
    ]
    assert RayFleet(num_cpus=0.5).server(args, ServerSpec(workers="auto")).serve_args[-2:] == [
        "--workers",
        "1",
    ]
    assert RayFleet().server(args).serve_args == args
    assert repr(RayFleet()) == "RayFleet(num_cpus=1.0, scheduling_strategy='SPREAD')"


def test_fleet_local_is_the_default_child_process() -> None:
    envs = OpenEnvVectorEnv(CARTPOLE, 2, fleet="local", sessions_per_server=1)
    try:
        assert [type(s).__name__ for s in envs.servers] == ["LocalServerProcess"] * 2
        envs.reset(seed=0)
    finally:
        envs.close()


def test_without_ray_init_the_error_names_ray_init() -> None:
    # In a fresh interpreter: this one may have joined the test cluster already.
    script = textwrap.dedent(
        """
        from openenv_gym import OpenEnvVectorEnv
        from openenv_gym.errors import RayUnavailableError
        from openenv_gym.providers.ray import RayFleet, RayServer
        for attempt in (
            lambda: OpenEnvVectorEnv("openenv/CartPole-v1", 2, fleet="ray"),
            lambda: RayServer(["gymnasium"], RayFleet()).start(),
        ):
            try:
                attempt()
            except RayUnavailableError as exc:
                print(exc)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    lines = out.stdout.splitlines()
    assert len(lines) == 2, out.stdout + out.stderr
    for line in lines:
        assert line.startswith("Ray is not initialised in this process: call ray.init(address=")


# --------------------------------------------------------------------------- the cluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalRayCluster]:
    """A head node and a ``node2`` node; this process joined as the driver."""
    if ray.is_initialized():
        ray.shutdown()
    with LocalRayCluster([{"node2": 1}]) as running:
        saved = {k: os.environ.get(k) for k in running.auth_env}
        os.environ.update(running.auth_env)
        try:
            ray.init(address=running.address, logging_level="ERROR", log_to_driver=False)
            # The public way: the driver took its node IP from the head (no private argument).
            assert ray.util.get_node_ip_address() == running.ips[0]
            yield running
        finally:
            ray.shutdown()
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            left = running.stop()
        assert not left, f"cluster processes survived: {left}"


def node_ids() -> dict[str, str]:
    """Node IP -> node id of every live node."""
    return {n["NodeManagerAddress"]: n["NodeID"] for n in ray.nodes() if n["Alive"]}


def locations(envs: OpenEnvVectorEnv) -> list[ServerLocation]:
    found = []
    for server in envs.servers:
        assert isinstance(server, RayServer)
        assert server.location is not None
        found.append(server.location)
    return found


def assert_steps_like_raw_cartpole(envs: OpenEnvVectorEnv, seed: int) -> None:
    """The 4 sub-envs make the same transitions as raw CartPole, whatever node runs them."""
    obs, _ = envs.reset(seed=seed)
    raw = [gym.make("CartPole-v1") for _ in range(4)]
    expected = np.stack([env.reset(seed=seed + i)[0] for i, env in enumerate(raw)])
    np.testing.assert_allclose(obs, expected, rtol=1e-6)
    for t in range(5):
        actions = np.array([t % 2, 1, 0, (t + 1) % 2])
        obs, rewards, terminations, _, _ = envs.step(actions)
        expected = np.stack([env.step(int(a))[0] for env, a in zip(raw, actions, strict=True)])
        np.testing.assert_allclose(obs, expected, rtol=1e-6)
        assert rewards.tolist() == [1.0] * 4
        assert not terminations.any()


def assert_token_required(envs: OpenEnvVectorEnv) -> None:
    """Every server requires the fleet's token: without it (or with another) a client is
    refused with AuthenticationError; the vector env's sessions send it by themselves."""
    tokens = {server.token for server in envs.servers}
    assert len(tokens) == 1
    token = tokens.pop()
    assert token is not None
    assert len(token) >= 43
    for url in set(envs.base_urls):
        with pytest.raises(AuthenticationError, match="requires a bearer token and we sent no"):
            fetch_schema(url, timeout=10)
        with pytest.raises(AuthenticationError, match="a token that it refused"):
            fetch_schema(url, timeout=10, token="not-the-fleet-token")
        with pytest.raises(AuthenticationError):
            OpenEnvEnv(url)  # the single env, without a token
        assert "action" in fetch_schema(url, timeout=10, token=token)


def assert_gone(located: list[ServerLocation], actors: list[Any]) -> None:
    """The server processes and actors ended."""
    pids = {p for loc in located for p in (loc.pid, loc.actor_pid)}
    assert not wait_gone(pids, 30.0), "a server or actor process outlived its vector env"
    for actor in actors:
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(actor.node.remote(), timeout=30)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_servers_spread_over_both_nodes_and_end_on_close(cluster: LocalRayCluster) -> None:
    envs = OpenEnvVectorEnv(CARTPOLE, 4, fleet="ray", sessions_per_server=2)
    try:
        located = locations(envs)
        actors = [s.actor for s in envs.servers]  # type: ignore[attr-defined]
        # 1 CPU per server and 1 CPU per node: one server on each node, bound to its IP.
        assert {loc.node_ip for loc in located} == set(cluster.ips)
        assert {loc.node_id for loc in located} == set(node_ids().values())
        for loc in located:
            assert loc.url.startswith(f"http://{loc.node_ip}:")
            assert node_ids()[loc.node_ip] == loc.node_id
        assert sorted(set(envs.base_urls)) == sorted(loc.url for loc in located)
        assert_token_required(envs)
        assert_steps_like_raw_cartpole(envs, seed=7)
    finally:
        envs.close()
    assert_gone(located, actors)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_placement_follows_resources_and_node_affinity(cluster: LocalRayCluster) -> None:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    on_node2 = RayFleet(num_cpus=0.25, resources={"node2": 0.25})
    with closing(OpenEnvVectorEnv(CARTPOLE, 3, fleet=on_node2, sessions_per_server=1)) as envs:
        assert {loc.node_ip for loc in locations(envs)} == {cluster.ips[1]}
        envs.reset(seed=0)
        envs.step(envs.action_space.sample())
    head = node_ids()[cluster.ips[0]]
    pinned = RayFleet(
        num_cpus=0.25, scheduling_strategy=NodeAffinitySchedulingStrategy(head, soft=False)
    )
    with closing(OpenEnvVectorEnv(CARTPOLE, 2, fleet=pinned, sessions_per_server=1)) as envs:
        assert {loc.node_id for loc in locations(envs)} == {head}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_unplaceable_and_failing_servers_raise_with_the_reason(cluster: LocalRayCluster) -> None:
    nowhere = RayFleet(num_cpus=0.25, resources={"gpu_node": 1}, placement_timeout=3)
    with pytest.raises(
        ServerStartError,
        match=r"no Ray node took .* within 3s: .*0.25 CPU and 1 gpu_node, .*\{'CPU': [\d.]+\} free",
    ):
        OpenEnvVectorEnv(CARTPOLE, 2, fleet=nowhere)
    with pytest.raises(
        ServerStartError,
        match=r"(?s)^On the Ray node 127\.0\.0\.[23]: the server process exited.*NoSuchEnv-v9",
    ) as err:
        OpenEnvVectorEnv("openenv/Gymnasium-v0", 2, fleet=SMALL, env_id="NoSuchEnv-v9")
    assert "NoSuchEnv" in err.value.log


def server_on_node2(envs: OpenEnvVectorEnv, cluster: LocalRayCluster) -> tuple[int, RayServer]:
    """The index of a sub-env whose server runs on node 2, and that server."""
    for i, url in enumerate(envs.base_urls):
        server = next(s for s in envs.servers if s.base_url == url)
        assert isinstance(server, RayServer)
        assert server.location is not None
        if server.location.node_ip == cluster.ips[1]:
            return i, server
    raise AssertionError(f"no server on node 2: {locations(envs)}")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_killed_server_is_a_sub_env_error_or_a_new_server(cluster: LocalRayCluster) -> None:
    pinned_to_node2 = RayFleet(num_cpus=0.25, resources={"node2": 0.25})
    # Without reconnect: the sub-env on the lost server raises SubEnvError naming it.
    envs = OpenEnvVectorEnv(CARTPOLE, 2, fleet=pinned_to_node2, sessions_per_server=1)
    located = locations(envs)
    actors = [s.actor for s in envs.servers]  # type: ignore[attr-defined]
    try:
        envs.reset(seed=0)
        index, server = server_on_node2(envs, cluster)
        assert server.location is not None
        os.kill(server.location.pid, signal.SIGKILL)
        assert not wait_gone({server.location.pid}, 10.0)
        host_port = server.location.url.removeprefix("http://")
        with pytest.raises(SubEnvError, match=f"sub-env {index} .*{host_port}") as err:
            envs.step(envs.action_space.sample())
        assert err.value.index == index
    finally:
        envs.close()
    assert_gone(located, actors)

    # With reconnect: Ray places a new server and the sub-env goes on there.
    envs = OpenEnvVectorEnv(CARTPOLE, 2, fleet=SMALL, sessions_per_server=1, reconnect=True)
    try:
        envs.reset(seed=0)
        index, server = server_on_node2(envs, cluster)
        assert server.location is not None
        old = server.location
        os.kill(old.pid, signal.SIGKILL)
        assert wait_gone({old.pid}, 10.0) == set()
        _, _, _, truncations, infos = envs.step(envs.action_space.sample())
        assert infos["_reconnected"][index]
        assert truncations[index]
        assert server.location is not None
        assert server.location.pid != old.pid
        assert envs.base_urls[index] == server.location.url != old.url
        assert not alive(old.actor_pid)  # the old actor was killed, not left running
        for _ in range(10):
            envs.step(envs.action_space.sample())
        located = locations(envs)
        actors = [s.actor for s in envs.servers]  # type: ignore[attr-defined]
    finally:
        envs.close()
    assert_gone(located, actors)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_lost_node_fails_sub_envs_or_moves_them(cluster: LocalRayCluster) -> None:
    failing = OpenEnvVectorEnv(CARTPOLE, 2, fleet=SMALL, sessions_per_server=1)
    moving = OpenEnvVectorEnv(CARTPOLE, 2, fleet=SMALL, sessions_per_server=1, reconnect=True)
    located = locations(failing) + locations(moving)
    try:
        failing.reset(seed=0)
        moving.reset(seed=0)
        lost_index, _ = server_on_node2(failing, cluster)
        moved_index, _ = server_on_node2(moving, cluster)
        cluster.kill_node(1)
        assert not wait_gone({loc.pid for loc in located if loc.node_ip == cluster.ips[1]}, 30)
        with pytest.raises(SubEnvError, match=f"sub-env {lost_index} "):
            failing.step(failing.action_space.sample())
        _, _, _, _, infos = moving.step(moving.action_space.sample())
        assert infos["_reconnected"][moved_index]
        assert {loc.node_ip for loc in locations(moving)} == {cluster.ips[0]}
        for _ in range(10):
            moving.step(moving.action_space.sample())
        located += locations(moving)
    finally:
        failing.close()
        moving.close()
        cluster.restart_node(1)
    assert not wait_gone({loc.pid for loc in located}, 30.0)


DRIVER = textwrap.dedent(
    """
    import json, sys, time
    import ray
    from openenv_gym import OpenEnvVectorEnv
    from openenv_gym.providers.ray import RayFleet

    ray.init(address=sys.argv[1], logging_level="ERROR")
    image = {"image": sys.argv[2]} if len(sys.argv) > 2 else {}
    envs = OpenEnvVectorEnv(
        "openenv/CartPole-v1", 2, fleet=RayFleet(num_cpus=0.25), sessions_per_server=1, **image
    )
    envs.reset(seed=0)
    pids = [p for s in envs.servers for p in (s.location.pid, s.location.actor_pid)]
    containers = [s.location.container_id for s in envs.servers if s.location.container_id]
    print(json.dumps({"pids": pids, "containers": containers}), flush=True)
    time.sleep(600)
    """
)


def start_driver(cluster: LocalRayCluster, *args: str) -> subprocess.Popen[str]:
    """A driver process with a vector env of 2 Ray-placed servers (``args``: an image)."""
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, cluster.address, *args],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **cluster.auth_env},
    )


def started(driver: subprocess.Popen[str]) -> dict[str, Any]:
    """What the driver's servers are (pids, containers), once they run."""
    assert driver.stdout is not None
    line = driver.stdout.readline()
    assert line, "the driver exited before its servers started"
    found: dict[str, Any] = json.loads(line)
    return found


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_servers_end_when_the_driver_dies(cluster: LocalRayCluster) -> None:
    driver = start_driver(cluster)
    try:
        pids = set(started(driver)["pids"])
        assert len(pids) == 4
        assert all(alive(p) for p in pids)
    finally:
        driver.kill()
        driver.wait(30)
    assert not wait_gone(pids, 60.0), "servers or actors outlived their driver"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_sb3_trains_on_ray_placed_servers(cluster: LocalRayCluster) -> None:
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO

    from openenv_gym.integrations.sb3 import make_vec_env

    vec = make_vec_env(
        CARTPOLE,
        n_envs=4,
        seed=0,
        env_kwargs={"fleet": "ray", "sessions_per_server": 2},
    )
    try:
        model = PPO("MlpPolicy", vec, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu")
        model.learn(total_timesteps=256)
        assert model.num_timesteps >= 256
    finally:
        vec.close()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_benchmark_runs_both_fleets(cluster: LocalRayCluster) -> None:
    from openenv_gym.bench.ray_fleet import (
        LOCAL_LABEL,
        best_of,
        build_parser,
        format_runs,
        run_once,
    )

    args = build_parser().parse_args(["--n", "2", "--per-server", "1", "--seconds", "0.3"])
    args.warmup, args.repeats = 0.1, 1
    runs = [
        best_of([run_once(LOCAL_LABEL, None, args, 0)]),
        best_of([run_once("Ray actors", SMALL, args, 0)]),
    ]
    table = format_runs(runs, args)
    assert "N=2, 2 servers x 1 sessions" in table
    rows = [line for line in table.splitlines() if line.startswith(("| child", "| Ray"))]
    assert len(rows) == 2
    assert rows[0].split("|")[4].strip() == "1.00"  # the anchor's ratio to itself
    assert all(run.cell.ok and run.startup_seconds > 0 for run in runs)


# --------------------------------------------------------------------------- containers


def wait_removed(client: Any, container_ids: set[str], timeout: float = 60.0) -> set[str]:
    """Wait until none of ``container_ids`` exists; return those left after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        left = container_ids & our_container_ids(client)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def container_ids(envs: OpenEnvVectorEnv) -> set[str]:
    found = {loc.container_id for loc in locations(envs)}
    assert None not in found, "a server of an image= vector env runs outside a container"
    return {cid for cid in found if cid is not None}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_containers_placed_by_ray_step_and_are_removed_on_close(
    cluster: LocalRayCluster, docker_engine: Any, gymnasium_image: str
) -> None:
    envs = OpenEnvVectorEnv(CARTPOLE, 4, fleet="ray", sessions_per_server=2, image=gymnasium_image)
    try:
        located = locations(envs)
        actors = [s.actor for s in envs.servers]  # type: ignore[attr-defined]
        ids = container_ids(envs)
        assert len(ids) == 2
        assert {loc.node_ip for loc in located} == set(cluster.ips)  # one on each node
        for loc in located:
            container = docker_engine.containers.get(loc.container_id)
            assert container.labels[LABEL] == "1"
            assert container.labels[REAPER_LABEL]  # removed with its actor, however it ends
            assert container.image.tags == [gymnasium_image]
            # Published on its node's IP only (127.0.0.2 / 127.0.0.3), nowhere else.
            port = loc.url.rsplit(":", 1)[1]
            published = container.attrs["NetworkSettings"]["Ports"]["8000/tcp"]
            assert published == [{"HostIp": loc.node_ip, "HostPort": port}]
            assert loc.url == f"http://{loc.node_ip}:{port}"
            assert alive(loc.pid)  # the container's server process, on the node
        assert_token_required(envs)
        assert_steps_like_raw_cartpole(envs, seed=3)  # real steps, in containers on both nodes
    finally:
        envs.close()
    assert not ids & our_container_ids(docker_engine), "close() left a container behind"
    assert_gone(located, actors)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_any_image_on_ray_and_a_killed_actor_takes_its_container(
    cluster: LocalRayCluster, docker_engine: Any, gymnasium_image: str
) -> None:
    # openenv/Docker-v0 with the image's own command (any OpenEnv image), placed by Ray.
    envs = OpenEnvVectorEnv(
        "openenv/Docker-v0", 2, fleet=SMALL, sessions_per_server=1, image=gymnasium_image
    )
    try:
        ids = container_ids(envs)
        assert len(ids) == 2
        envs.reset(seed=0)
        envs.step(envs.action_space.sample())
        # ray.kill ends the actor with SIGKILL (no clean-up of its own runs): its reaper
        # removes the container, and the sub-env on it fails.
        index, server = server_on_node2(envs, cluster)
        assert server.location is not None
        killed = server.location.container_id
        assert killed is not None
        ray.kill(server.actor)
        assert not wait_removed(docker_engine, {killed}), "the killed actor's container stayed"
        with pytest.raises(SubEnvError, match=f"sub-env {index} "):
            envs.step(envs.action_space.sample())
    finally:
        envs.close()
    assert not wait_removed(docker_engine, ids, 30.0)

    # With reconnect=True, Ray places a new container and the sub-env goes on there.
    envs = OpenEnvVectorEnv(
        CARTPOLE, 2, fleet=SMALL, sessions_per_server=1, image=gymnasium_image, reconnect=True
    )
    try:
        ids = container_ids(envs)
        envs.reset(seed=0)
        index, server = server_on_node2(envs, cluster)
        assert server.location is not None
        killed = server.location.container_id
        ray.kill(server.actor)
        assert not wait_removed(docker_engine, {killed} if killed else set())
        _, _, _, truncations, infos = envs.step(envs.action_space.sample())
        assert infos["_reconnected"][index]
        assert truncations[index]
        assert server.location is not None
        assert server.location.container_id not in (None, killed)
        for _ in range(5):
            envs.step(envs.action_space.sample())
        ids |= container_ids(envs)
    finally:
        envs.close()
    assert not wait_removed(docker_engine, ids, 30.0)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_containers_go_when_their_driver_dies(
    cluster: LocalRayCluster, docker_engine: Any, gymnasium_image: str
) -> None:
    driver = start_driver(cluster, gymnasium_image)
    try:
        ids = set(started(driver)["containers"])
        assert len(ids) == 2
        assert ids <= our_container_ids(docker_engine)
    finally:
        driver.kill()
        driver.wait(30)
    assert not wait_removed(docker_engine, ids), "containers outlived their driver"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_missing_image_is_image_not_found_from_its_node(
    cluster: LocalRayCluster, docker_engine: Any
) -> None:
    with pytest.raises(
        ImageNotFoundError,
        match=r"^On the Ray node 127\.0\.0\.[23]: the Docker image 'openenv-gym/no-such:0' is "
        r"not present",
    ):
        OpenEnvVectorEnv(CARTPOLE, 2, fleet=SMALL, image="openenv-gym/no-such:0")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_lost_node_takes_its_containers(
    cluster: LocalRayCluster, docker_engine: Any, gymnasium_image: str
) -> None:
    envs = OpenEnvVectorEnv(
        CARTPOLE, 2, fleet=SMALL, sessions_per_server=1, image=gymnasium_image, reconnect=True
    )
    try:
        ids = container_ids(envs)
        envs.reset(seed=0)
        index, server = server_on_node2(envs, cluster)
        assert server.location is not None
        lost = server.location.container_id
        assert lost is not None
        cluster.kill_node(1)  # every Ray process of node 2 (SIGKILL): its actors are gone
        assert not wait_removed(docker_engine, {lost}), "a lost node's container stayed"
        _, _, _, _, infos = envs.step(envs.action_space.sample())
        assert infos["_reconnected"][index]  # a new container, on the head
        assert {loc.node_ip for loc in locations(envs)} == {cluster.ips[0]}
        ids |= container_ids(envs)
    finally:
        envs.close()
        cluster.restart_node(1)
    assert not wait_removed(docker_engine, ids, 30.0)
