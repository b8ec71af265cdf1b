"""The node side of a Ray-placed server: the actor that runs it, and where it runs.

A :class:`ServerActor` lives on the node Ray placed it on and owns one server there, made by
the same providers as on the driver's machine (nothing is duplicated):

* :meth:`ServerActor.start_process`: ``openenv-gym serve ...`` as its child process
  (:class:`~openenv_gym.providers.LocalServerProcess`), bound to the node's IP. The server
  watches its stdin, a pipe from the actor, and exits as soon as the actor is gone.
* :meth:`ServerActor.start_container`: an OpenEnv image in a container of the node's Docker
  engine (:class:`~openenv_gym.providers.DockerProvider`), its port published on the node's
  IP; readiness polls ``/health`` and counts connection resets as "not yet" (docker-proxy
  accepts before the server listens). A detached
  :class:`~openenv_gym.providers.container_reaper.ContainerReaper` removes the container the
  moment the actor is gone, however it ends (``ray.kill``, its driver's death, the loss of
  the raylet: each can be a ``SIGKILL``).

Each start reports a :class:`ServerLocation`. The driver side is
:class:`~openenv_gym.providers.ray.RayServer`; this module imports without Ray.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from openenv_gym.providers.base import ServerProvider
from openenv_gym.providers.docker import DockerProvider
from openenv_gym.providers.local import LocalServerProcess


@dataclass(frozen=True)
class ServerLocation:
    """Where a Ray-placed server runs."""

    #: The server's base URL (``http://NODE_IP:PORT``).
    url: str
    #: The Ray node id (hex) of the node it runs on.
    node_id: str
    #: That node's IP address.
    node_ip: str
    #: The process id of the server process (a container's main process), on that node.
    pid: int
    #: The process id of the actor that owns it, on that node.
    actor_pid: int
    #: The id of the container the server runs in, on that node's engine (else ``None``).
    container_id: str | None = None


class ServerActor:
    """The Ray actor behind a :class:`~openenv_gym.providers.ray.RayServer`: owns one
    server (a child process or a container) on its node.

    Made a Ray actor class by the driver (``ray.remote(ServerActor)``).
    """

    def __init__(self) -> None:
        self._server: ServerProvider | None = None

    def node(self) -> tuple[str, str]:
        """The Ray node id and IP this actor was placed on."""
        import ray

        return ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address()

    def start_process(
        self,
        serve_args: list[str],
        host: str | None,
        env: dict[str, str],
        startup_timeout: float,
    ) -> ServerLocation:
        """Start ``openenv-gym serve <serve_args>`` bound to ``host`` (the node's IP if
        ``None``) and wait until it answers ``/health``."""
        node_id, node_ip = self.node()
        server = LocalServerProcess(  # reached over TCP, from any node: no Unix socket
            serve_args,
            startup_timeout=startup_timeout,
            env=env,
            host=host or node_ip,
            unix_socket=False,
        )
        self._server = server
        url = server.start()
        if server.pid is None:  # start() returned, so the process runs
            raise RuntimeError(f"the server at {url} has no process")
        return ServerLocation(url, node_id, node_ip, server.pid, os.getpid())

    def start_container(
        self,
        image: str,
        serve_args: list[str] | None,
        host: str | None,
        token: str | None,
        startup_timeout: float,
        docker_kwargs: Mapping[str, Any],
    ) -> ServerLocation:
        """Run ``image`` on this node's Docker engine, published on ``host`` (the node's IP
        if ``None``), and wait until it answers ``/health``.

        ``serve_args`` is the command after ``openenv-gym serve`` for our images; ``None``
        keeps the image's own command. The container is removed with this actor.
        """
        node_id, node_ip = self.node()
        options: dict[str, Any] = {
            **docker_kwargs,
            "token": token,
            "startup_timeout": startup_timeout,
            "publish_ip": host or node_ip,
            "remove_with_owner": True,
        }
        server = (
            DockerProvider(image, **options)
            if serve_args is None
            else DockerProvider.serving(image, serve_args, **options)
        )
        self._server = server
        url = server.start()
        return ServerLocation(
            url,
            node_id,
            node_ip,
            server.container_pid or 0,
            os.getpid(),
            container_id=server.container_id,
        )

    def stop(self) -> None:
        """Stop the server (idempotent): end the process, or remove the container."""
        if self._server is not None:
            self._server.stop()

    def log_tail(self, lines: int = 40) -> str:
        """The last lines the server printed."""
        if isinstance(self._server, LocalServerProcess):
            return self._server.log_tail(lines)
        if isinstance(self._server, DockerProvider):
            return self._server.logs(lines)
        return ""


#: The ``docker_kwargs`` a container on a Ray node accepts (``client``, ``token``,
#: ``startup_timeout``, ``publish_ip`` and ``remove_with_owner`` are set by the fleet).
CONTAINER_OPTIONS: Final = (
    "container_port",
    "env",
    "read_only",
    "user",
    "pull",
    "run_kwargs",
)


__all__ = ["CONTAINER_OPTIONS", "ServerActor", "ServerLocation"]
