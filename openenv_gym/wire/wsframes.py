"""Write a WebSocket text frame straight to the transport, skipping per-send bookkeeping.

``websockets``' ``Connection.send`` wraps every frame in an async context manager (state
checks, flow control, close handling). On the hot path of a vector env or a server that
costs about as much as the frame itself. :func:`send_frame` writes through the sans-I/O
protocol object (public API) when the connection is open and its write buffer is small, and
otherwise falls back to ``Connection.send``, so behaviour on a closing or congested
connection is unchanged.
"""

from __future__ import annotations

from typing import Final

from websockets.asyncio.connection import Connection
from websockets.protocol import State

#: Above this many buffered bytes, sends wait for the buffer to drain (``Connection.send``).
FAST_SEND_BUFFER_LIMIT: Final = 64 * 1024


async def send_frame(connection: Connection, frame: str | bytes) -> None:
    """Send ``frame`` as one text frame (``bytes`` must be UTF-8).

    Raises:
        websockets.exceptions.ConnectionClosed: The connection is closed.
    """
    protocol = connection.protocol
    transport = connection.transport
    if (
        protocol.state is State.OPEN
        # No fragmented message is half-sent (the attribute's name differs across versions).
        and getattr(connection, "send_in_progress", None) is None
        and getattr(connection, "fragmented_send_waiter", None) is None
        and transport.get_write_buffer_size() < FAST_SEND_BUFFER_LIMIT
    ):
        protocol.send_text(frame.encode() if isinstance(frame, str) else frame)
        for data in protocol.data_to_send():
            transport.write(data)
        return
    await connection.send(frame, text=True)


__all__ = ["FAST_SEND_BUFFER_LIMIT", "send_frame"]
