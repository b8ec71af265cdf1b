"""Opening a vector env's connections to one server: batched where it agrees, else plain.

Against our servers every connection carries several sessions (``openenv-gym.batch.v1``):
one connection per worker process (per Unix socket of an embedded server, or as many as
``GET /capacity`` names workers) as long as each one's share of a step is worth a process
of its own (:func:`worker_connections`), the sub-envs spread evenly over them, each
connection's sessions opened with one ``batch_open``. A server that does not agree to the
subprotocol (an official ``openenv`` server) gets one plain session per sub-env instead,
each probed with a ``state`` request: a session the server refused answers
``CAPACITY_REACHED``. Each ``batch_open`` offers shared memory (a probe file) and, unless
``compression="off"``, compressed result frames (which the server grants only without
shared memory; ``"auto"`` then measures per connection whether packing pays:
:mod:`openenv_gym.wire.compression_policy`).

Connections open in a small thread pool (each is a TCP connect and a handshake: a remote
server's round trips overlap); everything else is blocking calls in the caller's thread.
"""

from __future__ import annotations

import concurrent.futures
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from openenv_gym.busy_poll import BusyPoller
from openenv_gym.client.blocking import BlockingConnection, ws_url_or_raise
from openenv_gym.client.exchange import exchange_many
from openenv_gym.client.options import ConnectOptions
from openenv_gym.errors import (
    CapacityReachedError,
    NoWebSocketEndpointError,
    OpenEnvGymError,
    PicklableError,
    ProtocolError,
    ServerReplyError,
)
from openenv_gym.vector.channels import (
    CLOSE_FRAME,
    STATE_FRAME,
    BatchChannel,
    Channel,
    PlainChannel,
)
from openenv_gym.wire.batch import (
    batch_agreements,
    batch_open_message,
    compact_agreed,
    repeat_agreed,
)
from openenv_gym.wire.compressed import ZSTD, batch_compression_offer
from openenv_gym.wire.encoding import resolve_encoding
from openenv_gym.wire.messages import encode_message
from openenv_gym.wire.shared_memory import ProbeFile

#: Connections opened at once (threads), per server.
PARALLEL_OPENS: Final = 8


class SessionsRefusedError(PicklableError):
    """Sessions a server refused with ``CAPACITY_REACHED`` while opening (internal)."""

    def __init__(self, refused: int) -> None:
        super().__init__(f"{refused} sessions refused")
        self.refused = refused


@dataclass(frozen=True)
class Opener:
    """How the connections of one vector env are opened.

    Attributes:
        options: How each connection is opened (timeouts, message size, headers, token,
            busy-polling).
        encoding: The ``encoding=`` of the vector env (``"json"``: no binary frames, no
            batching; :mod:`openenv_gym.wire.encoding` says what each value offers).
        batch: Offer ``openenv-gym.batch.v1`` (when the encoding offers it).
        truncated_key: The ``x-truncated-key`` field (SAME_STEP autoreset on the server).
        borrow_shared: Read shared-memory arrays as views (see
            :class:`~openenv_gym.wire.shared_memory.SharedArrayReader`): the caller copies
            every row out before its next request.
        poller: The busy-poller of all the vector env's connections (``None``: one each,
            with ``options.busy_poll``).
    """

    options: ConnectOptions
    encoding: str
    batch: bool
    truncated_key: str | None
    borrow_shared: bool = False
    poller: BusyPoller | None = None

    @property
    def reply_timeout(self) -> float:
        return self.options.reply_timeout

    def open_group(
        self,
        url: str,
        indices: list[int],
        sockets: Sequence[str],
        spread: int,
        workers: int | None = None,
    ) -> list[Channel]:
        """Connections for the sub-envs ``indices`` of the server at ``url``.

        Args:
            sockets: The server's Unix sockets (one per worker; a same-host server's), or none.
            spread: How many batch connections to spread the sub-envs over,
                ``1..len(indices)`` (:func:`worker_connections`; more for a pool).
            workers: The server's worker processes (``None``: ``spread``); the first
                ``min(spread, workers)`` connections are on distinct ones.

        Raises:
            SessionsRefusedError: The server refused sessions (``CAPACITY_REACHED``).
            OpenEnvGymError: Connecting failed.
        """
        plain: list[BlockingConnection] = []
        if self.batch:
            first = self.connect(url, sockets, range(spread), batch=True)
            if all(connection.batch for connection in first):
                distinct = spread if workers is None else min(spread, workers)
                if not sockets and distinct > 1:
                    first = self._spread_over_workers(url, first, distinct)
                return self._open_batches(first, indices)
            plain = first  # an official server: one session per connection
        try:
            rest = self.connect(url, sockets, range(len(plain), len(indices)), batch=False)
        except BaseException:
            close_all(plain)
            raise
        connections = [*plain, *rest]
        replies = exchange_many(connections, [STATE_FRAME] * len(connections), self.reply_timeout)
        refused = 0
        failure: BaseException | None = None
        for connection, raw in zip(connections, replies, strict=True):
            if isinstance(raw, BaseException):
                failure = failure or raw
                continue
            try:
                connection.encoding.parse_reply(raw, url=connection.url)
            except CapacityReachedError:
                refused += 1
            except (ServerReplyError, ProtocolError):
                pass  # the session is open; the env just does not serve ``state``
        if refused or failure is not None:
            close_all(connections)
            raise failure if failure is not None else SessionsRefusedError(refused)
        return [PlainChannel(c, i) for c, i in zip(connections, indices, strict=True)]

    def connect(
        self, url: str, sockets: Sequence[str], slots: range, *, batch: bool
    ) -> list[BlockingConnection]:
        """Open one connection per slot (spread over the server's Unix sockets).

        Raises:
            OpenEnvGymError: One failed (the others are closed).
        """
        options = self.options
        ws_url = ws_url_or_raise(url)
        choice = resolve_encoding(self.encoding)
        offered = choice.subprotocols(batch=batch)

        def open_one(slot: int) -> BlockingConnection:
            return BlockingConnection.open(
                ws_url,
                options,
                subprotocols=offered,
                unix_path=sockets[slot % len(sockets)] if sockets else None,
                poller=self.poller,
            )

        if len(slots) <= 1:
            try:
                connections = [open_one(slot) for slot in slots]
            except NoWebSocketEndpointError as exc:
                raise http_only_error(exc) from exc
        else:
            with concurrent.futures.ThreadPoolExecutor(
                min(len(slots), PARALLEL_OPENS), thread_name_prefix="openenv-gym-open"
            ) as pool:
                futures = [pool.submit(open_one, slot) for slot in slots]
            connections = [f.result() for f in futures if f.exception() is None]
            for future in futures:
                failure = future.exception()
                if failure is not None:
                    close_all(connections)
                    if isinstance(failure, NoWebSocketEndpointError):
                        raise http_only_error(failure) from failure
                    raise failure
        for connection in connections:
            try:
                choice.check_agreed(connection.encoding, url)
            except BaseException:
                close_all(connections)
                raise
        return connections

    def _spread_over_workers(
        self, url: str, connections: list[BlockingConnection], distinct: int
    ) -> list[BlockingConnection]:
        """As many connections, ``distinct`` of them on distinct worker processes.

        The kernel hands connections to a multi-worker server's processes by a hash, so two
        may land on one process while another idles; replace such duplicates (a few tries).
        """
        kept: dict[str | None, BlockingConnection] = {}
        spare: list[BlockingConnection] = []
        for connection in connections:
            if connection.worker in kept:
                spare.append(connection)
            else:
                kept[connection.worker] = connection
        tries = 4 * len(connections)
        while spare and tries > 0 and None not in kept and len(kept) < distinct:
            tries -= 1
            (candidate,) = self.connect(url, [], range(1), batch=True)
            if candidate.worker in kept or not candidate.batch:
                candidate.close()
                continue
            kept[candidate.worker] = candidate
            spare.pop().close()
        return [*kept.values(), *spare]

    def _open_batches(
        self, connections: list[BlockingConnection], indices: list[int]
    ) -> list[Channel]:
        """Open ``len(indices)`` sessions spread evenly over the batch ``connections``."""
        share, extra = divmod(len(indices), len(connections))
        chunks: list[list[int]] = []
        start = 0
        for k in range(len(connections)):
            size = share + (1 if k < extra else 0)
            chunks.append(indices[start : start + size])
            start += size
        compression = self.options.compression
        # Shared memory, if the server shares our /dev/shm (not when compression is forced).
        probe = ProbeFile.create() if compression != ZSTD else None
        offer = probe.offer() if probe is not None else None
        frames = [
            encode_message(
                batch_open_message(
                    len(chunk),
                    self.truncated_key,
                    offer,
                    batch_compression_offer(compression),
                    repeat=True,
                    compact=True,
                )
            )
            for chunk in chunks
        ]
        try:
            replies = exchange_many(connections, frames, self.reply_timeout)
        finally:
            if probe is not None:
                probe.close()
        refused = 0
        failure: BaseException | None = None
        # Shared memory, compression, repeated columns, compact frames.
        agreed: list[tuple[bool, bool, bool, bool]] = []
        for chunk, raw in zip(chunks, replies, strict=True):
            if isinstance(raw, BaseException):
                failure = failure or raw
                continue
            try:
                agreed.append(
                    (*batch_agreements(raw, len(chunk)), repeat_agreed(raw), compact_agreed(raw))
                )
            except CapacityReachedError:
                refused += len(chunk)
            except OpenEnvGymError as exc:
                failure = failure or exc
        if refused or failure is not None:
            close_all(connections)
            raise failure if failure is not None else SessionsRefusedError(refused)
        return [
            BatchChannel(
                c,
                chunk,
                shared_memory=shared,
                borrow=self.borrow_shared,
                compressed=packed,
                measured=compression != ZSTD,
                repeated=repeat,
                compact=compact,
            )
            for c, chunk, (shared, packed, repeat, compact) in zip(
                connections, chunks, agreed, strict=True
            )
        ]


#: Seconds of environment stepping a connection's share of a vector step should take
#: before one more worker process is worth its connection (a frame more to build, send,
#: wait for and parse every step: about 100 µs of client time, and a wake-up).
SPREAD_SECONDS: Final = 300e-6


def worker_connections(sessions: int, workers: int, step_seconds: float | None) -> int:
    """How many of a server's ``workers`` processes to spread ``sessions`` over.

    Every worker while the step cost is unknown; otherwise just enough that each
    connection's share takes about :data:`SPREAD_SECONDS` (at least one, at most one per
    worker and per session). Cheap environments then step on one process without the
    per-connection cost of the others, expensive ones on every core.

    Example:
        >>> worker_connections(16, 2, 10e-6)  # CartPole: 160 µs per step on one worker
        1
        >>> worker_connections(8, 2, 500e-6)  # Atari: 4 ms per step on one worker
        2
        >>> worker_connections(8, 4, None)
        4
    """
    limit = max(1, min(sessions, workers))
    if step_seconds is None:
        return limit
    return max(1, min(limit, math.ceil(sessions * step_seconds / SPREAD_SECONDS)))


def http_only_error(refused: NoWebSocketEndpointError) -> NoWebSocketEndpointError:
    """Why a vector env cannot use a server with no ``/ws``, and the call that can."""
    return NoWebSocketEndpointError(
        f"{refused.url} has no OpenEnv WebSocket endpoint: the server speaks HTTP only (a "
        "first-release openenv-core 0.1 server or a plain FastAPI app), one session per "
        "server, and a vector env needs WebSocket sessions. Start one server per sub-env and "
        "step them in a Gymnasium vector env of single envs (each speaks HTTP): "
        "gym.vector.SyncVectorEnv([lambda u=u: gym.make('openenv/Remote-v0', base_url=u) "
        "for u in urls])",
        url=refused.url,
    )


def close_all(connections: Sequence[BlockingConnection]) -> None:
    """Close every connection (saying ``close`` to the server). Never raises."""
    for connection in connections:
        connection.close(CLOSE_FRAME)


__all__ = [
    "SPREAD_SECONDS",
    "Opener",
    "SessionsRefusedError",
    "close_all",
    "worker_connections",
]
