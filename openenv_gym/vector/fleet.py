"""The servers and connections behind a vector env: capacity checks, opening, round trips,
closing.

A :class:`Fleet` holds the URL and the connection (:class:`~openenv_gym.vector.opening.Channel`)
of each sub-env, and the servers the vector env started (and stops on close). Before opening
sessions it checks that the servers can take them (``GET /capacity``, or
``CAPACITY_REACHED`` while opening on official servers) and raises
:class:`~openenv_gym.errors.InsufficientCapacityError` otherwise. Connections are blocking
sockets (:mod:`openenv_gym.client.blocking`): a round trip sends one frame per connection,
then reads each reply, in the caller's thread, with no event loop. Opening the connections
of one server is :mod:`openenv_gym.vector.opening`'s; reopening broken ones
(``reconnect=True``) :mod:`openenv_gym.vector.reconnect`'s, with :attr:`Fleet.backoff`.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from openenv_gym.busy_poll import BusyPoller
from openenv_gym.client.blocking import BlockingConnection
from openenv_gym.client.capacity import fetch_capacity, insufficient_capacity_error
from openenv_gym.client.exchange import exchange_many, receive_each, send_many
from openenv_gym.client.options import ConnectOptions
from openenv_gym.errors import (
    OpenEnvGymError,
    SubEnvError,
)
from openenv_gym.providers.base import ServerProvider
from openenv_gym.providers.server_fleet import ServerFleet
from openenv_gym.vector.backoff import Backoff
from openenv_gym.vector.opening import (
    Channel,
    Opener,
    SessionsRefusedError,
    close_all,
    worker_connections,
)
from openenv_gym.vector.options import make_template
from openenv_gym.vector.round_trip import Op, Pending, build_frames, parse_reply
from openenv_gym.wire.batch import BatchResult, batch_state_message, parse_batch_states
from openenv_gym.wire.binary import parse_frame
from openenv_gym.wire.encoding import resolve_encoding
from openenv_gym.wire.messages import StateReply, encode_message, state_message

#: How many servers a vector env starts at once on a fleet (their nodes do the work).
PARALLEL_FLEET_STARTS: Final = 16


class Fleet:
    """The connections of ``num_envs`` sub-envs and the servers they live on.

    Against our servers every connection carries several sessions (``openenv-gym.batch.v1``,
    one frame per connection per step); a server holds one connection per worker process
    (per Unix socket of an embedded server, or as many as ``GET /capacity`` names workers).
    Against servers that do not agree to it (official ``openenv`` servers), each sub-env has a
    connection of its own.

    Args:
        num_envs: The number of sub-envs.
        encoding: The ``encoding=`` every connection is opened with (batching needs the
            binary frames: it is off with ``"json"``).
        connect_options: ``connect_timeout`` and ``token`` (enough for capacity checks);
            :meth:`set_options` completes them.
        batch: Offer ``openenv-gym.batch.v1``.
        server_fleet: Where the embedded servers run (``None``: child processes here).
    """

    def __init__(
        self,
        num_envs: int,
        *,
        encoding: str,
        connect_options: ConnectOptions,
        batch: bool = True,
        server_fleet: ServerFleet | None = None,
    ) -> None:
        self.num_envs = num_envs
        self.server_fleet = server_fleet
        self.encoding = encoding
        self.connect_options = connect_options
        self.batch = batch and resolve_encoding(encoding).batches
        #: The ``x-truncated-key`` observation field (SAME_STEP autoreset on the server).
        self.truncated_key: str | None = None
        #: Shared-memory arrays are read as views (the vector env copies every row into its
        #: batch buffer before the next request).
        self.borrow_shared = False
        #: The server URL of each sub-env.
        self.urls: list[str] = []
        #: The open connections.
        self.channels: list[Channel] = []
        #: The servers this fleet started (and stops on close), by URL.
        self.providers: dict[str, ServerProvider] = {}
        #: Worker processes per URL, as ``GET /capacity`` said.
        self.workers: dict[str, int] = {}
        #: Seconds per environment step each server reported (``GET /capacity``).
        self.step_seconds: dict[str, float] = {}
        self.reply_timeout = 60.0
        self.poller: BusyPoller | None = None
        #: How reconnect() spaces its attempts, and for how long it tries.
        self.backoff = Backoff()

    def set_options(self, connect_options: ConnectOptions) -> None:
        """Take the session options (timeouts, message size, headers, token)."""
        self.connect_options = connect_options
        self.reply_timeout = connect_options.reply_timeout
        #: One busy-poller for every connection: the wait of a round trip is one spin.
        self.poller = BusyPoller(connect_options.busy_poll, hybrid=True)

    @property
    def sessions(self) -> list[BlockingConnection]:
        """Every open connection."""
        return [channel.session for channel in self.channels]

    def channel_of(self, index: int) -> Channel:
        """The connection sub-env ``index`` lives on."""
        for channel in self.channels:
            if index in channel.indices:
                return channel
        raise KeyError(index)

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
            return first, extra.base_url, extra.detach()

        firsts = range(per_server, self.num_envs, per_server)
        outcomes: list[tuple[int, str, ServerProvider] | BaseException] = []
        if self.server_fleet is None:
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

    def check_capacity(self, needed: Mapping[str, int]) -> set[str]:
        """``GET /capacity`` of each URL; raise when a server reports too few free slots.

        Returns the URLs that reported their capacity (and records their worker count).
        """
        accepted: dict[str, int | None] = {}
        known: set[str] = set()
        short = False
        for url, count in needed.items():
            capacity = fetch_capacity(
                url,
                timeout=self.connect_options.connect_timeout,
                token=self.connect_options.token,
            )
            if capacity.workers is not None:
                self.workers[url] = capacity.workers
            if capacity.step_seconds is not None:
                self.step_seconds[url] = capacity.step_seconds
            if capacity.free is not None:
                known.add(url)
                accepted[url] = capacity.free
                short = short or capacity.free < count
        if short:
            raise insufficient_capacity_error(
                requested=self.num_envs,
                needed=needed,
                accepted={url: accepted.get(url) for url in needed},
                known=known,
            )
        return known

    def open(self, indices: Sequence[int], *, check_capacity: bool) -> None:
        """Open connections for the sub-envs ``indices`` (at ``self.urls[i]``).

        Raises:
            InsufficientCapacityError: A server refused sessions.
            ServerConnectionError: A server cannot be reached.
        """
        groups: dict[str, list[int]] = {}
        for i in indices:
            groups.setdefault(self.urls[i], []).append(i)
        if not groups:
            return
        needed = {url: len(group) for url, group in groups.items()}
        known = self.check_capacity(needed) if check_capacity else set()
        opener = Opener(
            self.connect_options,
            self.encoding,
            self.batch,
            self.truncated_key,
            borrow_shared=self.borrow_shared,
            poller=self.poller,
        )
        outcomes: list[list[Channel] | BaseException] = []
        for url, group in groups.items():
            try:
                workers = self.workers.get(url, 1)
                sockets = self.unix_sockets(url)
                count = worker_connections(
                    len(group), len(sockets) or workers, self.step_seconds.get(url)
                )
                outcomes.append(opener.open_group(url, group, sockets, count))
            except (OpenEnvGymError, SessionsRefusedError) as exc:
                outcomes.append(exc)
        opened = [c for outcome in outcomes if isinstance(outcome, list) for c in outcome]
        failures = [o for o in outcomes if isinstance(o, BaseException)]
        if failures:
            close_all([c.session for c in opened])
            refused = {
                url: outcome.refused
                for url, outcome in zip(groups, outcomes, strict=True)
                if isinstance(outcome, SessionsRefusedError)
            }
            if len(refused) < len(failures):
                raise next(f for f in failures if not isinstance(f, SessionsRefusedError))
            raise insufficient_capacity_error(
                requested=self.num_envs,
                needed=needed,
                accepted={url: count - refused.get(url, 0) for url, count in needed.items()},
                known=known,
            )
        self.channels.extend(opened)

    def exchange(self, channels: Sequence[Channel], frames: Sequence[str]) -> list[Any]:
        """One round trip on each of ``channels`` (:func:`~openenv_gym.client.exchange_many`)."""
        return exchange_many([c.session for c in channels], frames, self.reply_timeout)

    def send(
        self,
        ops: Sequence[Op | None],
        *,
        same_step_reset: Mapping[str, Any] | None = None,
        last: Sequence[bool] | None = None,
        defer: bool = False,
    ) -> Pending:
        """Send the op of every sub-env (``None``: leave it alone) and return at once
        (``defer``: only build the frames; :meth:`collect` sends and receives in one go).

        One frame per connection that has an op: a ``batch_step`` on a batch connection,
        the plain ``step``/``reset`` message otherwise. ``same_step_reset`` asks batch
        connections to reset an episode that ends in the same round trip (``last[i]``: the
        step is the last one of sub-env ``i``'s episode by a client-side time limit).
        """
        channels, frames = build_frames(
            self.channels, ops, same_step_reset=same_step_reset, last=last
        )
        if defer:
            return Pending(channels, frames, None)
        sent = send_many([c.session for c in channels], frames)
        return Pending(channels, frames, sent)

    def collect(
        self, pending: Pending, take: Callable[[Channel, BatchResult], None] | None = None
    ) -> tuple[list[tuple[Channel, BatchResult]], list[Any]]:
        """The replies of :meth:`send`: ``(channel, result)`` pairs, and the
        ``(channel, error)`` pairs of broken connections.

        ``take`` gets each result as soon as its reply is read and parsed, while the later
        servers may still be stepping. Whatever fails, every reply of the round trip is
        read before the failure propagates (a reply left unread would be paired with the
        next request).

        Raises:
            ServerReplyError: A server answered an op with an error (the message names the
                sub-env).
            ProtocolError: A reply is not a valid OpenEnv (or batch) message.
        """
        sessions = [c.session for c in pending.channels]
        sent = pending.sent
        if sent is None:
            sent = send_many(sessions, pending.frames)
        raws = receive_each(sessions, sent, self.reply_timeout)
        results: list[tuple[Channel, BatchResult]] = []
        broken: list[tuple[Channel, OpenEnvGymError]] = []
        try:
            for channel, raw in zip(pending.channels, raws, strict=True):
                if isinstance(raw, OpenEnvGymError):
                    broken.append((channel, raw))
                    continue
                result = self._parse(channel, raw)
                results.append((channel, result))
                if take is not None:
                    take(channel, result)
        except BaseException:
            for _ in raws:  # read what is left, so the next request gets its own replies
                pass
            raise
        return results, broken

    def _parse(self, channel: Channel, raw: str | bytes) -> BatchResult:
        return parse_reply(channel, raw, self.urls[channel.indices[0]])

    def states(self) -> list[dict[str, Any]]:
        """The server-side state of every sub-env (``state`` / ``batch_state``).

        Raises:
            SubEnvError: A connection broke.
        """
        frames = [
            encode_message(batch_state_message() if c.batch else state_message())
            for c in self.channels
        ]
        raws = self.exchange(self.channels, frames)
        states: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for channel, raw in zip(self.channels, raws, strict=True):
            url = self.urls[channel.indices[0]]
            if isinstance(raw, OpenEnvGymError):
                raise self.sub_env_error(channel.indices[0], raw, reconnect=False) from raw
            if channel.batch:
                for i, state in zip(channel.indices, parse_batch_states(raw, url=url), strict=True):
                    states[i] = state
                continue
            reply = parse_frame(raw, url=url)
            state = reply.state if isinstance(reply, StateReply) else dict(reply.observation)
            states[channel.indices[0]] = state
        return states

    def sub_env_error(
        self, index: int, cause: BaseException | str, *, reconnect: bool
    ) -> SubEnvError:
        """The error for sub-env ``index`` whose session broke with ``cause``."""
        channel = next((c for c in self.channels if index in c.indices), None)
        url = channel.session.url if channel is not None else self.urls[index]
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
        """Close every connection and stop the servers this fleet started."""
        try:
            close_all(self.sessions)
        finally:
            for channel in self.channels:
                if channel.shared is not None:
                    channel.shared.close()
            for provider in self.providers.values():
                provider.stop()
