"""``python -m benchmarks.memory_bounds``: server memory under hostile clients that never read.

Starts ``openenv-gym serve gymnasium --env-id CartPole-v1`` in a child process, then measures
its RSS (``/proc/PID/status``) while raw TCP clients that never read their replies:

* ``pings``: send N WebSocket pings of 125 bytes (each answered by a pong the client never
  reads);
* ``big frames``: open C connections, each sending M text frames just under the hard cap
  (``--max-message-size`` x the server's hard-cap factor; answered by an error);
* ``steps``: pipeline N valid steps without reading the observations.

Prints one Markdown table (server RSS before, after, growth, and growth per connection).
Not a test: RSS depends on the allocator and the machine.
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from openenv_gym.providers import LocalServerProcess
from openenv_gym.server.app import HARD_CAP_FACTOR


def rss_mib(pid: int) -> float:
    """The resident set size of ``pid`` in MiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def client_frame(opcode: int, payload: bytes) -> bytes:
    """One masked client frame (mask of zeros: the payload goes unchanged)."""
    head = bytes([0x80 | opcode])
    size = len(payload)
    if size < 126:
        head += bytes([0x80 | size])
    elif size < 1 << 16:
        head += bytes([0x80 | 126]) + struct.pack("!H", size)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", size)
    return head + b"\0\0\0\0" + payload


def open_raw(port: int) -> socket.socket:
    """A WebSocket connection to ``/ws`` whose replies are never read (a tiny receive buffer)."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(
        b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    response = b""
    while b"\r\n\r\n" not in response:
        response += sock.recv(1)
    if b" 101 " not in response.split(b"\r\n", 1)[0]:
        raise RuntimeError(f"handshake refused: {response!r}")
    sock.settimeout(0.5)
    return sock


def send_for(sock: socket.socket, data: bytes, seconds: float) -> int:
    """Send ``data`` until it is all sent or ``seconds`` pass (the server stopped reading)."""
    sent, deadline = 0, time.monotonic() + seconds
    view = memoryview(data)
    while sent < len(data) and time.monotonic() < deadline:
        try:
            sent += sock.send(view[sent : sent + 65536])
        except TimeoutError:
            continue
    return sent


@contextmanager
def server(max_message_size: int | None) -> Iterator[tuple[int, int]]:
    """A CartPole server (``openenv-gym serve``) in a child process: its pid and port."""
    serve = ["gymnasium", "--env-id", "CartPole-v1", "--max-sessions", "256"]
    if max_message_size is not None:
        serve += ["--max-message-size", str(max_message_size)]
    with LocalServerProcess(serve) as process:
        assert process.pid is not None
        assert process.base_url is not None
        yield process.pid, int(urlsplit(process.base_url).port or 0)


def settle(pid: int) -> float:
    time.sleep(1.0)
    return rss_mib(pid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pings", type=int, default=500_000)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--frames", type=int, default=4, help="big frames per connection")
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--max-message-size", type=int, default=None)
    parser.add_argument("--seconds", type=float, default=20.0, help="time limit per phase")
    args = parser.parse_args()
    rows = []
    with server(args.max_message_size) as (pid, port):
        from openenv_gym.wire.messages import SERVER_INBOUND_LIMIT

        limit = args.max_message_size or SERVER_INBOUND_LIMIT
        base = settle(pid)

        sock = open_raw(port)
        pings = client_frame(0x9, b"p" * 125) * args.pings  # the largest control frames
        sent = send_for(sock, pings, args.seconds)
        after = settle(pid)
        rows.append((f"{args.pings:,} pings, never read", sent, base, after, 1))
        sock.close()

        base = settle(pid)
        socks = [open_raw(port) for _ in range(args.connections)]
        payload = b'"' + b"x" * (HARD_CAP_FACTOR * limit - 1024) + b'"'
        frame = client_frame(0x1, payload)
        total = 0
        for sock in socks:
            for _ in range(args.frames):
                total += send_for(sock, frame, args.seconds / args.connections / args.frames)
        after = settle(pid)
        rows.append(
            (
                f"{args.connections} conns x {args.frames} frames of "
                f"{len(payload) / 2**20:.1f} MiB",
                total,
                base,
                after,
                args.connections,
            )
        )
        for sock in socks:
            sock.close()

        base = settle(pid)
        sock = open_raw(port)
        reset = client_frame(0x1, b'{"type":"reset"}')
        step = client_frame(0x1, b'{"type":"step","data":{"action":0}}')
        sent = send_for(sock, reset + step * args.steps, args.seconds)
        after = settle(pid)
        rows.append((f"{args.steps:,} steps pipelined, never read", sent, base, after, 1))
        sock.close()

    print(f"server: serve gymnasium CartPole-v1, --max-message-size {limit} (pid {os.getpid()})")
    print("| flood | bytes accepted | RSS before (MiB) | after (MiB) | growth per conn (MiB) |")
    print("|---|---:|---:|---:|---:|")
    for name, sent, before, after, conns in rows:
        print(
            f"| {name} | {sent:,} | {before:.0f} | {after:.0f} | {(after - before) / conns:.1f} |"
        )


if __name__ == "__main__":
    main()
