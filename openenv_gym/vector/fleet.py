"""The servers and sessions behind a vector env: capacity checks, opening, reconnecting.

A :class:`Fleet` holds the URL and the open :class:`~openenv_gym.client.Session` of each
sub-env, and the servers the vector env started (and stops on close). Before opening
sessions it checks that the servers can take them (``GET /capacity``, or
``CAPACITY_REACHED`` while opening on official servers) and raises
:class:`~openenv_gym.errors.InsufficientCapacityError` otherwise. With ``reconnect=True`` a
broken session is reopened (an embedded server that died is restarted first), retrying with
backoff for up to :data:`~openenv_gym.vector.backoff.RECONNECT_BUDGET` seconds.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from openenv_gym.client import Session, exchange_many, is_healthy
from openenv_gym.client.capacity import fetch_capacity, insufficient_capacity_error
from openenv_gym.client.loop import CallerLoop
from openenv_gym.client.session import receive_many, send_many
from openenv_gym.errors import (
    AuthenticationError,
    CapacityReachedError,
    NotAnOpenEnvServerError,
    OpenEnvGymError,
    ProtocolError,
    ServerReplyError,
    SubEnvError,
)
from openenv_gym.providers.base import ServerProvider
from openenv_gym.providers.fleet import FleetProvider
from openenv_gym.vector.backoff import Backoff
from openenv_gym.vector.options import make_template
from openenv_gym.wire.batch import (
    BatchResult,
    batch_open_message,
    batch_state_message,
    batch_step_message,
    check_batch_opened,
    parse_batch_result,
    parse_batch_states,
)
from openenv_gym.wire.binary import parse_frame
from openenv_gym.wire.messages import ObservationReply, StateReply, encode_message, state_message
from openenv_gym.wire.shared_memory import ProbeFile, SharedArrayReader

#: The ``state`` request (a session accepted by a server answers it; a refused one gets
#: ``CAPACITY_REACHED``).
STATE_FRAME: Final = encode_message(state_message())
#: How many servers a vector env starts at once on a fleet (their nodes do the work).
PARALLEL_FLEET_STARTS: Final = 16


@dataclass(eq=False)
class Channel:
    """One connection and the sub-envs on it: K on a batch connection, else one.

    Attributes:
        session: The connection.
        indices: The sub-envs it carries, in the order of the server's sessions.
        shared: Reads the arrays the server puts in shared memory (a batch connection
            that agreed to it, see :mod:`openenv_gym.wire.shared_memory`).
    """

    session: Session
    indices: list[int]
    shared: SharedArrayReader | None = None

    @property
    def batch(self) -> bool:
        """Whether this is an ``openenv-gym.batch.v1`` connection (K sessions)."""
        return self.session.batch


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
        connect_options: dict[str, Any],
        batch: bool = True,
        server_fleet: FleetProvider | None = None,
    ) -> None:
        self.num_envs = num_envs
        self.server_fleet = server_fleet
        self.encoding = encoding
        self.connect_options = dict(connect_options)
        self.batch = batch and encoding != "json"
        #: The ``x-truncated-key`` observation field (SAME_STEP autoreset on the server).
        self.truncated_key: str | None = None
        #: The server URL of each sub-env.
        self.urls: list[str] = []
        #: The open connections.
        self.channels: list[Channel] = []
        #: The servers this fleet started (and stops on close), by URL.
        self.providers: dict[str, ServerProvider] = {}
        #: Worker processes per URL, as ``GET /capacity`` said.
        self.workers: dict[str, int] = {}
        self.reply_timeout = 60.0
        #: Every connection lives on this loop, run in the caller's thread.
        self.loop = CallerLoop()
        #: How reconnect() spaces its attempts, and for how long it tries.
        self.backoff = Backoff()

    def set_options(self, connect_options: Mapping[str, Any]) -> None:
        """Take the session options (timeouts, message size, headers, token)."""
        self.connect_options = dict(connect_options)
        self.reply_timeout = float(connect_options["reply_timeout"])

    @property
    def sessions(self) -> list[Session]:
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
                timeout=self.connect_options["connect_timeout"],
                token=self.connect_options.get("token"),
            )
            if capacity.workers is not None:
                self.workers[url] = capacity.workers
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
        outcomes = self.loop.run(self._open_groups(groups))
        opened = [c for outcome in outcomes if isinstance(outcome, list) for c in outcome]
        failures = [o for o in outcomes if isinstance(o, BaseException)]
        if failures:
            self.loop.run(close_all([c.session for c in opened]))
            refused = {
                url: outcome.refused
                for url, outcome in zip(groups, outcomes, strict=True)
                if isinstance(outcome, _SessionsRefusedError)
            }
            if len(refused) < len(failures):
                raise next(f for f in failures if not isinstance(f, _SessionsRefusedError))
            raise insufficient_capacity_error(
                requested=self.num_envs,
                needed=needed,
                accepted={url: count - refused.get(url, 0) for url, count in needed.items()},
                known=known,
            )
        self.channels.extend(opened)

    async def _open_groups(
        self, groups: Mapping[str, list[int]]
    ) -> list[list[Channel] | BaseException]:
        return list(
            await asyncio.gather(
                *(self._open_group(url, group) for url, group in groups.items()),
                return_exceptions=True,
            )
        )

    async def _open_group(self, url: str, indices: list[int]) -> list[Channel]:
        """Connections for the sub-envs ``indices`` of one server."""
        sockets = self.unix_sockets(url)
        plain: list[Session] = []
        if self.batch:
            count = min(len(indices), len(sockets) or self.workers.get(url, 1))
            first = await self._connect(url, sockets, range(count), batch=True)
            if all(session.batch for session in first):
                if not sockets and count > 1:
                    first = await self._spread_over_workers(url, first)
                return await self._open_batches(first, indices)
            plain = first  # an official server: one session per connection
        try:
            rest = await self._connect(url, sockets, range(len(plain), len(indices)), batch=False)
        except BaseException:
            await close_all(plain)
            raise
        sessions = [*plain, *rest]
        replies = await exchange_many(sessions, [STATE_FRAME] * len(sessions), self.reply_timeout)
        refused = 0
        failure: BaseException | None = None
        for session, raw in zip(sessions, replies, strict=True):
            if isinstance(raw, BaseException):
                failure = failure or raw
                continue
            try:
                parse_frame(raw, url=session.url)
            except CapacityReachedError:
                refused += 1
            except (ServerReplyError, ProtocolError):
                pass  # the session is open; the env just does not serve ``state``
        if refused or failure is not None:
            await close_all(sessions)
            raise failure if failure is not None else _SessionsRefusedError(refused)
        return [Channel(session, [i]) for session, i in zip(sessions, indices, strict=True)]

    async def _connect(
        self, url: str, sockets: list[str], slots: range, *, batch: bool
    ) -> list[Session]:
        """Open one connection per slot (spread over the server's Unix sockets)."""
        options = self.connect_options
        outcomes = await asyncio.gather(
            *(
                Session.open(
                    url,
                    connect_timeout=options["connect_timeout"],
                    reply_timeout=options["reply_timeout"],
                    max_message_size=options["max_message_size"],
                    headers=options["headers"],
                    token=options.get("token"),
                    encoding=self.encoding,
                    unix_path=sockets[k % len(sockets)] if sockets else None,
                    batch=batch,
                )
                for k in slots
            ),
            return_exceptions=True,
        )
        sessions = [s for s in outcomes if isinstance(s, Session)]
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                await close_all(sessions)
                raise outcome
        return sessions

    async def _spread_over_workers(self, url: str, connections: list[Session]) -> list[Session]:
        """Connections on distinct worker processes, as many as ``connections``.

        The kernel hands connections to a multi-worker server's processes by a hash, so two
        may land on one process while another idles; replace such duplicates (a few tries).
        """
        kept: dict[str | None, Session] = {}
        spare: list[Session] = []
        for session in connections:
            if session.worker in kept:
                spare.append(session)
            else:
                kept[session.worker] = session
        tries = 4 * len(connections)
        while spare and tries > 0 and None not in kept:
            tries -= 1
            (candidate,) = await self._connect(url, [], range(1), batch=True)
            if candidate.worker in kept or not candidate.batch:
                await candidate.close()
                continue
            kept[candidate.worker] = candidate
            await spare.pop().close()
        return [*kept.values(), *spare]

    async def _open_batches(self, connections: list[Session], indices: list[int]) -> list[Channel]:
        """Open ``len(indices)`` sessions spread evenly over the batch ``connections``."""
        share, extra = divmod(len(indices), len(connections))
        chunks: list[list[int]] = []
        start = 0
        for k in range(len(connections)):
            size = share + (1 if k < extra else 0)
            chunks.append(indices[start : start + size])
            start += size
        probe = ProbeFile.create()  # shared memory, if the server shares our /dev/shm
        offer = probe.offer() if probe is not None else None
        frames = [
            encode_message(batch_open_message(len(chunk), self.truncated_key, offer))
            for chunk in chunks
        ]
        try:
            replies = await exchange_many(connections, frames, self.reply_timeout)
        finally:
            if probe is not None:
                probe.close()
        refused = 0
        failure: BaseException | None = None
        shared: list[bool] = []
        for chunk, raw in zip(chunks, replies, strict=True):
            if isinstance(raw, BaseException):
                failure = failure or raw
                continue
            try:
                shared.append(check_batch_opened(raw, len(chunk)))
            except CapacityReachedError:
                refused += len(chunk)
            except OpenEnvGymError as exc:
                failure = failure or exc
        if refused or failure is not None:
            await close_all(connections)
            raise failure if failure is not None else _SessionsRefusedError(refused)
        return [
            Channel(c, chunk, SharedArrayReader() if agreed else None)
            for c, chunk, agreed in zip(connections, chunks, shared, strict=True)
        ]

    def reconnect(
        self, indices: Sequence[int], causes: Sequence[BaseException] | None = None
    ) -> list[int]:
        """Reopen the connections of ``indices``, restarting an owned server that died.

        Attempts are repeated with :attr:`backoff` (see :mod:`openenv_gym.vector.backoff`)
        while the failure may pass (nothing listens yet, the connection dropped, the server's
        slots are not free yet); a refusal that will not pass (a wrong token, not an OpenEnv
        server) fails at once. Returns every sub-env whose session was reopened (all those
        sharing a connection with one of ``indices``).

        Raises:
            SubEnvError: Reconnecting failed; the message names why the session broke
                (``causes``), the attempts made and the last error (its ``__cause__``).
        """
        broken = [c for c in self.channels if any(i in c.indices for i in indices)]
        affected = sorted(i for c in broken for i in c.indices)
        self.channels = [c for c in self.channels if c not in broken]
        self.loop.run(close_all([c.session for c in broken]))
        for channel in broken:
            if channel.shared is not None:
                channel.shared.close()
        first_cause = causes[0] if causes else None
        started = time.monotonic()
        attempts = 0
        delays = self.backoff.delays(start=started)
        while True:
            attempts += 1
            try:
                self._restart_dead_servers(affected)
                self.open(affected, check_capacity=False)
                return affected
            except OpenEnvGymError as exc:
                last: OpenEnvGymError = exc
            if isinstance(last, AuthenticationError | NotAnOpenEnvServerError):
                break
            delay = next(delays, None)
            if delay is None:
                break
            time.sleep(delay)
        elapsed = time.monotonic() - started
        broke = f"{first_cause}; " if first_cause is not None else ""
        error = self.sub_env_error(
            affected[0],
            f"{broke}reconnecting failed after {attempts} attempt(s) over {elapsed:.1f}s "
            f"(budget {self.backoff.budget:g}s); last error: {last}",
            reconnect=True,
        )
        raise error from last

    def _restart_dead_servers(self, indices: Sequence[int]) -> None:
        """Restart the servers this fleet started, for ``indices``, that do not answer."""
        for url in {self.urls[i] for i in indices}:
            provider = self.providers.get(url)
            if provider is None or is_healthy(url, timeout=2.0):
                continue
            provider.stop()
            new_url = provider.start().rstrip("/")
            del self.providers[url]
            self.providers[new_url] = provider
            self.urls = [new_url if u == url else u for u in self.urls]

    def exchange(self, channels: Sequence[Channel], frames: Sequence[str]) -> list[Any]:
        """One round trip on each of ``channels`` (:func:`~openenv_gym.client.exchange_many`)."""
        return self.loop.run(
            exchange_many([c.session for c in channels], frames, self.reply_timeout)
        )

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
        channels: list[Channel] = []
        frames: list[str] = []
        for channel in self.channels:
            if channel.batch:
                entries: list[dict[str, Any] | None] = []
                for i in channel.indices:
                    op = ops[i]
                    if op is None:
                        entries.append(None)
                        continue
                    entry: dict[str, Any] = {op[0]: op[1]}
                    if last is not None and last[i] and op[0] == "step":
                        entry["last"] = True
                    entries.append(entry)
                if any(e is not None for e in entries):
                    channels.append(channel)
                    frames.append(encode_message(batch_step_message(entries, same_step_reset)))
                continue
            op = ops[channel.indices[0]]
            if op is not None:
                channels.append(channel)
                frames.append(encode_message({"type": op[0], "data": op[1]}))
        if defer:
            return Pending(channels, frames, None)
        sent = self.loop.run(send_many([c.session for c in channels], frames))
        return Pending(channels, frames, sent)

    def collect(self, pending: Pending) -> tuple[list[tuple[Channel, BatchResult]], list[Any]]:
        """The replies of :meth:`send`: ``(channel, result)`` pairs, and the
        ``(channel, error)`` pairs of broken connections.

        Raises:
            ServerReplyError: A server answered an op with an error (the message names the
                sub-env).
            ProtocolError: A reply is not a valid OpenEnv (or batch) message.
        """
        sessions = [c.session for c in pending.channels]
        if pending.sent is None:
            raws = self.loop.run(exchange_many(sessions, pending.frames, self.reply_timeout))
        else:
            raws = self.loop.run(receive_many(sessions, pending.sent, self.reply_timeout))
        results: list[tuple[Channel, BatchResult]] = []
        broken: list[tuple[Channel, OpenEnvGymError]] = []
        for channel, raw in zip(pending.channels, raws, strict=True):
            if isinstance(raw, OpenEnvGymError):
                broken.append((channel, raw))
            else:
                results.append((channel, self._parse(channel, raw)))
        return results, broken

    def _parse(self, channel: Channel, raw: str | bytes) -> BatchResult:
        url = self.urls[channel.indices[0]]
        try:
            if channel.batch:
                return parse_batch_result(raw, url=url, shared=channel.shared)
            reply = parse_frame(raw, url=url)
        except ServerReplyError as exc:
            position = exc.data.get("index", 0) if isinstance(exc.data, dict) else 0
            index = channel.indices[position] if position in range(len(channel.indices)) else 0
            exc.add_note(f"(from sub-env {index} of the vector env, at {url})")
            raise
        except ProtocolError as exc:
            exc.add_note(f"(from sub-envs {channel.indices} of the vector env, at {url})")
            raise
        if not isinstance(reply, ObservationReply):
            raise ProtocolError(
                f"expected an 'observation' reply from sub-env {channel.indices[0]} at {url}, "
                "got a 'state' reply",
                received=reply,
            )
        return BatchResult.of_reply(reply)

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
            if not self.loop.closed:
                self.loop.run(close_all(self.sessions))
        finally:
            for channel in self.channels:
                if channel.shared is not None:
                    channel.shared.close()
            self.loop.close()
            for provider in self.providers.values():
                provider.stop()


#: What a sub-env does in a round trip: ``("step", action fields)`` or ``("reset", keys)``.
Op = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Pending:
    """Frames of :meth:`Fleet.send` whose replies are not collected yet (``sent`` is
    ``None`` while they are not sent either)."""

    channels: list[Channel]
    frames: list[str]
    sent: list[OpenEnvGymError | None] | None


class _SessionsRefusedError(Exception):
    """Sessions a server refused with ``CAPACITY_REACHED`` while opening (internal)."""

    def __init__(self, refused: int) -> None:
        super().__init__(f"{refused} sessions refused")
        self.refused = refused


async def close_all(sessions: Sequence[Session]) -> None:
    await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)
