"""One round trip on many blocking connections: send on all, then read each reply.

A vector env's step writes one frame on each of its connections before it reads any reply,
so the servers work at the same time; then it reads the replies in order, all under one
deadline. No event loop: a frame is a ``send`` system call, a reply a ``recv`` (or none,
when it is already in the socket buffer). Failures are returned in place of replies, never
raised, so one broken connection does not hide the others' replies.

Example:
    >>> connections = [BlockingConnection.open(url, ...) for url in urls]  # doctest: +SKIP
    >>> replies = exchange_many(connections, ['{"type":"state"}'] * 2, timeout=10)  # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

from openenv_gym.client.blocking import BlockingConnection
from openenv_gym.errors import (
    ConnectionLostError,
    OpenEnvGymError,
    ReplyTimeoutError,
    SessionClosedError,
)


def send_many(
    connections: Sequence[BlockingConnection], frames: Sequence[str | bytes]
) -> list[OpenEnvGymError | None]:
    """Send ``frames[i]`` on ``connections[i]`` for every i; never waits for a reply.

    Returns what :func:`receive_each` takes: ``None`` for a frame sent, a
    ``SessionClosedError`` for a connection closed before (nothing sent). A connection
    that broke while sending reports it when its reply is read (a refused session sends an
    error frame, then closes: that frame is still to be read).
    """
    sent: list[OpenEnvGymError | None] = [None] * len(connections)
    for i, connection in enumerate(connections):
        if connection.closed:
            sent[i] = SessionClosedError(f"the session to {connection.url} is closed")
            continue
        try:
            connection.send(frames[i])
        except ConnectionLostError:
            pass  # receive_each reads what is queued, then reports the broken connection
        except SessionClosedError as exc:
            sent[i] = exc
    return sent


def receive_each(
    connections: Sequence[BlockingConnection],
    sent: Sequence[OpenEnvGymError | None],
    timeout: float,
    *,
    together: bool = False,
) -> Iterator[str | bytes | OpenEnvGymError]:
    """One reply per connection of :func:`send_many` (``sent`` is what it returned), in
    order, each as soon as it is read, all within ``timeout`` seconds from now (so the
    caller can decode a reply while the next server is still at work).

    With ``together``, it first sleeps until every reply is in (the last connection's
    first: its server got its frame last), then yields them in order. That is for a
    client whose cores the servers' workers fill: decoding a reply, or busy-polling, while
    another worker is still at work takes that worker's core, and the round trip waits for
    it (measured on 2 cores, preprocessed Pong N=8: busy-polling through to the last reply
    cost 3-5% of the steps/s, sleeping through to it gained 1-3% over decoding each reply
    as it came).

    In place of a reply:

    * ``SessionClosedError``: the connection was closed before (nothing was sent);
    * ``ReplyTimeoutError``: no reply in time (the connection is closed: a late reply
      would be paired with the next request);
    * ``ConnectionLostError``: the connection closed (it is closed).
    """
    deadline = time.monotonic() + timeout
    first = True  # the round trip's busy-poll spins for its first reply only
    if together:
        for connection, failure in reversed(list(zip(connections, sent, strict=True))):
            if failure is None:
                connection.wait_readable(deadline)
        first = False
    for connection, failure in zip(connections, sent, strict=True):
        if failure is not None:
            yield failure
            continue
        try:
            reply: str | bytes | OpenEnvGymError = connection.receive(deadline, spin=first)
            first = False
        except (ReplyTimeoutError, ConnectionLostError, SessionClosedError) as exc:
            reply = exc
        yield reply


def exchange_many(
    connections: Sequence[BlockingConnection], frames: Sequence[str | bytes], timeout: float
) -> list[str | bytes | OpenEnvGymError]:
    """Send ``frames[i]`` on ``connections[i]`` for every i, then read every reply (see
    :func:`receive_each` for what comes in place of a reply)."""
    return list(receive_each(connections, send_many(connections, frames), timeout))


__all__ = ["exchange_many", "receive_each", "send_many"]
