"""A server in a Docker container: run an image, publish its port on 127.0.0.1, clean up.

:class:`DockerProvider` runs an image with the ``docker`` SDK (the ``[docker]`` extra) and
publishes the server's port on ``127.0.0.1`` only (or the one address ``publish_ip`` names,
e.g. a Ray node's IP), on a free host port the engine picks.
It then polls ``GET /health`` until the server answers; connection resets and empty replies
count as "not yet" (docker-proxy accepts connections before the server inside listens).
When the container exits or is not ready in time, the error carries its log.

The container is hardened: every capability dropped, ``no-new-privileges``, uid 10001, a
read-only root filesystem with a small ``/tmp`` tmpfs, and a process limit.

It never outlives its owner: :meth:`DockerProvider.stop` removes it, and so do an
exception during start, garbage collection and interpreter exit (a ``weakref.finalize``,
which runs at exit). A process killed with SIGKILL cannot clean up: its containers carry
labels naming the host and the owner's pid, and :func:`remove_orphans` (called on every
start) removes those whose owner is gone. With ``remove_with_owner=True`` a
:class:`~openenv_gym.providers.container_reaper.ContainerReaper` removes it even then, the
moment its owner is gone (a Ray actor's containers: actors may end by ``SIGKILL``).

Example:
    >>> provider = DockerProvider.serving(  # doctest: +SKIP
    ...     "openenv-gym/gymnasium:latest", ["gymnasium", "--env-id", "CartPole-v1"]
    ... )
    >>> with provider:  # doctest: +SKIP
    ...     print(provider.base_url)
    http://127.0.0.1:32771
"""

from __future__ import annotations

import contextlib
import importlib
import os
import socket
import subprocess
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, Final

from openenv_gym.client import TOKEN_ENV_VAR, is_healthy
from openenv_gym.errors import (
    DockerUnavailableError,
    ImageNotFoundError,
    ServerStartError,
)
from openenv_gym.extras import missing_extra
from openenv_gym.providers.base import ServerProvider
from openenv_gym.providers.container_reaper import REAPER_LABEL, ContainerReaper
from openenv_gym.providers.spec import DEFAULT_STARTUP_TIMEOUT

#: Label on every container we start (value: ``"1"``).
LABEL: Final = "org.openenv-gym.provider"
#: Labels naming the host and process that own the container (for :func:`remove_orphans`).
OWNER_HOST_LABEL: Final = "org.openenv-gym.owner-host"
OWNER_PID_LABEL: Final = "org.openenv-gym.owner-pid"

CONTAINER_PORT: Final = 8000
CONTAINER_USER: Final = "10001:10001"
_LOG_TAIL: Final = 60


def docker_sdk() -> Any:
    """The ``docker`` SDK module.

    Imported by name at run time: the repository's ``docker/`` directory (the Dockerfiles)
    would otherwise pass for it, as a namespace package, when the SDK is missing.

    Raises:
        DockerUnavailableError: The SDK is not installed.
    """
    try:
        module = importlib.import_module("docker")
    except ImportError:
        module = None
    if module is None or not hasattr(module, "from_env"):
        raise DockerUnavailableError(str(missing_extra("docker", "the Docker provider")))
    importlib.import_module("docker.errors")
    return module


def docker_client() -> Any:
    """A ``docker.DockerClient`` for the engine the environment names (``DOCKER_HOST``).

    Raises:
        DockerUnavailableError: The SDK is missing or no engine answers.
    """
    docker = docker_sdk()
    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except Exception as exc:
        raise DockerUnavailableError(
            f"no Docker engine answers ({type(exc).__name__}: {exc}). Start one (e.g. "
            "`sudo dockerd &` or `systemctl start docker`), check DOCKER_HOST, or make sure "
            "this user may use /var/run/docker.sock."
        ) from exc
    return client


def _remove_container(client: Any, container_id: str, owner_pid: int | None = None) -> None:
    """Stop and remove a container. Never raises (runs from finalizers).

    A forked child that inherited the provider leaves its parent's container alone.
    """
    if owner_pid is not None and os.getpid() != owner_pid:
        return
    with contextlib.suppress(Exception):
        client.api.remove_container(container_id, force=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_orphans(client: Any = None) -> list[str]:
    """Remove our containers whose owning process (on this host) is gone; return their ids."""
    client = client if client is not None else docker_client()
    host = socket.gethostname()
    removed = []
    for container in client.containers.list(
        all=True, filters={"label": LABEL}, ignore_removed=True
    ):
        labels = container.labels or {}
        if labels.get(OWNER_HOST_LABEL) != host:
            continue
        try:
            pid = int(labels.get(OWNER_PID_LABEL, ""))
        except ValueError:
            continue
        if not _pid_alive(pid):
            _remove_container(client, container.id)
            removed.append(container.id)
    return removed


class DockerProvider(ServerProvider):
    """Run an OpenEnv server image in a container published on ``127.0.0.1``.

    Args:
        image: The image, e.g. ``"openenv-gym/gymnasium:latest"``. It must exist locally
            (build ours with ``openenv-gym build``) unless ``pull=True``.
        command: The container command (``None``: the image's own). For our images it is the
            arguments after ``openenv-gym serve``; :meth:`serving` builds it.
        container_port: The port the server listens on inside the container.
        env: Environment variables for the container.
        token: A bearer token the server requires (passed as ``OPENENV_TOKEN``).
        startup_timeout: Seconds to wait for ``GET /health``.
        read_only: Mount the root filesystem read-only (``/tmp`` is a tmpfs).
        user: The ``uid:gid`` to run as; ``None`` keeps the image's user.
        pull: Pull the image when it is not present.
        run_kwargs: More ``docker.containers.run`` arguments (e.g. ``mem_limit``).
        client: A ``docker.DockerClient`` (default: from the environment).
        publish_ip: The host address the port is published on (and the URL names);
            ``127.0.0.1`` unless other machines must reach the server (a Ray node's IP).
        remove_with_owner: Also remove the container when this process is killed
            (``SIGKILL`` included) by a detached
            :class:`~openenv_gym.providers.container_reaper.ContainerReaper`.
    """

    def __init__(
        self,
        image: str,
        command: Sequence[str] | None = None,
        *,
        container_port: int = CONTAINER_PORT,
        env: Mapping[str, str] | None = None,
        token: str | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        read_only: bool = True,
        user: str | None = CONTAINER_USER,
        pull: bool = False,
        run_kwargs: Mapping[str, Any] | None = None,
        client: Any = None,
        publish_ip: str = "127.0.0.1",
        remove_with_owner: bool = False,
    ) -> None:
        self.image = image
        self.command = list(command) if command is not None else None
        self.container_port = container_port
        self.env = dict(env or {})
        if token is not None:
            self.env[TOKEN_ENV_VAR] = token
        self.token = token
        self.startup_timeout = startup_timeout
        self.read_only = read_only
        self.user = user
        self.pull = pull
        self.run_kwargs = dict(run_kwargs or {})
        self.publish_ip = publish_ip
        self.remove_with_owner = remove_with_owner
        self._client = client
        self._container: Any = None
        self._reaper: ContainerReaper | None = None
        self._base_url: str | None = None
        self._finalizer: weakref.finalize | None = None

    @classmethod
    def serving(cls, image: str, serve_args: Sequence[str], **kwargs: Any) -> DockerProvider:
        """Run one of our images with ``openenv-gym serve <serve_args>`` inside.

        Example:
            >>> provider = DockerProvider.serving(
            ...     "openenv-gym/gymnasium:latest", ["gymnasium", "--env-id", "Acrobot-v1"]
            ... )
            >>> provider.command[3:]
            ['--host', '0.0.0.0', '--port', '8000', '--insecure']

        The server listens on every address of the container's own network, which the
        engine publishes on the host's ``127.0.0.1`` only: so ``--insecure`` (no token is
        needed to listen beyond the container's loopback; with ``token=`` it is required).
        """
        port = int(kwargs.get("container_port", CONTAINER_PORT))
        command = [*serve_args, "--host", "0.0.0.0", "--port", str(port), "--insecure"]
        return cls(image, command, **kwargs)

    @property
    def base_url(self) -> str | None:
        return self._base_url

    @property
    def container_id(self) -> str | None:
        """The running container's id."""
        return None if self._container is None else str(self._container.id)

    @property
    def container_pid(self) -> int | None:
        """The process id (on this host) of the running container's main process."""
        if self._container is None:
            return None
        pid = (self._container.attrs.get("State") or {}).get("Pid")
        return int(pid) if pid else None

    @property
    def client(self) -> Any:
        """The ``docker.DockerClient`` in use."""
        if self._client is None:
            self._client = docker_client()
        return self._client

    def start(self) -> str:
        """Run the container and wait until ``/health`` answers; return the base URL.

        Raises:
            DockerUnavailableError: No Docker engine answers.
            ImageNotFoundError: The image is not present (and not pulled).
            ServerStartError: The container exited or was not ready in time (its log is
                in the message and in ``.log``).
        """
        if self._base_url is not None:
            return self._base_url
        docker = docker_sdk()
        client = self.client
        with contextlib.suppress(Exception):
            remove_orphans(client)
        self._ensure_image(client)
        labels = {
            LABEL: "1",
            OWNER_HOST_LABEL: socket.gethostname(),
            OWNER_PID_LABEL: str(os.getpid()),
        }
        if self.remove_with_owner and self._reaper is None:
            # Before the container exists: no moment where a killed owner leaves it behind.
            try:
                self._reaper = ContainerReaper.start()
            except (OSError, subprocess.SubprocessError) as exc:
                raise ServerStartError(
                    f"could not start the watcher that removes the container of {self.image} "
                    f"with this process ({exc}); pass remove_with_owner=False to run it without"
                ) from exc
        if self._reaper is not None:
            labels[REAPER_LABEL] = self._reaper.key
        try:
            container = client.containers.run(
                self.image,
                self.command,
                detach=True,
                environment=self.env,
                ports={f"{self.container_port}/tcp": (self.publish_ip, None)},
                labels=labels,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                user=self.user,
                read_only=self.read_only,
                tmpfs={"/tmp": "rw,nosuid,nodev,size=64m"},
                pids_limit=512,
                **self.run_kwargs,
            )
        except docker.errors.APIError as exc:
            self._release_reaper()
            raise ServerStartError(
                f"docker could not start a container from {self.image}: {exc}"
            ) from exc
        self._container = container
        self._finalizer = weakref.finalize(
            self, _remove_container, client, container.id, os.getpid()
        )
        with self._stop_on_failure():
            self._base_url = self._wait_until_ready(container)
        return self._base_url

    def _ensure_image(self, client: Any) -> None:
        docker = docker_sdk()

        try:
            client.images.get(self.image)
        except docker.errors.ImageNotFound:
            if not self.pull:
                raise ImageNotFoundError(
                    f"the Docker image {self.image!r} is not present. Build our images with "
                    "`openenv-gym build` (from a clone of the repository), pull it with "
                    "`docker pull`, or pass pull=True."
                ) from None
            try:
                client.images.pull(self.image)
            except docker.errors.APIError as exc:
                raise ImageNotFoundError(
                    f"the Docker image {self.image!r} is not present and pulling it failed: {exc}"
                ) from exc

    def _published_url(self, container: Any) -> str | None:
        ports = (container.attrs.get("NetworkSettings") or {}).get("Ports") or {}
        host = f"[{self.publish_ip}]" if ":" in self.publish_ip else self.publish_ip
        for binding in ports.get(f"{self.container_port}/tcp") or []:
            if binding.get("HostIp") in (self.publish_ip, "") and binding.get("HostPort"):
                return f"http://{host}:{binding['HostPort']}"
        return None

    def _wait_until_ready(self, container: Any) -> str:
        deadline = time.monotonic() + self.startup_timeout
        url: str | None = None
        while True:
            container.reload()
            status = container.status
            if status in ("exited", "dead"):
                code = container.attrs.get("State", {}).get("ExitCode")
                raise self._start_error(
                    f"the container of {self.image} exited with code {code} before it was ready"
                )
            if url is None:
                url = self._published_url(container)
            # is_healthy() treats resets and empty replies (docker-proxy) as "not yet".
            if url is not None and is_healthy(url, timeout=1.0):
                return url
            if time.monotonic() > deadline:
                raise self._start_error(
                    f"the container of {self.image} was not ready within "
                    f"{self.startup_timeout:g}s (status {status}, url {url})"
                )
            time.sleep(0.05)

    def logs(self, tail: int = _LOG_TAIL) -> str:
        """The last lines the container printed (stdout and stderr)."""
        if self._container is None:
            return ""
        try:
            raw = self._container.logs(stdout=True, stderr=True, tail=tail)
        except Exception as exc:
            return f"(no log: {exc})"
        return bytes(raw).decode(errors="replace").rstrip()

    def _start_error(self, what: str) -> ServerStartError:
        log = self.logs()
        command = " ".join(self.command) if self.command is not None else "(image default)"
        return ServerStartError(
            f"{what}. Command: {command}\n--- container log ---\n{log}", log=log
        )

    def stop(self) -> None:
        """Stop and remove the container. Idempotent."""
        if self._finalizer is not None:
            self._finalizer()
        self._container = None
        self._base_url = None
        self._release_reaper()

    def _release_reaper(self) -> None:
        reaper, self._reaper = self._reaper, None
        if reaper is not None:
            reaper.close()

    def __repr__(self) -> str:
        state = self._base_url or "not started"
        return f"DockerProvider({self.image!r}, {state})"


__all__ = [
    "CONTAINER_PORT",
    "CONTAINER_USER",
    "LABEL",
    "DockerProvider",
    "docker_client",
    "docker_sdk",
    "remove_orphans",
]
