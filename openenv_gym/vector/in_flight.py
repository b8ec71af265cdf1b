"""The frames a pool has in flight: at most one per connection, replies read as they come.

:class:`InFlight` sends the ops of some sub-envs (one frame per connection that carries
them: a ``batch_step`` on a batch connection, the plain message otherwise) and waits on the
sockets of every connection with a frame out, returning the replies in the order they
arrive. A connection carries one frame at a time: ops for a connection whose reply is not
read yet are held, and :meth:`InFlight.flush` sends them once it is (so a reply's
shared-memory arrays are never overwritten by the next one before they are read).

Example:
    >>> WAIT_SLICE  # a wait on the sockets is sliced, so no reply waits longer than this
    0.05
"""

from __future__ import annotations

import contextlib
import select
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from openenv_gym.errors import (
    ConnectionLostError,
    OpenEnvGymError,
    ReplyTimeoutError,
    SessionClosedError,
)
from openenv_gym.vector.channels import Channel
from openenv_gym.vector.connections import Connections
from openenv_gym.vector.round_trip import Op

#: The longest single wait on the sockets (the keepalive thread may read a reply meanwhile).
WAIT_SLICE: Final = 0.05


@dataclass
class Flight:
    """A frame sent on a connection whose reply is not read yet.

    Attributes:
        channel: The connection.
        sub_envs: The sub-envs whose ops it carries.
        resetting: Those whose op is an autoreset (their action was ignored).
        deadline: ``time.monotonic()`` by which the reply must come.
    """

    channel: Channel
    sub_envs: list[int]
    resetting: frozenset[int]
    deadline: float


class InFlight:
    """The frames in flight on ``connections`` and the ops held for busy connections."""

    def __init__(self, connections: Connections, num_envs: int) -> None:
        self._connections = connections
        self.num_envs = num_envs
        self._flights: dict[int, Flight] = {}  # id(channel) -> its frame in flight
        self._held: dict[int, dict[int, Op]] = {}  # id(channel) -> ops waiting for it
        self._held_resets: set[int] = set()
        self._channel_of: list[Channel] = []
        self.map_channels()

    def map_channels(self) -> None:
        """Learn which connection each sub-env is on (again, after a reopen)."""
        channel_of: dict[int, Channel] = {}
        for channel in self._connections.channels:
            for i in channel.indices:
                channel_of[i] = channel
        self._channel_of = [channel_of[i] for i in range(self.num_envs)]

    @property
    def waiting(self) -> bool:
        """Whether any frame is in flight."""
        return bool(self._flights)

    def dispatch(self, ops: Mapping[int, Op], resets: set[int]) -> None:
        """Send ``ops`` (sub-env -> op; ``resets``: those that are autoresets), one frame per
        connection, holding the ops of a connection that has a frame in flight."""
        by_channel: dict[int, dict[int, Op]] = {}
        for i, op in ops.items():
            by_channel.setdefault(id(self._channel_of[i]), {})[i] = op
        for key, channel_ops in by_channel.items():
            if key in self._flights:
                self._held.setdefault(key, {}).update(channel_ops)
                self._held_resets.update(resets.intersection(channel_ops))
            else:
                channel = self._channel_of[next(iter(channel_ops))]
                self._send(channel, channel_ops, frozenset(resets.intersection(channel_ops)))

    def _send(self, channel: Channel, ops: Mapping[int, Op], resetting: frozenset[int]) -> None:
        listed: list[Op | None] = [None] * self.num_envs
        for i, op in ops.items():
            listed[i] = op
        frame = channel.frame(listed)
        if frame is None:
            return
        with contextlib.suppress(ConnectionLostError, SessionClosedError):
            channel.session.send(frame)  # reading the reply reports a broken connection
        deadline = time.monotonic() + self._connections.reply_timeout
        self._flights[id(channel)] = Flight(channel, sorted(ops), resetting, deadline)

    def flush(self, channel: Channel) -> None:
        """Send the ops held for ``channel`` (its reply was read)."""
        held = self._held.pop(id(channel), None)
        if held:
            resetting = frozenset(self._held_resets.intersection(held))
            self._held_resets.difference_update(held)
            self._send(channel, held, resetting)

    def forget_held(self, channel: Channel) -> list[int]:
        """Drop the ops held for ``channel`` (its connection broke); their sub-envs."""
        held = self._held.pop(id(channel), {})
        self._held_resets.difference_update(held)
        return list(held)

    def replies(self, *, every: bool = False) -> list[tuple[Flight, str | bytes | OpenEnvGymError]]:
        """Wait until at least one reply came (or a deadline passed); those replies, each
        with its flight (no longer in flight), in the order the sockets gave them. A broken
        or late connection gives its error in place of a reply.

        ``every``: the caller needs every reply anyway (a synchronous pool): they are read
        in order, as a vector env reads them (the first read spins), with no ``poll``.
        """
        flights = list(self._flights.values())
        if every or len(flights) == 1:  # no order to keep
            return [(f, self._read(f, spin=k == 0)) for k, f in enumerate(flights)]
        ready = [f for f in flights if f.channel.session.has_message]
        if not ready:
            earliest = min(f.deadline for f in flights)
            now = time.monotonic()
            if now >= earliest:
                ready = [min(flights, key=lambda f: f.deadline)]  # its read raises the timeout
            else:
                by_fd = {f.channel.session.fileno(): f for f in flights}
                poller = select.poll()
                for fd in by_fd:
                    poller.register(fd, select.POLLIN)
                timeout_ms = max(1, int(min(WAIT_SLICE, earliest - now) * 1000))
                ready = [by_fd[fd] for fd, _ in poller.poll(timeout_ms)]
        return [(flight, self._read(flight)) for flight in ready]

    def _read(self, flight: Flight, *, spin: bool = False) -> str | bytes | OpenEnvGymError:
        del self._flights[id(flight.channel)]
        try:
            return flight.channel.session.receive(flight.deadline, spin=spin)
        except (ReplyTimeoutError, ConnectionLostError, SessionClosedError) as exc:
            return exc

    def drain(self) -> None:
        """Wait out every frame in flight (replies dropped) and drop the held ops."""
        for flight in list(self._flights.values()):
            flight.channel.skip(self._read(flight))
        self._held.clear()
        self._held_resets.clear()


__all__ = ["WAIT_SLICE", "Flight", "InFlight"]
