"""The servers and connections behind a vector env: capacity checks, opening, round trips,
reconnecting, closing.

:class:`Connections` holds the connection (a :class:`~openenv_gym.vector.channels.Channel`)
each sub-env lives on, and the :class:`~openenv_gym.vector.servers.SubEnvServers` that say
which server it is on (and stop the servers the vector env started on close); it alone
changes them. Before opening sessions it checks that the servers can take them
(``GET /capacity``, or ``CAPACITY_REACHED`` while opening on official servers) and raises
:class:`~openenv_gym.errors.InsufficientCapacityError` otherwise. Connections are blocking
sockets (:mod:`openenv_gym.client.blocking`): a round trip sends one frame per connection,
then reads each reply, in the caller's thread, with no event loop. Opening the connections of
one server is :mod:`openenv_gym.vector.opening`'s; reopening broken ones (``reconnect=True``)
is :meth:`Connections.reopen`, retried as :mod:`openenv_gym.vector.reconnect` says with
:attr:`Connections.backoff`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openenv_gym.busy_poll import BusyPoller, usable_cores
from openenv_gym.client.blocking import BlockingConnection
from openenv_gym.client.capacity import fetch_capacity, insufficient_capacity_error
from openenv_gym.client.exchange import exchange_many, receive_each, send_many
from openenv_gym.client.options import ConnectOptions
from openenv_gym.env import OpenEnvEnv
from openenv_gym.errors import OpenEnvGymError, SubEnvError
from openenv_gym.providers.base import ServerProvider
from openenv_gym.providers.server_fleet import ServerFleet
from openenv_gym.vector.backoff import Backoff
from openenv_gym.vector.channels import BatchChannel, Channel, close_channels
from openenv_gym.vector.opening import (
    Opener,
    SessionsRefusedError,
    worker_connections,
)
from openenv_gym.vector.reconnect import keep_trying
from openenv_gym.vector.round_trip import Op
from openenv_gym.vector.servers import SubEnvServers
from openenv_gym.wire.batch import BatchResult
from openenv_gym.wire.encoding import EncodingChoice


@dataclass(frozen=True)
class Pending:
    """Frames of a round trip whose replies are not read yet.

    Attributes:
        channels: The connections that got a frame.
        frames: The frame of each.
        sent: What :func:`~openenv_gym.client.exchange.send_many` returned, or ``None``
            while the frames are not sent either (a ``step`` sends and reads in one go).
    """

    channels: list[Channel]
    frames: list[str | bytes]
    sent: list[OpenEnvGymError | None] | None


class Connections:
    """The connections of ``num_envs`` sub-envs and the servers they live on.

    Against our servers every connection carries several sessions (``openenv-gym.batch.v1``,
    one frame per connection per step); a server holds one connection per worker process
    (per Unix socket of an embedded server, or as many as ``GET /capacity`` names workers).
    Against servers that do not agree to it (official ``openenv`` servers), each sub-env has a
    connection of its own.

    Built in two steps: the constructor (enough for :meth:`check_capacity` on given URLs),
    then :meth:`adopt` with the env whose server and options the sub-envs share; then
    :meth:`start_more_servers` and :meth:`open`.

    Args:
        num_envs: The number of sub-envs.
        encoding: What the vector env's ``encoding=`` asks for
            (:func:`~openenv_gym.wire.encoding.resolve_encoding`): whether connections offer
            ``openenv-gym.batch.v1`` (not with ``"json"``), and what they require.
        connect_options: ``connect_timeout`` and ``token`` (enough for capacity checks);
            :meth:`adopt` takes the env's complete ones.
        server_fleet: Where the embedded servers run (``None``: child processes here).
        sessions_per_connection: At most this many sub-envs on one batch connection (a
            pool's ``batch_size``: its batches are then in flight at once, each on a
            connection of its own); ``None``: as many as the workers' share.
    """

    def __init__(
        self,
        num_envs: int,
        *,
        encoding: EncodingChoice,
        connect_options: ConnectOptions,
        server_fleet: ServerFleet | None = None,
        sessions_per_connection: int | None = None,
    ) -> None:
        self.num_envs = num_envs
        self._per_connection = sessions_per_connection
        self._servers = SubEnvServers(num_envs, encoding=encoding, server_fleet=server_fleet)
        self._encoding = encoding
        self._options = connect_options
        self._truncated_key: str | None = None
        self._borrow_arrays = False
        self._channels: list[Channel] = []
        self._workers: dict[str, int] = {}  # worker processes per URL (``GET /capacity``)
        self._step_seconds: dict[str, float] = {}  # seconds per env step (``GET /capacity``)
        self._reply_timeout = connect_options.reply_timeout
        self._poller: BusyPoller | None = None
        self._cores = usable_cores()
        #: How :meth:`reopen` spaces its attempts, and for how long it tries.
        self.backoff = Backoff()

    def adopt(
        self, template: OpenEnvEnv, urls: Sequence[str] | None, *, borrow_arrays: bool
    ) -> None:
        """Take over ``template``'s server (stopped on :meth:`close` if it started one) and
        connection options, and place the sub-envs: round-robin over ``urls``, else all on
        the template's server (:meth:`start_more_servers` moves some to servers of their own).

        Args:
            template: The env (made without a session) the vector env takes its spaces from.
            urls: The servers given to the vector env, or ``None`` (an embedded server).
            borrow_arrays: The vector env copies every observation row out before its next
                request, so a reply's arrays may be read-only views valid until then (a batch
                channel then reads its shared memory without a copy).
        """
        self._servers.adopt(template, urls)
        options = self._options = template.connect_options
        self._reply_timeout = options.reply_timeout
        # One busy-poller for every connection: the wait of a round trip is one spin.
        self._poller = BusyPoller(options.busy_poll, hybrid=True)
        self._truncated_key = template.observation_codec.truncated_key
        self._borrow_arrays = borrow_arrays

    # ------------------------------------------------------------------ what it holds

    @property
    def urls(self) -> list[str]:
        """The server URL of each sub-env (a copy)."""
        return self._servers.urls

    def url_of(self, index: int) -> str:
        """The server URL of sub-env ``index``."""
        return self._servers.url_of(index)

    @property
    def reply_timeout(self) -> float:
        """Seconds to wait for each reply (the env's ``reply_timeout``)."""
        return self._reply_timeout

    @property
    def channels(self) -> list[Channel]:
        """The open connections (a copy of the list)."""
        return list(self._channels)

    @property
    def providers(self) -> list[ServerProvider]:
        """The servers this fleet started (and stops on close)."""
        return self._servers.providers

    def start_more_servers(
        self, id: str | None, env_kwargs: Mapping[str, Any], per_server: int
    ) -> None:
        """Start the embedded servers of sub-envs ``per_server, 2 * per_server, ...``
        (:meth:`SubEnvServers.start_more <openenv_gym.vector.servers.SubEnvServers.start_more>`);
        those started are stopped by :meth:`close`, even when one fails. They require the
        first server's token (the user's, or the one made up for it), which every connection
        sends."""
        token = env_kwargs.get("token") or self._options.token
        self._servers.start_more(id, {**env_kwargs, "token": token}, per_server)

    @property
    def sessions(self) -> list[BlockingConnection]:
        """Every open connection."""
        return [channel.session for channel in self._channels]

    # ------------------------------------------------------------------ opening

    def check_capacity(self, needed: Mapping[str, int]) -> set[str]:
        """``GET /capacity`` of each URL; raise when a server reports too few free slots.

        Returns the URLs that reported their capacity (and records their worker count).

        Raises:
            InsufficientCapacityError: A server reports fewer free slots than ``needed``.
            ServerConnectionError: A server cannot be reached.
        """
        accepted: dict[str, int | None] = {}
        known: set[str] = set()
        short = False
        for url, count in needed.items():
            capacity = fetch_capacity(
                url, timeout=self._options.connect_timeout, token=self._options.token
            )
            if capacity.workers is not None:
                self._workers[url] = capacity.workers
            if capacity.step_seconds is not None:
                self._step_seconds[url] = capacity.step_seconds
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
        """Open connections for the sub-envs ``indices`` (at their :attr:`urls`).

        Raises:
            InsufficientCapacityError: A server refused sessions.
            ServerConnectionError: A server cannot be reached.
        """
        groups: dict[str, list[int]] = {}
        for i in indices:
            groups.setdefault(self._servers.url_of(i), []).append(i)
        if not groups:
            return
        needed = {url: len(group) for url, group in groups.items()}
        known = self.check_capacity(needed) if check_capacity else set()
        opener = Opener(
            self._options,
            self._encoding.name,
            self._encoding.batches,
            self._truncated_key,
            borrow_shared=self._borrow_arrays,
            poller=self._poller,
        )
        outcomes: list[list[Channel] | BaseException] = []
        for url, group in groups.items():
            try:
                workers = self._workers.get(url, 1)
                sockets = self._servers.unix_sockets(url)
                distinct = len(sockets) or workers
                count = worker_connections(len(group), distinct, self._step_seconds.get(url))
                if self._per_connection is not None:
                    count = max(count, math.ceil(len(group) / self._per_connection))
                outcomes.append(opener.open_group(url, group, sockets, count, distinct))
            except (OpenEnvGymError, SessionsRefusedError) as exc:
                outcomes.append(exc)
        opened = [c for outcome in outcomes if isinstance(outcome, list) for c in outcome]
        failures = [o for o in outcomes if isinstance(o, BaseException)]
        if failures:
            close_channels(opened)
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
        self._channels.extend(opened)

    def reopen(
        self, indices: Sequence[int], causes: Sequence[BaseException] | None = None
    ) -> list[int]:
        """Reopen the connections of ``indices``, restarting an owned server that died.

        Attempts are repeated with :attr:`backoff` (see :mod:`openenv_gym.vector.reconnect`)
        while the failure may pass; a refusal that will not pass (a wrong token, not an
        OpenEnv server) fails at once. Returns every sub-env whose session was reopened (all
        those sharing a connection with one of ``indices``).

        Raises:
            SubEnvError: Reconnecting failed; the message names why the session broke
                (``causes``), the attempts made and the last error (its ``__cause__``).
        """
        broken = [c for c in self._channels if any(i in c.indices for i in indices)]
        affected = sorted(i for c in broken for i in c.indices)
        self._channels = [c for c in self._channels if c not in broken]
        close_channels(broken)

        def attempt() -> None:
            self._servers.restart_dead(affected)
            self.open(affected, check_capacity=False)

        gave_up = keep_trying(attempt, self.backoff)
        if gave_up is None:
            return affected
        broke = f"{causes[0]}; " if causes else ""
        error = self.sub_env_error(
            affected[0],
            f"{broke}reconnecting failed after {gave_up.attempts} attempt(s) over "
            f"{gave_up.elapsed:.1f}s (budget {self.backoff.budget:g}s); last error: "
            f"{gave_up.last}",
            reconnect=True,
        )
        raise error from gave_up.last

    # ------------------------------------------------------------------ round trips

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

        One frame per connection that has an op (:meth:`Channel.frame
        <openenv_gym.vector.channels.Channel.frame>`): a ``batch_step`` on a batch
        connection, the plain ``step``/``reset`` message otherwise. ``same_step_reset`` asks
        batch connections to reset an episode that ends in the same round trip
        (``last[i]``: the step is the last one of sub-env ``i``'s episode by a client-side
        time limit).
        """
        channels: list[Channel] = []
        frames: list[str | bytes] = []
        for channel in self._channels:
            frame = channel.frame(ops, same_step_reset=same_step_reset, last=last)
            if frame is not None:
                channels.append(channel)
                frames.append(frame)
        if defer:
            return Pending(channels, frames, None)
        sent = send_many([c.session for c in channels], frames)
        return Pending(channels, frames, sent)

    def receive_at_once(self, pending: Pending) -> list[str | bytes | OpenEnvGymError] | None:
        """Every reply of :meth:`send`'s round trip (or what
        :func:`~openenv_gym.client.exchange.receive_each` gives in place of one), read before
        any is decoded when nothing is lost by it: one connection, or replies read together
        anyway (:meth:`workers_fill_cores`); else ``None``, nothing sent (for :meth:`collect`)."""
        together = len(pending.channels) > 1
        if together and not self.workers_fill_cores(pending.channels):
            return None
        return list(self._receive(pending, together=together))

    def _receive(
        self, pending: Pending, *, together: bool
    ) -> Iterator[str | bytes | OpenEnvGymError]:
        """Send what :meth:`send` deferred, then each reply as it is read."""
        sessions = [c.session for c in pending.channels]
        sent = pending.sent if pending.sent is not None else send_many(sessions, pending.frames)
        return receive_each(sessions, sent, self._reply_timeout, together=together)

    def collect(
        self,
        pending: Pending,
        take: Callable[[Channel, BatchResult], None] | None = None,
        raws: Sequence[str | bytes | OpenEnvGymError] | None = None,
    ) -> tuple[list[tuple[Channel, BatchResult]], list[tuple[Channel, OpenEnvGymError]]]:
        """The replies of :meth:`send`: ``(channel, result)`` pairs, and the
        ``(channel, error)`` pairs of broken connections (``raws``: the replies
        :meth:`receive_at_once` read already).

        ``take`` gets each result as soon as its reply is read and parsed, while the later
        servers may still be stepping. Whatever fails, every reply of the round trip is
        read before the failure propagates (a reply left unread would be paired with the
        next request).

        Raises:
            ServerReplyError: A server answered an op with an error (the message names the
                sub-env).
            ProtocolError: A reply is not a valid OpenEnv (or batch) message.
        """
        replies: Iterable[str | bytes | OpenEnvGymError] = (
            raws
            if raws is not None
            else self._receive(pending, together=self.workers_fill_cores(pending.channels))
        )
        results: list[tuple[Channel, BatchResult]] = []
        broken: list[tuple[Channel, OpenEnvGymError]] = []
        url_of = self._servers.url_of
        pairs = zip(pending.channels, replies, strict=True)
        try:
            for channel, raw in pairs:
                if isinstance(raw, OpenEnvGymError):
                    broken.append((channel, raw))
                    continue
                result = channel.parse(raw, url_of(channel.indices[0]))
                results.append((channel, result))
                if take is not None:
                    take(channel, result)
        except BaseException:
            for channel, raw in pairs:  # read what is left: the next request gets its own
                channel.skip(raw)
            raise
        return results, broken

    def workers_fill_cores(self, channels: Sequence[Channel]) -> bool:
        """Whether the server workers behind ``channels`` that surely run on this host
        (batch connections over a Unix socket or with shared memory) are at least as many
        as this process's cores. A round trip then reads its replies together, once the last
        is in (:func:`~openenv_gym.client.exchange.receive_each`): the client has no core
        of its own, and decoding one reply, or busy-polling, while another worker steps
        would take that worker's core (preprocessed Pong N=8 on 2 cores: 1-3% more
        steps/s). Connections over TCP (a container, a tunnel, another host) read each
        reply as it comes: their replies may be far apart, and each connection's compression
        policy measures its own round trips. A batch connection is one worker (those sharing
        a Unix socket share one)."""
        if len(channels) < 2:
            return False
        workers = {
            c.session.unix_path or id(c)
            for c in channels
            if isinstance(c, BatchChannel) and (c.session.unix_path or c.shared_memory)
        }
        return len(workers) >= self._cores

    def collect_or_reopen(
        self,
        pending: Pending,
        *,
        reconnect: bool,
        retry: Sequence[Op | None] | None = None,
        reset: Op | None = None,
        take: Callable[[Channel, BatchResult], None] | None = None,
        raws: Sequence[str | bytes | OpenEnvGymError] | None = None,
    ) -> tuple[list[tuple[Channel, BatchResult]], list[int]]:
        """:meth:`collect`, then, for broken connections, :meth:`reopen` (``reconnect``) or
        raise; returns the results and the sub-envs whose connection was reopened.

        With ``retry`` (resets), the reopened sub-envs get their op again (``reset`` when
        they had none) and their results are among those returned (none reopened then).
        ``raws``: the replies :meth:`receive_at_once` read already.

        Raises:
            SubEnvError: A connection broke (``reconnect`` off), reconnecting failed, or
                the retried ops broke again.
        """
        results, broken = self.collect(pending, take, raws)
        if not broken:
            return results, []
        if not reconnect:
            channel, cause = broken[0]
            raise self.sub_env_error(channel.indices[0], cause, reconnect=False) from cause
        reopened = self.reopen([c.indices[0] for c, _ in broken], [cause for _, cause in broken])
        if retry is None:
            return results, reopened
        again: list[Op | None] = [None] * self.num_envs
        for i in reopened:
            again[i] = retry[i] or reset
        more, still_broken = self.collect(self.send(again))
        if still_broken:
            channel, cause = still_broken[0]
            raise self.sub_env_error(channel.indices[0], cause, reconnect=True) from cause
        return results + more, []

    def states(self) -> list[dict[str, Any]]:
        """The server-side state of every sub-env (``state`` / ``batch_state``).

        Raises:
            SubEnvError: A connection broke.
        """
        channels = self._channels
        frames = [channel.state_frame() for channel in channels]
        raws = exchange_many([c.session for c in channels], frames, self._reply_timeout)
        states: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for channel, raw in zip(channels, raws, strict=True):
            if isinstance(raw, OpenEnvGymError):
                raise self.sub_env_error(channel.indices[0], raw, reconnect=False) from raw
            url = self._servers.url_of(channel.indices[0])
            for i, state in zip(channel.indices, channel.parse_states(raw, url), strict=True):
                states[i] = state
        return states

    # ------------------------------------------------------------------ faults, closing

    def sub_env_error(
        self, index: int, cause: BaseException | str, *, reconnect: bool
    ) -> SubEnvError:
        """The error for sub-env ``index`` whose session broke with ``cause``."""
        channel = next((c for c in self._channels if index in c.indices), None)
        url = channel.session.url if channel is not None else self._servers.url_of(index)
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
            close_channels(self._channels)
        finally:
            self._servers.stop()


__all__ = ["Connections", "Pending"]
