"""The servers and sessions behind a vector env: capacity checks, opening, reconnecting.

A :class:`Fleet` holds the URL and the open :class:`~openenv_gym.client.Session` of each
sub-env, and the servers the vector env started (and stops on close). Before opening
sessions it checks that the servers can take them (``GET /capacity``, or
``CAPACITY_REACHED`` while opening on official servers) and raises
:class:`~openenv_gym.errors.InsufficientCapacityError` otherwise. With ``reconnect=True`` a
broken session is reopened (an embedded server that died is restarted first).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Mapping, Sequence
from typing import Any, Final

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import load_env_creator

from openenv_gym.client import Session, exchange_many, is_healthy, run_sync
from openenv_gym.client.capacity import fetch_capacity, insufficient_capacity_error
from openenv_gym.env import OpenEnvEnv
from openenv_gym.errors import (
    CapacityReachedError,
    OpenEnvGymError,
    ProtocolError,
    ServerConnectionError,
    ServerReplyError,
    SubEnvError,
    VectorUsageError,
)
from openenv_gym.providers.base import ServerProvider
from openenv_gym.providers.fleet import FleetProvider, resolve_fleet, using_fleet
from openenv_gym.wire.binary import parse_frame
from openenv_gym.wire.messages import encode_message, state_message

#: The ``state`` request (a session accepted by a server answers it; a refused one gets
#: ``CAPACITY_REACHED``).
STATE_FRAME: Final = encode_message(state_message())
#: How many servers a vector env starts at once on a fleet (their nodes do the work).
PARALLEL_FLEET_STARTS: Final = 16


class Fleet:
    """The sessions of ``num_envs`` sub-envs and the servers they live on.

    Args:
        num_envs: The number of sub-envs.
        encoding: The ``encoding=`` every session is opened with.
        connect_options: ``connect_timeout`` and ``token`` (enough for capacity checks);
            :meth:`adopt` completes them with the options of the first session.
        server_fleet: Where the embedded servers run (``None``: child processes here).
    """

    def __init__(
        self,
        num_envs: int,
        *,
        encoding: str,
        connect_options: dict[str, Any],
        server_fleet: FleetProvider | None = None,
    ) -> None:
        self.num_envs = num_envs
        self.server_fleet = server_fleet
        self.encoding = encoding
        self.connect_options = dict(connect_options)
        #: The server URL of each sub-env.
        self.urls: list[str] = []
        #: The open session of each sub-env.
        self.sessions: list[Session] = []
        #: The servers this fleet started (and stops on close), by URL.
        self.providers: dict[str, ServerProvider] = {}
        self.reply_timeout = 60.0
        self.call_timeout = 90.0

    def set_options(self, connect_options: Mapping[str, Any]) -> None:
        """Take the session options (timeouts, message size, headers, token)."""
        self.connect_options = dict(connect_options)
        self.reply_timeout = float(connect_options["reply_timeout"])
        self.call_timeout = self.reply_timeout + float(connect_options["connect_timeout"]) + 30.0

    def start_more_servers(
        self, id: str | None, env_kwargs: Mapping[str, Any], encoding: str, per_server: int
    ) -> None:
        """Start the embedded servers of sub-envs ``per_server, 2 * per_server, ...``.

        Here they start one after the other; on a fleet (remote nodes) up to
        :data:`PARALLEL_FLEET_STARTS` at once. When one fails, those started are in
        :attr:`providers` (for the caller to stop) and its error is raised.
        """

        def start(first: int) -> tuple[int, str, ServerProvider]:
            extra = make_template(id, None, env_kwargs, encoding, self.server_fleet)
            extra_session, extra_provider = extra.detach()
            extra_session.close()  # the sessions are opened with the others below
            return first, extra.base_url, extra_provider

        firsts = range(per_server, self.num_envs, per_server)
        if self.server_fleet is None:
            outcomes: list[Any] = []
            for first in firsts:
                try:
                    outcomes.append(start(first))
                except BaseException as exc:
                    outcomes.append(exc)
                    break
        else:
            with concurrent.futures.ThreadPoolExecutor(
                min(len(firsts), PARALLEL_FLEET_STARTS), thread_name_prefix="openenv-gym-start"
            ) as pool:
                futures = [pool.submit(start, first) for first in firsts]
            outcomes = [f.exception() or f.result() for f in futures]
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                continue
            first, url, provider = outcome
            self.providers[url] = provider
            for i in range(first, min(first + per_server, self.num_envs)):
                self.urls[i] = url
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    def unix_sockets(self, url: str) -> list[str]:
        """The Unix sockets of a server this env started (empty for any other server)."""
        provider = self.providers.get(url)
        return list(getattr(provider, "unix_sockets", None) or [])

    def check_capacity(self, needed: Mapping[str, int], already: Mapping[str, int]) -> set[str]:
        """``GET /capacity`` of each URL; raise when a server reports too few free slots.

        ``already`` counts this env's sessions that are open there (and so not free).
        Returns the URLs that reported their capacity.
        """
        accepted: dict[str, int | None] = {}
        known: set[str] = set()
        short = False
        for url, count in needed.items():
            capacity = fetch_capacity(
                url,
                timeout=self.connect_options["connect_timeout"],
                token=self.connect_options.get("token"),
            )
            if capacity.free is not None:
                known.add(url)
                accepted[url] = capacity.free + already.get(url, 0)
                short = short or capacity.free < count - already.get(url, 0)
        if short:
            raise insufficient_capacity_error(
                requested=self.num_envs,
                needed=needed,
                accepted={url: accepted.get(url) for url in needed},
                known=known,
            )
        return known

    def open_sessions(
        self, indices: Sequence[int], *, check_capacity: bool, verify: Sequence[int] = ()
    ) -> None:
        """Open sessions for ``indices`` (at ``self.urls[i]``).

        Args:
            check_capacity: Ask ``GET /capacity`` first.
            verify: Indices whose session is already open and not yet known to be accepted
                (a server at capacity accepts the WebSocket, then refuses the session).
        """
        every = [*verify, *indices]
        if not every:
            return
        needed: dict[str, int] = {}
        for i in every:
            needed[self.urls[i]] = needed.get(self.urls[i], 0) + 1
        known: set[str] = set()
        if check_capacity:
            already: dict[str, int] = {}
            for i in verify:
                already[self.urls[i]] = already.get(self.urls[i], 0) + 1
            known = self.check_capacity(needed, already)
        opened = run_sync(
            self._open_all([self.urls[i] for i in indices], [self.sessions[i] for i in verify]),
            self.call_timeout,
        )
        refused: dict[str, int] = {}
        first_error: BaseException | None = None
        for i, outcome in zip(every, opened, strict=True):
            if isinstance(outcome, CapacityReachedError):
                refused[self.urls[i]] = refused.get(self.urls[i], 0) + 1
            elif isinstance(outcome, BaseException):
                first_error = first_error or outcome
        if refused or first_error is not None:
            run_sync(close_all([s for s in opened if isinstance(s, Session)]), self.call_timeout)
            if first_error is not None:
                raise first_error
            accepted: dict[str, int | None] = {
                url: count - refused.get(url, 0) for url, count in needed.items()
            }
            raise insufficient_capacity_error(
                requested=self.num_envs, needed=needed, accepted=accepted, known=known
            )
        for i, outcome in zip(every, opened, strict=True):
            assert isinstance(outcome, Session)  # every failure raised above
            if i < len(self.sessions):
                self.sessions[i] = outcome
            else:
                self.sessions.append(outcome)

    async def _open_all(
        self, urls: list[str], existing: list[Session]
    ) -> list[Session | BaseException]:
        """Open one session per URL; then a ``state`` round trip on them and on ``existing``
        shows which were refused (CAPACITY_REACHED). Outcomes: ``existing``, then new ones."""
        options = self.connect_options
        sockets = {url: self.unix_sockets(url) for url in set(urls)}
        new: list[Session | BaseException] = list(
            await asyncio.gather(
                *(
                    Session.open(
                        url,
                        connect_timeout=options["connect_timeout"],
                        reply_timeout=options["reply_timeout"],
                        max_message_size=options["max_message_size"],
                        headers=options["headers"],
                        token=options.get("token"),
                        encoding=self.encoding,
                        # Spread over the server's worker sockets, round-robin.
                        unix_path=sockets[url][k % len(sockets[url])] if sockets[url] else None,
                    )
                    for k, url in enumerate(urls)
                ),
                return_exceptions=True,
            )
        )
        outcomes: list[Session | BaseException] = [*existing, *new]
        opened = [(k, s) for k, s in enumerate(outcomes) if isinstance(s, Session)]
        replies = await exchange_many(
            [s for _, s in opened], [STATE_FRAME] * len(opened), self.reply_timeout
        )
        for (k, session), raw in zip(opened, replies, strict=True):
            if isinstance(raw, BaseException):
                outcomes[k] = raw
                continue
            try:
                parse_frame(raw, url=session.url)
            except CapacityReachedError as exc:
                await session.close()
                outcomes[k] = exc
            except (ServerReplyError, ProtocolError):
                pass  # the session is open; the env just does not serve ``state``
        return outcomes

    def reconnect(self, indices: list[int]) -> None:
        """Reopen the sessions of ``indices``, restarting an owned server that died."""
        for url in {self.urls[i] for i in indices}:
            provider = self.providers.get(url)
            if provider is None or is_healthy(url, timeout=2.0):
                continue
            provider.stop()
            try:
                new_url = provider.start().rstrip("/")
            except OpenEnvGymError as exc:
                i = next(j for j in indices if self.urls[j] == url)
                raise self.sub_env_error(i, exc, reconnect=True) from exc
            del self.providers[url]
            self.providers[new_url] = provider
            self.urls = [new_url if u == url else u for u in self.urls]
        try:
            self.open_sessions(indices, check_capacity=False)
        except (ServerConnectionError, CapacityReachedError, OpenEnvGymError) as exc:
            raise self.sub_env_error(indices[0], exc, reconnect=True) from exc

    def sub_env_error(self, index: int, cause: BaseException, *, reconnect: bool) -> SubEnvError:
        """The error for sub-env ``index`` whose session broke with ``cause``."""
        url = self.sessions[index].url if index < len(self.sessions) else self.urls[index]
        hint = (
            "reconnecting failed"
            if reconnect
            else "pass reconnect=True to reopen broken sessions and go on"
        )
        return SubEnvError(
            f"sub-env {index} of the vector env lost its session at {url}: {cause} ({hint})",
            index=index,
            url=url,
        )

    def close(self) -> None:
        """Close every session and stop the servers this fleet started."""
        try:
            run_sync(close_all(self.sessions), 30.0)
        finally:
            for provider in self.providers.values():
                provider.stop()


async def close_all(sessions: Sequence[Session]) -> None:
    await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)


def check_sessions_per_server(
    sessions_per_server: Any, urls: list[str] | None, num_envs: int
) -> int:
    """How many sessions go to each embedded server (``num_envs`` for one server)."""
    if sessions_per_server is None:
        return num_envs
    if urls is not None:
        raise VectorUsageError(
            "sessions_per_server starts embedded servers, but base_url names running ones; "
            "pass one or the other"
        )
    if isinstance(sessions_per_server, bool) or not isinstance(sessions_per_server, int):
        raise VectorUsageError(
            f"expected sessions_per_server to be a positive int, got {sessions_per_server!r}"
        )
    if sessions_per_server < 1:
        raise VectorUsageError(
            f"expected sessions_per_server to be a positive int, got {sessions_per_server}"
        )
    return min(sessions_per_server, num_envs)


def check_fleet(fleet: Any, urls: list[str] | None) -> FleetProvider | None:
    """The fleet that runs the embedded servers (``None``: child processes here)."""
    server_fleet = resolve_fleet(fleet)
    if server_fleet is not None and urls is not None:
        raise VectorUsageError(
            f"fleet={fleet!r} starts servers, but base_url names running ones; pass one or "
            "the other"
        )
    return server_fleet


def check_num_envs(num_envs: Any) -> int:
    if isinstance(num_envs, bool) or not isinstance(num_envs, int | np.integer) or num_envs < 1:
        raise VectorUsageError(f"expected num_envs to be a positive int, got {num_envs!r}")
    return int(num_envs)


def check_base_urls(base_url: str | Sequence[str] | None) -> list[str] | None:
    if base_url is None:
        return None
    if isinstance(base_url, str):
        return [base_url]
    urls = list(base_url)
    if not urls or not all(isinstance(u, str) for u in urls):
        raise VectorUsageError(
            f"expected base_url to be a URL or a non-empty list of URLs, got {base_url!r}"
        )
    return urls


def make_template(
    id: str | None,
    urls: list[str] | None,
    env_kwargs: Mapping[str, Any],
    encoding: str,
    server_fleet: FleetProvider | None = None,
) -> OpenEnvEnv:
    """The one env whose session, spaces and server the vector env takes over (its embedded
    server started on ``server_fleet``, or here when ``None``)."""
    kwargs = dict(env_kwargs)
    if id is None or id.rpartition(":")[2].startswith("openenv/"):
        kwargs["encoding"] = encoding
    if urls is not None:
        kwargs["base_url"] = urls[0]
    if id is None:
        return OpenEnvEnv(**kwargs)
    if urls is None and "workers" not in kwargs and accepts_parameter(id, "workers"):
        kwargs["workers"] = "auto"  # the embedded server: one process per core
    if urls is None and "unix_socket" not in kwargs and accepts_parameter(id, "unix_socket"):
        kwargs["unix_socket"] = True  # and Unix sockets: no TCP stack per message
    with using_fleet(server_fleet):
        env = gym.make(id, disable_env_checker=True, **kwargs)
    unwrapped = env.unwrapped
    if not isinstance(unwrapped, OpenEnvEnv):
        env.close()
        raise VectorUsageError(
            f"expected {id!r} to make an OpenEnvEnv (an openenv/... id), got "
            f"{type(unwrapped).__name__}; use gymnasium.make_vec for other envs"
        )
    # Wrappers of the single env do not apply: the vector env takes over the bare session.
    return unwrapped


def accepts_parameter(id: str, parameter: str) -> bool:
    """Whether the entry point of ``id`` takes ``parameter`` (e.g. ``workers``)."""
    try:
        entry_point = gym.spec(id).entry_point
        creator = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
        return creator is not None and parameter in inspect.signature(creator).parameters
    except (gym.error.Error, TypeError, ValueError, ImportError, AttributeError):
        return False
