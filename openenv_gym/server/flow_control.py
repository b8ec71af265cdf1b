"""Memory bounds per connection: a peer that does not read stops being read.

websockets answers every ping with a pong as the frame is parsed, whether or not the peer
reads: a client sending pings and never reading grew the server without limit (2M pings:
+239 MiB). :class:`BoundedServerConnection` stops reading from a connection while more than
``write_limit`` bytes wait to be sent to it (asyncio's ``pause_writing``) and reads again
once they drain, so what one connection holds is bounded on both sides:

* out: at most the write limit (32 KiB) plus one reply (frames go through the transport,
  and sends wait for it to drain above :data:`~openenv_gym.wire.wsframes.FAST_SEND_BUFFER_LIMIT`);
* in: at most :data:`MAX_QUEUED_FRAMES` received frames waiting for the session, one being
  assembled, and one being answered, each at most the hard cap
  (``HARD_CAP_FACTOR * max_message_size``), plus one socket read (256 KiB).

With the defaults (1 MiB messages, a 2 MiB hard cap) that is at most about 13 MiB per
connection, whatever the peer sends; the README states the measured figures
(``python -m benchmarks.memory_bounds``).
"""

from __future__ import annotations

from typing import Final

from websockets.asyncio.server import ServerConnection

#: Received frames queued for a session before the server stops reading its connection.
MAX_QUEUED_FRAMES: Final = 4


class BoundedServerConnection(ServerConnection):
    """A :class:`~websockets.asyncio.server.ServerConnection` that stops reading while its
    peer does not read what it is sent (pass it as ``serve(create_connection=...)``)."""

    _writes_blocked = False

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        # Automatic replies (pongs, close frames) were written above: if the peer does not
        # read them, read nothing more from it until they drain.
        if self.paused:
            self._writes_blocked = True
            self.transport.pause_reading()  # idempotent

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._writes_blocked:
            self._writes_blocked = False
            # Unless the session's own queue is full (it resumes reading when drained).
            if not getattr(self.recv_messages, "paused", False):
                self.transport.resume_reading()


__all__ = ["MAX_QUEUED_FRAMES", "BoundedServerConnection"]
