"""What the contenders of one run share: the env specs, the settings and our servers.

Example:
    >>> ENV_SPECS["Pong"].make_kwargs
    {'frameskip': 4, 'repeat_action_probability': 0.0}
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

from openenv_gym.bench.links import PROFILES, LinkProfile
from openenv_gym.bench.measure import CellResult, ContenderUnavailableError


@dataclass(frozen=True)
class EnvSpec:
    """One benchmarked environment, named the way each contender needs it.

    Attributes:
        name: Short name used in tables and ``--envs`` (``CartPole``, ``Pong``).
        n_actions: Size of the Discrete action space (random actions are drawn from it).
        official_action_field: The action field name on the wire (for the official client).
        gym_id: The Gymnasium id for the raw / Sync / Async contenders (``""``: none).
        make_kwargs: ``gymnasium.make`` keyword arguments.
        serve_args: ``openenv-gym serve ...`` arguments for our server.
        openenv_id: Our Gymnasium id for the same env served remotely.
        openenv_kwargs: Extra keyword arguments for our env / vector env.
        envpool_id: The envpool task id.
        envpool_kwargs: ``envpool.make`` keyword arguments matching ``make_kwargs``.
        requires_module: A module the raw env and our server need (``ale_py``), or ``None``.
        raw_obs_bytes: One observation as raw array bytes (for a link's bandwidth bound).
        server: Starts the env's server itself (given the settings; yields its URL) in place
            of ``openenv-gym serve serve_args``; ``None``: ours.
        contenders: The only contenders that run on this env (``None``: every one but those
            that name their envs).
    """

    name: str
    n_actions: int
    official_action_field: str = "action"
    gym_id: str = ""
    make_kwargs: dict[str, Any] = field(default_factory=dict)
    serve_args: tuple[str, ...] = ()
    openenv_id: str = ""
    openenv_kwargs: dict[str, Any] = field(default_factory=dict)
    envpool_id: str = ""
    envpool_kwargs: dict[str, Any] = field(default_factory=dict)
    requires_module: str | None = None
    raw_obs_bytes: int = 0
    server: Callable[[Settings], AbstractContextManager[str]] | None = None
    contenders: tuple[str, ...] | None = None


def variable_time_server(settings: Settings) -> AbstractContextManager[str]:
    """The ``Variable`` env's server: the official package's, exponential step times (see
    :mod:`openenv_gym.bench.variable_steps`), with room for the largest N twice over."""
    from openenv_gym.bench.variable_steps import MEAN_MS, serve

    return serve(MEAN_MS / 1000, 2 * max(settings.sizes, default=1) + 8)


ENV_SPECS: Final[dict[str, EnvSpec]] = {
    "CartPole": EnvSpec(
        name="CartPole",
        gym_id="CartPole-v1",
        n_actions=2,
        serve_args=("gymnasium", "--env-id", "CartPole-v1"),
        openenv_id="openenv/CartPole-v1",
        envpool_id="CartPole-v1",
        raw_obs_bytes=4 * 4,  # four float32
    ),
    "Pong": EnvSpec(
        name="Pong",
        gym_id="ALE/Pong-v5",
        # Our Atari server steps with frameskip 4 and no sticky actions: match it.
        make_kwargs={"frameskip": 4, "repeat_action_probability": 0.0},
        n_actions=6,
        serve_args=(
            "atari",
            "--game",
            "pong",
            "--obs-type",
            "rgb",
            "--frameskip",
            "4",
            "--repeat-action-probability",
            "0",
        ),
        openenv_id="openenv/Atari-v0",
        openenv_kwargs={"game": "pong"},
        official_action_field="action_id",
        envpool_id="Pong-v5",
        # Full RGB frames, no stacking, no sticky actions, no episodic life or clipping.
        envpool_kwargs={
            "frame_skip": 4,
            "repeat_action_probability": 0.0,
            "img_height": 210,
            "img_width": 160,
            "gray_scale": False,
            "stack_num": 1,
            "episodic_life": False,
            "reward_clip": False,
            "noop_max": 1,
        },
        requires_module="ale_py",
        raw_obs_bytes=210 * 160 * 3,  # one RGB screen
    ),
    # An official-package server whose steps take a variable time: the pool's workload.
    "Variable": EnvSpec(
        name="Variable",
        n_actions=2,
        requires_module="openenv",
        raw_obs_bytes=8,
        server=variable_time_server,
        contenders=("variable-vector", "variable-pool"),
    ),
}


@dataclass
class Settings:
    """How the suite runs.

    Attributes:
        envs: Env names from :data:`ENV_SPECS`, in order.
        sizes: The N values, in order.
        seconds: Timed window per cell.
        warmup: Warm-up before each timed window.
        servers: Our server processes per env (sessions are spread over them).
        workers: ``--workers`` per server process (``None``: the server's default).
        busy_poll_us: ``--busy-poll-us`` of our servers (``0``: off; ``None``: their
            default).
        contenders: Contender keys to run (``None``: all).
        seed: The action stream seed.
        link: Where the servers stand (see :mod:`openenv_gym.bench.links`).
        server_bounds: Give each remote row its physical bounds (``N/RTT`` and
            ``N/(RTT + server time)``, :mod:`openenv_gym.bench.bounds`); on for every
            ``--link`` but ``loopback``.
        contention: CPU-bound processes run beside every contender
            (:mod:`openenv_gym.bench.contention`).
    """

    envs: Sequence[str]
    sizes: Sequence[int]
    seconds: float = 3.0
    warmup: float = 0.5
    servers: int = 1
    workers: int | None = None
    busy_poll_us: int | None = None
    contenders: Sequence[str] | None = None
    seed: int = 0
    link: LinkProfile = PROFILES["loopback"]
    server_bounds: bool = False
    contention: int = 0


@dataclass
class Context:
    """What the contenders of one env share: the spec, our servers, the settings.

    Attributes:
        spec: The env.
        settings: The suite settings.
        urls: Base URLs of our running servers (empty when they could not start).
        server_problem: Why there are no servers, or ``""``.
        notes: Remarks for the report.
        server_urls: Our servers' own URLs (``urls`` are the link proxies in front of them).
    """

    spec: EnvSpec
    settings: Settings
    urls: list[str] = field(default_factory=list)
    server_problem: str = ""
    notes: list[str] = field(default_factory=list)
    server_urls: list[str] = field(default_factory=list)

    def require_servers(self) -> list[str]:
        """Our servers' URLs, or :class:`ContenderUnavailableError` saying why there are none."""
        if not self.urls:
            raise ContenderUnavailableError(self.server_problem or "no server running")
        return self.urls

    def add_bounds(self, result: CellResult) -> None:
        """Give a measured remote row its bounds, from the step cost our servers report now
        (:mod:`openenv_gym.bench.bounds`)."""
        from openenv_gym.bench.bounds import RowBound, measured_step_seconds

        cost = measured_step_seconds(self.server_urls)
        if cost is None or not result.ok:
            return
        settings = self.settings
        bound = RowBound(
            settings.link,
            result.num_envs,
            cost,
            settings.workers or 1,
            servers=max(1, len(self.server_urls)),
        )
        result.bound, result.bounds = bound.with_server, bound.describe()


def missing_module(name: str | None) -> str:
    """``""`` when ``name`` is importable (or ``None``), else why the env cannot run."""
    if name is None or importlib.util.find_spec(name) is not None:
        return ""
    return f"{name} is not installed (pip install 'openenv-gym[atari]')"


@contextmanager
def running_servers(context: Context, log: Callable[[str], None]) -> Iterator[Context]:
    """Start ``settings.servers`` of our servers for ``context.spec`` (children, 127.0.0.1).

    A server that cannot start is not fatal: ``context.server_problem`` says why, and the
    contenders that need it are skipped with that reason.
    """
    from openenv_gym.bench.link_server import linked_url

    spec, settings = context.spec, context.settings
    link = settings.link
    context.server_problem = missing_module(spec.requires_module)
    if link.server_source == "docker" and not context.server_problem:
        context.server_problem = docker_problem(spec)
    if context.server_problem:
        yield context
        return
    if spec.server is not None:
        with ExitStack() as stack:
            try:
                url = stack.enter_context(spec.server(settings))
                if link.proxied:
                    url = stack.enter_context(linked_url(url, link))
                context.urls.append(url)
            except Exception as exc:
                context.server_problem = f"the {spec.name} server did not start: {one_line(exc)}"
            else:
                log(f"[{spec.name}] server: {url}")
            yield context
        return
    serve_args = list(spec.serve_args)
    if settings.workers is not None:
        serve_args += ["--workers", str(settings.workers)]
    if settings.busy_poll_us is not None:
        serve_args += ["--busy-poll-us", str(settings.busy_poll_us)]
    with ExitStack() as stack:
        try:
            for _ in range(settings.servers):
                server = server_for(link, spec, serve_args)
                stack.callback(server.stop)
                url = server.start()
                context.server_urls.append(url)
                if link.proxied:
                    url = stack.enter_context(linked_url(url, link))
                context.urls.append(url)
        except Exception as exc:
            context.urls.clear()
            context.server_urls.clear()
            context.server_problem = f"our server did not start: {one_line(exc)}"
        else:
            where = f"in {image_of(spec)} containers, " if link.server_source == "docker" else ""
            log(f"[{spec.name}] servers: {', '.join(context.urls)} ({where}{' '.join(serve_args)})")
            if link.emulated or link.server_source == "docker":
                context.notes += link_notes(spec, settings)
        yield context


def image_of(spec: EnvSpec) -> str:
    """The Docker image of our server for ``spec`` (``openenv-gym build`` makes it)."""
    from openenv_gym.envs.registry import SERVER_ENVS

    return SERVER_ENVS[spec.serve_args[0]].image.tag


def docker_problem(spec: EnvSpec) -> str:
    """``""`` when ``--link docker`` can run ``spec``'s server here, else why not (no
    ``docker`` SDK, no engine, or no image: the message says what to run)."""
    from openenv_gym.errors import OpenEnvGymError
    from openenv_gym.providers.docker import docker_client, docker_sdk

    try:
        sdk = docker_sdk()
        client = docker_client()
    except OpenEnvGymError as exc:
        return f"--link docker needs a Docker engine: {exc}"
    image = image_of(spec)
    try:
        client.images.get(image)
    except sdk.errors.ImageNotFound:
        return f"--link docker: the image {image} is not present; build it with `openenv-gym build`"
    except sdk.errors.APIError as exc:
        return f"--link docker: the engine did not answer ({exc})"
    finally:
        client.close()
    return ""


def server_for(link: LinkProfile, spec: EnvSpec, serve_args: Sequence[str]) -> Any:
    """A not yet started server (a :class:`~openenv_gym.providers.ServerProvider`) for
    ``spec``, standing where ``link`` puts it: a child process on this host (``loopback``),
    one with a private ``/dev/shm`` (the emulated links), or a container of our image
    published on 127.0.0.1 (``docker``: the docker provider under ``openenv/Docker-v0``,
    its own ``/dev/shm``, every byte through docker-proxy)."""
    from openenv_gym.bench.link_server import PrivateShmServerProcess
    from openenv_gym.providers import LocalServerProcess

    if link.server_source == "docker":
        from openenv_gym.providers.docker import DockerProvider

        return DockerProvider.serving(image_of(spec), serve_args)
    return (PrivateShmServerProcess if link.emulated else LocalServerProcess)(list(serve_args))


def link_notes(spec: EnvSpec, settings: Settings) -> list[str]:
    """The report's notes on an emulated link: what it is, its limits per N, the proxy's own."""
    from openenv_gym.bench.link_server import proxy_ceiling

    link = settings.link
    if not link.emulated:
        return [f"link {link.describe()}"]
    limits = "; ".join(
        f"N={n}: {link.bounds(n, spec.raw_obs_bytes)}" for n in sorted({1, *settings.sizes})
    )
    shared = (
        "one link per server: --servers S multiplies the bandwidth by S"
        if settings.servers > 1
        else "every connection shares the one link"
    )
    return [
        f"link {link.describe()}; {shared}",
        f"{spec.name} over link {link.name}, its limits (one round trip per vector step; raw "
        f"observation bytes): {limits}",
        *([proxy_ceiling().describe()] if link.proxied else []),
    ]


def one_line(exc: BaseException) -> str:
    """``Type: first line of the message``, for tables and progress lines."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
