"""A real multi-node Ray cluster on this machine, for tests and benchmarks: ``ray start``
once per node, on 127.0.0.2, 127.0.0.3, ...

Each node is one ``ray start --block --node-ip-address 127.0.0.K`` process (the head, then
workers joining it), in its own session, with ``num_cpus`` CPUs, a small object store, free
ports and a short temp dir of its own. The node addresses are the public way to keep all of
Ray's traffic on loopback: ``ray start`` turns ``127.0.0.1`` into the machine's outward
address, but keeps the rest of 127.0.0.0/8. A driver joins with the public
``ray.init(address=cluster.address)``: connecting to a running cluster, Ray 2.x takes the
driver's node IP from the cluster's node on this machine (the head, on 127.0.0.2).
:meth:`LocalRayCluster.stop` ends exactly the processes of this cluster (never ``ray stop``,
which kills every Ray process of the machine, other runs' included): every process below
the ``ray start`` processes, and any process whose command line names the temp dir.

Example:
    >>> with LocalRayCluster([{"node2": 1}]) as cluster:  # doctest: +SKIP
    ...     ray.init(address=cluster.address)
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

RAY = str(Path(sys.executable).with_name("ray"))
#: The ports of a node besides the head's GCS port: one free port each, no clash between nodes.
_NODE_PORT_FLAGS: Final = (
    "node-manager",
    "object-manager",
    "dashboard-agent-listen",
    "dashboard-agent-grpc",
    "runtime-env-agent",
    "metrics-export",
)


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports that were free a moment ago on 127.0.0.1."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _children() -> dict[int, list[int]]:
    """Parent pid -> child pids, from /proc."""
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (children, grandchildren, ...)."""
    tree = _children()
    found: set[int] = set()
    stack = [pid]
    while stack:
        for child in tree.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def processes_naming(text: str) -> set[int]:
    """Pids whose command line contains ``text``."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if text.encode() in cmdline:
            found.add(int(entry))
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def poll_until(check: Callable[[], bool], timeout: float, interval: float) -> bool:
    """Call ``check()`` every ``interval`` seconds until it holds (``True``) or ``timeout``
    seconds have passed (``False``); what it raises goes through."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True


def wait_gone(pids: set[int], timeout: float) -> set[int]:
    """Wait until none of ``pids`` runs; return those still running after ``timeout``."""
    poll_until(lambda: not any(alive(p) for p in pids), timeout, 0.1)
    return {p for p in pids if alive(p)}


class LocalRayCluster:
    """A head node and ``len(workers)`` worker nodes, each ``ray start --block`` on 127.0.0.1.

    Args:
        workers: The custom resources of each worker node (e.g. ``[{"node2": 1}]``).
        num_cpus: CPUs of every node.
    """

    def __init__(self, workers: list[Mapping[str, float]], *, num_cpus: int = 1) -> None:
        self.num_cpus = num_cpus
        self.worker_resources = [dict(r) for r in workers]
        self.temp_dir = tempfile.mkdtemp(prefix="oegray-", dir="/tmp")  # socket paths are short
        self.nodes: list[subprocess.Popen[bytes]] = []
        self.port = 0
        #: The IP of each node: 127.0.0.2, 127.0.0.3, ... (Ray turns 127.0.0.1 into the
        #: machine's outward address; the rest of 127.0.0.0/8 is loopback and kept).
        self.ips = [f"127.0.0.{k + 2}" for k in range(1 + len(self.worker_resources))]
        #: The environment of every process of the cluster and of a driver joining it: the
        #: token authentication mode this process has. A driver reads its mode when it
        #: imports ray (off unless RAY_AUTH_MODE says otherwise), and ray.init() of a local
        #: cluster turns it on for the rest of the process (RAY_AUTH_MODE=token, the token in
        #: ~/.ray/auth_token, which the cluster's processes then read too); a driver can
        #: only join a cluster of the same mode.
        self.auth_env = {"RAY_AUTH_MODE": os.environ.get("RAY_AUTH_MODE") or "disabled"}
        self._env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **self.auth_env}

    @property
    def address(self) -> str:
        return f"{self.ips[0]}:{self.port}"

    def _start_node(self, index: int) -> subprocess.Popen[bytes]:
        """Start node ``index`` (0: the head) as one ``ray start --block`` process."""
        ports = free_ports(7)
        name = "head" if index == 0 else f"node{index + 1}"
        command = [
            RAY,
            "start",
            "--block",
            "--node-ip-address",
            self.ips[index],
            "--num-cpus",
            str(self.num_cpus),
            "--object-store-memory",
            "100000000",
            "--temp-dir",
            os.path.join(self.temp_dir, name),
            "--include-log-monitor",
            "false",
            "--disable-usage-stats",
        ]
        for flag, port in zip(_NODE_PORT_FLAGS, ports[1:], strict=True):
            command += [f"--{flag}-port", str(port)]
        if index == 0:
            self.port = ports[0]
            command += ["--head", "--port", str(self.port), "--include-dashboard", "false"]
            # A lost node is noticed within seconds (default: 15 s or more).
            command += ["--system-config", json.dumps({"health_check_period_ms": 1000})]
        else:
            resources = self.worker_resources[index - 1]
            command += ["--address", self.address, "--resources", json.dumps(resources)]
        with open(os.path.join(self.temp_dir, f"{name}.log"), "ab") as log:
            return subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._env,
                start_new_session=True,
            )

    def start(self, timeout: float = 120.0) -> LocalRayCluster:
        """Start every node and wait until the head counts them all alive."""
        try:
            self.nodes.append(self._start_node(0))
            self._wait_for_port(timeout)
            for k in range(len(self.worker_resources)):
                self.nodes.append(self._start_node(k + 1))
            self._wait_for_nodes(len(self.nodes), timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_for_port(self, timeout: float) -> None:
        def listening() -> bool:
            self._check_running()
            with contextlib.suppress(OSError):
                socket.create_connection((self.ips[0], self.port), 1).close()
                return True
            return False

        if not poll_until(listening, timeout, 0.2):
            raise TimeoutError(f"the Ray head did not listen within {timeout}s:\n{self.log_tail()}")

    def alive_nodes(self) -> int:
        """How many nodes the head counts alive (asked by a short-lived driver)."""
        script = (
            "import ray,sys;ray.init(address=sys.argv[1],logging_level='ERROR');"
            "print(sum(n['Alive'] for n in ray.nodes()))"
        )
        out = subprocess.run(
            [sys.executable, "-c", script, self.address],
            capture_output=True,
            text=True,
            env=self._env,
            timeout=60,
            check=False,
        )
        last = out.stdout.strip().splitlines()[-1:]
        return int(last[0]) if out.returncode == 0 and last and last[0].isdigit() else -1

    def _wait_for_nodes(self, count: int, timeout: float) -> None:
        if not poll_until(
            lambda: self._check_running() and self.alive_nodes() == count, timeout, 0.5
        ):
            raise TimeoutError(
                f"{count} Ray nodes were not alive within {timeout}s:\n{self.log_tail()}"
            )

    def _check_running(self) -> bool:
        """``True``, or ``RuntimeError`` when a node's ``ray start`` process exited."""
        for node in self.nodes:
            if node.poll() is not None:
                raise RuntimeError(f"a ray start process exited early:\n{self.log_tail()}")
        return True

    def log_tail(self, lines: int = 30) -> str:
        parts = []
        for log in sorted(Path(self.temp_dir).glob("*.log")):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {log.name} ---\n" + "\n".join(text))
        return "\n".join(parts)

    def processes(self) -> set[int]:
        """Every process of this cluster that runs now."""
        pids = set()
        for node in self.nodes:
            if alive(node.pid):
                pids.add(node.pid)
            pids |= descendants(node.pid)
        return (pids | processes_naming(self.temp_dir)) - {os.getpid()}

    def node_processes(self, index: int) -> set[int]:
        """The processes of node ``index`` (0: the head)."""
        node = self.nodes[index]
        return {node.pid, *descendants(node.pid)}

    def kill_node(self, index: int) -> None:
        """SIGKILL every process of node ``index`` (a lost machine)."""
        for pid in self.node_processes(index):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.nodes[index].wait(30)

    def restart_node(self, index: int, timeout: float = 120.0) -> None:
        """Bring back node ``index`` after :meth:`kill_node` (once the head saw it die)."""
        if self.nodes[index].poll() is None:
            return
        deadline = time.monotonic() + timeout
        poll_until(lambda: self.alive_nodes() == len(self.nodes) - 1, timeout, 0.5)
        self.nodes[index] = self._start_node(index)
        self._wait_for_nodes(len(self.nodes), max(1.0, deadline - time.monotonic()))

    def stop(self) -> set[int]:
        """End every process of the cluster; return those that did not die (should be none)."""
        pids = self.processes()
        for node in reversed(self.nodes):  # workers first, then the head
            with contextlib.suppress(ProcessLookupError):
                node.send_signal(signal.SIGTERM)
        left = wait_gone(pids, 20.0)
        for pid in left | self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for node in self.nodes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                node.wait(10)
        survivors = wait_gone(pids | self.processes(), 10.0)
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        return survivors

    def __enter__(self) -> LocalRayCluster:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
