"""Servers placed on a Ray cluster: each one a Ray actor that owns a server process or
container on its node.

:class:`RayFleet` is a :class:`~openenv_gym.providers.server_fleet.ServerFleet`: a vector env
given ``fleet=RayFleet(...)`` (or ``fleet="ray"``) starts each of its embedded servers as a
:class:`RayServer`, and connects to them like to any other servers. A :class:`RayServer`
creates one actor (``num_cpus`` CPUs and ``resources`` reserved, placed by
``scheduling_strategy``: ``"SPREAD"`` by default, so servers land on as many nodes as
possible); the actor (:class:`~openenv_gym.providers.ray_actor.ServerActor`) starts the
server on its node with the same providers as here, and reports the URL, node and process
ids:

* a registered id or any Gymnasium id: ``openenv-gym serve ...`` as the actor's child
  process (:class:`~openenv_gym.providers.LocalServerProcess`), bound to the node's IP;
* ``image=...`` (an OpenEnv image: ours, with the id's ``serve`` arguments, or any image
  through ``openenv/Docker-v0``): a container of the node's Docker engine
  (:class:`~openenv_gym.providers.DockerProvider`), its port published on the node's IP.

Lifecycle: :meth:`RayServer.stop` (the vector env's ``close()``) stops the server, then kills
the actor. The actor is not detached, so Ray ends it when its handle is garbage collected
and when the driver (this process) exits or dies. Whatever ends the actor (``ray.kill``,
the driver's death, the loss of the node), its server goes with it: a server process
watches its stdin, a pipe from the actor; a container is removed by a detached watcher
(:class:`~openenv_gym.providers.container_reaper.ContainerReaper`). A vector env sees a
lost server as a :class:`~openenv_gym.errors.SubEnvError`, or, with ``reconnect=True``,
gets a new server from Ray (on any live node) and reopens the sessions there.

Tokens: a server must not serve whoever connects, from other machines or other users of
its own. Every server of a fleet requires a bearer token: the driver's ``token=`` or
``OPENENV_TOKEN`` when set, else one the fleet makes up (``secrets.token_urlsafe(32)``, one
per fleet). The vector env's sessions send it by
themselves (:attr:`RayServer.token`).

Ray itself is the user's: call ``ray.init(address=...)`` first (the ``[ray]`` extra installs
it, and every node needs openenv-gym installed too, with ``[docker]`` and a Docker engine on
the nodes that run images).

Example:
    >>> import ray  # doctest: +SKIP
    >>> from openenv_gym import OpenEnvVectorEnv
    >>> ray.init(address="auto")  # doctest: +SKIP
    >>> envs = OpenEnvVectorEnv(  # doctest: +SKIP
    ...     "openenv/Atari-v0", 256, fleet=RayFleet(num_cpus=2), sessions_per_server=16
    ... )
"""

from __future__ import annotations

import contextlib
import functools
import logging
import secrets
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from openenv_gym.client import TOKEN_ENV_VAR, resolve_token
from openenv_gym.errors import FleetConfigError, RayUnavailableError, ServerStartError
from openenv_gym.providers.base import ServerProvider
from openenv_gym.providers.ray_actor import CONTAINER_OPTIONS, ServerActor, ServerLocation
from openenv_gym.providers.server_fleet import ServerFleet
from openenv_gym.providers.spec import DEFAULT_SERVER_SPEC, ServerSpec

logger = logging.getLogger(__name__)

#: Ray's built-in scheduling strategies that are given by name.
STRATEGY_NAMES: Final = ("SPREAD", "DEFAULT")
DEFAULT_PLACEMENT_TIMEOUT: Final = 120.0
DEFAULT_STOP_TIMEOUT: Final = 10.0
_INIT_HINT: Final = (
    "call ray.init(address='auto') on a machine of the cluster (or "
    "ray.init(address='HEAD_IP:6379')) before starting servers on it"
)


def ray_module() -> Any:
    """The ``ray`` module, initialised by the user.

    Raises:
        RayUnavailableError: Ray is not installed, or ``ray.init`` was not called.
    """
    try:
        import ray
    except ImportError:
        raise RayUnavailableError(
            "Ray is not installed: pip install 'openenv-gym[ray]' (on every node of the cluster)"
        ) from None
    if not ray.is_initialized():
        raise RayUnavailableError(f"Ray is not initialised in this process: {_INIT_HINT}")
    return ray


@functools.cache
def _actor_class() -> Any:
    return ray_module().remote(ServerActor)


class RayServer(ServerProvider):
    """One server (``openenv-gym serve ...`` or an image's container), started by a Ray
    actor on a node Ray picks.

    Made by :meth:`RayFleet.server`; :meth:`start` places the actor, starts the server and
    returns its URL; :meth:`stop` ends both. It may be started again after a stop (a
    reconnecting vector env does, when the server or its node was lost).

    Args:
        serve_args: The arguments after ``openenv-gym serve``; with ``image``, ``None``
            keeps the image's own command.
        fleet: The fleet whose placement options (and token) it uses.
        token: The token the server requires; ``None``: ``OPENENV_TOKEN``, else the
            fleet's own (:attr:`RayFleet.token`). Clients find it in :attr:`token`.
        startup_timeout: Seconds the server gets to answer ``/health`` once placed.
        image: Run the server in a container of this image on the node's Docker engine.
        docker_kwargs: More :class:`~openenv_gym.providers.DockerProvider` arguments for
            the container (those of :data:`~openenv_gym.providers.ray_actor.CONTAINER_OPTIONS`).

    Raises (from :meth:`start`):
        RayUnavailableError: Ray is missing or not initialised.
        ServerStartError: No node took the actor within the placement timeout, the actor
            died, or the server did not start (the error carries its output; its
            subclasses ``DockerUnavailableError`` and ``ImageNotFoundError`` come from a
            node without an engine or without the image).
    """

    def __init__(
        self,
        serve_args: Sequence[str] | None,
        fleet: RayFleet,
        *,
        token: str | None = None,
        startup_timeout: float = 60.0,
        image: str | None = None,
        docker_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        if serve_args is None and image is None:
            raise FleetConfigError(
                "a RayServer needs serve_args (the arguments after `openenv-gym serve`) or "
                "an image=... whose own command it runs; got neither"
            )
        self.serve_args = list(serve_args) if serve_args is not None else None
        self.fleet = fleet
        self.image = image
        self.docker_kwargs = dict(docker_kwargs or {})
        given = resolve_token(token)
        self.token = given if given is not None else fleet.token
        self.startup_timeout = startup_timeout
        self._actor: Any = None
        self._placed = False
        self._location: ServerLocation | None = None

    @property
    def base_url(self) -> str | None:
        return self._location.url if self._location is not None else None

    @property
    def location(self) -> ServerLocation | None:
        """Where the running server is (node id and IP, process ids), else ``None``."""
        return self._location

    @property
    def actor(self) -> Any:
        """The Ray actor handle while the server runs, else ``None``."""
        return self._actor

    def start(self) -> str:
        """Place the actor, start the server, return its URL.

        An actor that dies before its server is ready (its node was lost: Ray may place a
        new actor on a node it does not yet know is dead) is replaced by a new one until
        the placement timeout has passed.
        """
        if self._location is not None:
            return self._location.url
        ray = ray_module()
        deadline = time.monotonic() + self.fleet.placement_timeout
        while True:
            try:
                location = self._start_actor(ray, deadline)
                break
            except ray.exceptions.RayActorError as exc:
                self.stop()
                if exc.actor_init_failed:
                    raise ServerStartError(
                        f"the server actor of {self._command!r} could not be created on its "
                        f"node (is openenv-gym installed on every node?): {exc}"
                    ) from None
                if time.monotonic() > deadline:
                    raise ServerStartError(
                        f"the server actors of {self._command!r} kept dying before their server "
                        f"was ready, for {self.fleet.placement_timeout:g}s; the last: {exc}"
                    ) from None
                logger.info("a server actor died before it was ready (%s); placing another", exc)
            except BaseException:
                self.stop()
                raise
        self._location = location
        return location.url

    @property
    def _command(self) -> str:
        if self.image is None:
            return f"openenv-gym serve {' '.join(self.serve_args or [])}"
        command = " ".join(self.serve_args) if self.serve_args is not None else "(its command)"
        return f"the image {self.image} {command}"

    def _start_actor(self, ray: Any, deadline: float) -> ServerLocation:
        """One actor: placed, then its server started (Ray's actor deaths propagate)."""
        actor = _actor_class().options(**self.fleet.actor_options()).remote()
        self._actor = actor
        timeout = max(0.0, deadline - time.monotonic())
        try:
            _, node_ip = ray.get(actor.node.remote(), timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            wanted = {"CPU", *self.fleet.resources}
            free = {k: v for k, v in ray.available_resources().items() if k in wanted}
            raise ServerStartError(
                f"no Ray node took the server actor of {self._command!r} within "
                f"{self.fleet.placement_timeout:g}s: each server asks for "
                f"{self.fleet.describe_demand()}, the cluster has {free or 'none of these'} "
                "free. Lower num_cpus/resources of the RayFleet, add nodes, or raise its "
                "placement_timeout"
            ) from None
        self._placed = True
        if self.image is None:
            env = {TOKEN_ENV_VAR: self.token} if self.token is not None else {}
            ref = actor.start_process.remote(
                self.serve_args, self.fleet.host, env, self.startup_timeout
            )
        else:
            ref = actor.start_container.remote(
                self.image,
                self.serve_args,
                self.fleet.host,
                self.token,
                self.startup_timeout,
                self.docker_kwargs,
            )
        try:
            location: ServerLocation = ray.get(ref, timeout=self.startup_timeout + 30.0)
        except ray.exceptions.GetTimeoutError:
            raise ServerStartError(
                f"the server {self._command!r} on the Ray node {node_ip} was not ready within "
                f"{self.startup_timeout:g}s"
            ) from None
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause
            if isinstance(cause, ServerStartError):  # DockerUnavailableError, ... keep their type
                raise type(cause)(f"On the Ray node {node_ip}: {cause}", log=cause.log) from None
            raise ServerStartError(
                f"the server actor of {self._command!r} on the Ray node {node_ip} failed: {exc}"
            ) from None
        return location

    def stop(self) -> None:
        """Stop the server, then kill its actor. Idempotent; never raises."""
        actor, self._actor = self._actor, None
        placed, self._placed = self._placed, False
        self._location = None
        ray = sys.modules.get("ray")
        if actor is None or ray is None or not ray.is_initialized():
            return  # no actor, or the driver left the cluster (which ended its actors)
        if placed:  # dead already, or unreachable: killing it below ends the server too
            with contextlib.suppress(ray.exceptions.RayError):
                ray.get(actor.stop.remote(), timeout=self.fleet.stop_timeout)
        with contextlib.suppress(ray.exceptions.RayError, ValueError):
            ray.kill(actor)

    def __repr__(self) -> str:
        where = (
            f"{self._location.url} on node {self._location.node_id[:8]}"
            if self._location
            else "not started"
        )
        what = self.serve_args if self.image is None else f"{self.image} {self.serve_args}"
        return f"RayServer({what!r}, {where})"


class RayFleet(ServerFleet):
    """Embedded servers (processes or containers) as Ray actors spread over the nodes of
    the cluster.

    Args:
        num_cpus: CPUs reserved for each server (its actor). With the vector env's default
            ``workers="auto"``, the server runs ``max(1, int(num_cpus))`` worker processes.
        resources: More Ray resources each server needs (``{"GPU": 1}``, custom node
            resources such as ``{"atari_node": 1}``).
        scheduling_strategy: ``"SPREAD"`` (default: servers over as many nodes as possible),
            ``"DEFAULT"``, or a Ray strategy object
            (``NodeAffinitySchedulingStrategy``, ``PlacementGroupSchedulingStrategy``).
        host: The address every server binds (a container: is published on); ``None``
            binds its node's IP (what the driver reaches). Every server requires a bearer
            token: the env's ``token=``, else the driver's ``OPENENV_TOKEN``, else
            :attr:`token`, made up for this fleet.
        placement_timeout: Seconds to wait for a node to take a server's actor.
        stop_timeout: Seconds a stopping server gets before its actor is killed.
        actor_options: More ``ActorClass.options(...)`` of the server actors
            (``runtime_env``, ``memory``, ``label_selector``, ...).

    Raises:
        FleetConfigError: An option is invalid.

    Example:
        >>> fleet = RayFleet(num_cpus=2, resources={"atari_node": 1})
        >>> fleet
        RayFleet(num_cpus=2.0, resources={'atari_node': 1.0}, scheduling_strategy='SPREAD')
        >>> len(fleet.token), len(RayFleet(host="127.0.0.1").token)
        (43, 43)
    """

    def __init__(
        self,
        num_cpus: float = 1.0,
        *,
        resources: Mapping[str, float] | None = None,
        scheduling_strategy: Any = "SPREAD",
        host: str | None = None,
        placement_timeout: float = DEFAULT_PLACEMENT_TIMEOUT,
        stop_timeout: float = DEFAULT_STOP_TIMEOUT,
        actor_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.num_cpus = _non_negative("num_cpus", num_cpus)
        self.resources = {
            str(name): _non_negative(f"resources[{name!r}]", amount)
            for name, amount in _mapping("resources", resources).items()
        }
        if isinstance(scheduling_strategy, str) and scheduling_strategy not in STRATEGY_NAMES:
            raise FleetConfigError(
                f"expected scheduling_strategy to be one of {list(STRATEGY_NAMES)} or a Ray "
                f"scheduling strategy object, got {scheduling_strategy!r}"
            )
        self.scheduling_strategy = scheduling_strategy
        if host is not None and (not isinstance(host, str) or not host.strip()):
            raise FleetConfigError(f"expected host to be an address string or None, got {host!r}")
        self.host = host
        # Sent by the fleet's sessions: no one else, on another machine or this one, opens
        # sessions on the fleet's servers.
        self._token = secrets.token_urlsafe(32)
        self.placement_timeout = _positive("placement_timeout", placement_timeout)
        self.stop_timeout = _positive("stop_timeout", stop_timeout)
        self.extra_actor_options = dict(_mapping("actor_options", actor_options))
        reserved = {"num_cpus", "resources", "scheduling_strategy", "max_restarts", "lifetime"}
        clash = reserved & set(self.extra_actor_options)
        if clash:
            raise FleetConfigError(
                f"actor_options may not set {sorted(clash)}: use RayFleet's own arguments "
                "(servers are never detached or restarted by Ray; reconnect=True replaces them)"
            )

    @property
    def token(self) -> str:
        """The token this fleet's servers require when none is given (``token=`` or the
        driver's ``OPENENV_TOKEN``): random, made up for this fleet."""
        return self._token

    def actor_options(self) -> dict[str, Any]:
        """The ``.options(...)`` of each server actor."""
        options: dict[str, Any] = {
            "num_cpus": self.num_cpus,
            "scheduling_strategy": self.scheduling_strategy,
            "max_restarts": 0,  # a lost server is replaced by the vector env, not by Ray
            **self.extra_actor_options,
        }
        if self.resources:
            options["resources"] = dict(self.resources)
        return options

    def describe_demand(self) -> str:
        """What one server asks of a node, in words."""
        return " and ".join(
            [f"{self.num_cpus:g} CPU"] + [f"{v:g} {k}" for k, v in self.resources.items()]
        )

    def server(
        self, serve_args: Sequence[str] | None, server: ServerSpec = DEFAULT_SERVER_SPEC
    ) -> RayServer:
        """A :class:`RayServer` for ``openenv-gym serve <serve_args>`` (not started yet), or,
        with ``image``, for a container of that image (``serve_args=None``: its own command).

        ``unix_socket`` is ignored (the server is reached over TCP, from any node);
        ``workers="auto"`` means one worker process per reserved CPU.

        Raises:
            FleetConfigError: ``image`` is not an image name, ``docker_kwargs`` come
                without ``image`` or set what the fleet sets.
        """
        image, workers = server.image, server.workers  # server.unix_socket: TCP only here
        if image is not None and (not isinstance(image, str) or not image.strip()):
            raise FleetConfigError(f"expected image to be an image name or None, got {image!r}")
        options = dict(_mapping("docker_kwargs", server.docker_kwargs))
        if options and image is None:
            raise FleetConfigError(
                f"docker_kwargs={options!r} apply to a container: pass image=... too (e.g. "
                "image='openenv-gym/gymnasium:latest'), or drop docker_kwargs"
            )
        not_allowed = sorted(set(options) - set(CONTAINER_OPTIONS))
        if not_allowed:
            raise FleetConfigError(
                f"docker_kwargs may not set {not_allowed} on a RayFleet: a container on a Ray "
                f"node takes {list(CONTAINER_OPTIONS)} (the node's own Docker engine runs it; "
                "its token, startup_timeout and published address come from the fleet)"
            )
        if workers == "auto":
            workers = max(1, int(self.num_cpus))
        args = list(serve_args) if serve_args is not None else None
        if workers is not None and args is not None:
            args += ["--workers", str(workers)]
        return RayServer(
            args,
            self,
            token=server.token,
            startup_timeout=server.startup_timeout,
            image=image,
            docker_kwargs=options,
        )

    def __repr__(self) -> str:
        parts = [f"num_cpus={self.num_cpus!r}"]
        if self.resources:
            parts.append(f"resources={self.resources!r}")
        parts.append(f"scheduling_strategy={self.scheduling_strategy!r}")
        if self.host is not None:
            parts.append(f"host={self.host!r}")
        return f"RayFleet({', '.join(parts)})"


def _mapping(name: str, value: Any) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise FleetConfigError(f"expected {name} to be a dict, got {value!r}")
    return value


def _non_negative(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise FleetConfigError(f"expected {name} to be a number >= 0, got {value!r}")
    return float(value)


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise FleetConfigError(f"expected {name} to be a number > 0, got {value!r}")
    return float(value)


__all__ = ["RayFleet", "RayServer", "ray_module"]
