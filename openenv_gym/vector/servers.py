"""Where a vector env's sub-envs live: the server URL of each, and the servers it started.

:class:`SubEnvServers` places the sub-envs round-robin over the URLs given to the vector
env, or on the server of its template env and on more embedded servers
(``sessions_per_server``, started here or on a fleet of remote nodes). It stops the servers
it started on :meth:`~SubEnvServers.stop`, and restarts one that died when its sessions are
reopened (``reconnect=True``). It belongs to
:class:`~openenv_gym.vector.connections.Connections`, which alone calls it.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Mapping, Sequence
from typing import Any, Final

from openenv_gym.client.http import is_healthy
from openenv_gym.client.local_sockets import reachable_unix_sockets
from openenv_gym.env import OpenEnvEnv
from openenv_gym.providers.base import ServerProvider
from openenv_gym.providers.server_fleet import ServerFleet
from openenv_gym.vector.options import make_template
from openenv_gym.wire.encoding import EncodingChoice

#: How many servers a vector env starts at once on a fleet (their nodes do the work).
PARALLEL_FLEET_STARTS: Final = 16


class SubEnvServers:
    """The server URL of each of ``num_envs`` sub-envs, and the servers started for them.

    Args:
        num_envs: The number of sub-envs.
        encoding: What the vector env's ``encoding=`` asks for (the servers it starts are
            made with the same).
        server_fleet: Where the embedded servers run (``None``: child processes here).
    """

    def __init__(
        self, num_envs: int, *, encoding: EncodingChoice, server_fleet: ServerFleet | None = None
    ) -> None:
        self.num_envs = num_envs
        self._encoding = encoding
        self._server_fleet = server_fleet
        self._urls: list[str] = []
        self._providers: dict[str, ServerProvider] = {}

    def adopt(self, template: OpenEnvEnv, urls: Sequence[str] | None) -> None:
        """Take over ``template``'s server (if it started one) and place the sub-envs:
        round-robin over ``urls``, else all on the template's server."""
        provider = template.detach()
        first_url = template.base_url.rstrip("/")
        if provider.owns_server:
            self._providers[first_url] = provider
        self._urls = [
            (urls[i % len(urls)] if urls else first_url).rstrip("/") for i in range(self.num_envs)
        ]
        self._urls[0] = first_url

    @property
    def urls(self) -> list[str]:
        """The server URL of each sub-env (a copy)."""
        return list(self._urls)

    def url_of(self, index: int) -> str:
        """The server URL of sub-env ``index``."""
        return self._urls[index]

    @property
    def providers(self) -> list[ServerProvider]:
        """The servers started for the sub-envs (stopped by :meth:`stop`)."""
        return list(self._providers.values())

    def unix_sockets(self, url: str) -> list[str]:
        """The Unix sockets of ``url``'s server that exist here, one per worker: a server's
        started here, or those a same-host server lists (empty for any other server; see
        :mod:`openenv_gym.client.local_sockets`)."""
        provider = self._providers.get(url)
        return reachable_unix_sockets(url, provider.unix_sockets if provider is not None else ())

    def start_more(self, id: str | None, env_kwargs: Mapping[str, Any], per_server: int) -> None:
        """Start the embedded servers of sub-envs ``per_server, 2 * per_server, ...``.

        Here they start one after the other; on a fleet (remote nodes) up to
        :data:`PARALLEL_FLEET_STARTS` at once. When one fails, those started are kept (and
        stopped by :meth:`stop`) and its error is raised.
        """
        encoding, server_fleet = self._encoding.name, self._server_fleet

        def start(first: int) -> tuple[int, str, ServerProvider]:
            extra = make_template(id, None, env_kwargs, encoding, server_fleet)
            return first, extra.base_url, extra.detach()

        firsts = range(per_server, self.num_envs, per_server)
        outcomes: list[tuple[int, str, ServerProvider] | BaseException] = []
        if server_fleet is None:
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
            if not isinstance(outcome, BaseException):
                first, url, provider = outcome
                self._providers[url] = provider
                for i in range(first, min(first + per_server, self.num_envs)):
                    self._urls[i] = url
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    def restart_dead(self, indices: Sequence[int]) -> None:
        """Restart the servers started here, for ``indices``, that do not answer (their
        sub-envs move to the new URL)."""
        for url in {self._urls[i] for i in indices}:
            provider = self._providers.get(url)
            if provider is None or is_healthy(url, timeout=2.0):
                continue
            provider.stop()
            new_url = provider.start().rstrip("/")
            del self._providers[url]
            self._providers[new_url] = provider
            self._urls = [new_url if u == url else u for u in self._urls]

    def stop(self) -> None:
        """Stop every server started here."""
        for provider in self._providers.values():
            provider.stop()


__all__ = ["PARALLEL_FLEET_STARTS", "SubEnvServers"]
