"""A TCP proxy on 127.0.0.1 that behaves like a link: a one-way delay and a bandwidth cap.

This kernel has ``tbf`` but no ``netem``, so the delay cannot come from Linux traffic control;
the proxy adds both. Each direction is one FIFO link (full duplex), shared by every
connection through the proxy as they would share the wire to another host: a chunk read at
time ``t`` leaves the link's queue at
``depart = max(t, previous depart) + size / rate`` (a token bucket with no burst, so bytes
are paced to the rate) and reaches the other end at ``depart + delay``. A reader thread
stamps each chunk, a writer thread sleeps until its arrival time (``time.sleep``: sub-
millisecond, unlike the millisecond resolution of an event loop's timers) and sends it.

The link's queue is not bounded (a sender that outruns the cap is not pushed back, its
bytes just arrive later): right for request/reply traffic such as env steps, not a model of
TCP's congestion window.

Run it in its own process (:class:`LinkProxyProcess`, ``python -m
openenv_gym.bench.link_proxy``) so it never competes for the client's GIL; its own ceiling
(:func:`measure_ceiling`) is printed with every linked run, so it is visibly not the
bottleneck.

Example:
    >>> import socket, threading
    >>> server = socket.create_server(("127.0.0.1", 0))
    >>> def echo() -> None:
    ...     conn, _ = server.accept()
    ...     with conn:
    ...         while data := conn.recv(65536):
    ...             conn.sendall(data)
    >>> threading.Thread(target=echo, daemon=True).start()
    >>> with LinkProxy(server.getsockname(), one_way_delay=0.001) as proxy:
    ...     with socket.create_connection(proxy.address) as client:
    ...         client.sendall(b"ping")
    ...         client.recv(4)
    b'ping'
    >>> server.close()
"""

from __future__ import annotations

import argparse
import contextlib
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any, Final

from openenv_gym.errors import LinkProxyError
from openenv_gym.providers.local import spawn_unbuffered
from openenv_gym.providers.ready_line import format_ready_line, parse_ready_line

#: The most bytes one timed chunk carries (large reads are split, so pacing stays smooth).
CHUNK_BYTES: Final = 16384
#: The most bytes one ``recv`` takes.
READ_BYTES: Final = 262144
_SOCKET_BUFFER: Final = 4 * 1024 * 1024

Address = tuple[str, int]
_Item = tuple[float, bytes] | None


class _Link:
    """One direction of the link, shared by every connection through the proxy (as all the
    connections to another host share its wire): a FIFO with a delay and a rate."""

    def __init__(self, delay: float, rate: float | None) -> None:
        self.delay, self.rate = delay, rate
        self.delivered = 0
        self._free_at = 0.0
        self._lock = threading.Lock()

    def count(self, size: int) -> None:
        """``size`` more bytes leave the link for the other end."""
        with self._lock:
            self.delivered += size

    def arrival(self, now: float, size: int) -> float:
        """When ``size`` bytes that enter the link at ``now`` reach the other end."""
        if self.rate is None:
            return now + self.delay
        with self._lock:
            self._free_at = max(now, self._free_at) + size / self.rate
            return self._free_at + self.delay


class _Direction:
    """One direction of one proxied connection: a reader, the shared link, a writer."""

    def __init__(self, source: socket.socket, destination: socket.socket, link: _Link) -> None:
        self._source, self._destination = source, destination
        self._link = link
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self.threads = [
            threading.Thread(target=self._read, name="link-proxy-read", daemon=True),
            threading.Thread(target=self._write, name="link-proxy-write", daemon=True),
        ]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def _read(self) -> None:
        clock, put, arrival = time.perf_counter, self._queue.put, self._link.arrival
        try:
            while data := self._source.recv(READ_BYTES):
                now = clock()
                for offset in range(0, len(data), CHUNK_BYTES):
                    chunk = data[offset : offset + CHUNK_BYTES]
                    put((arrival(now, len(chunk)), chunk))
        except OSError:
            pass
        put(None)

    def _write(self) -> None:
        clock, get = time.perf_counter, self._queue.get
        try:
            while (item := get()) is not None:
                due, chunk = item
                wait = due - clock()
                if wait > 0:
                    time.sleep(wait)
                # Counted before the send, so a reader that has the bytes sees them counted.
                self._link.count(len(chunk))
                self._destination.sendall(chunk)
            self._destination.shutdown(socket.SHUT_WR)
        except OSError:
            with contextlib.suppress(OSError):
                self._source.shutdown(socket.SHUT_RDWR)


class LinkProxy:
    """Forward connections from a port on 127.0.0.1 to ``target`` through an emulated link.

    Args:
        target: The ``(host, port)`` every accepted connection is forwarded to.
        one_way_delay: Seconds each chunk is held, in each direction.
        bytes_per_s: The bandwidth per direction (``None``: not capped).
        port: The port to listen on (``0``: a free one).

    Attributes:
        bytes_up: Bytes delivered client -> target so far.
        bytes_down: Bytes delivered target -> client so far.
    """

    def __init__(
        self,
        target: Sequence[object],
        *,
        one_way_delay: float = 0.0,
        bytes_per_s: float | None = None,
        port: int = 0,
    ) -> None:
        if one_way_delay < 0 or (bytes_per_s is not None and bytes_per_s <= 0):
            raise LinkProxyError(
                f"expected one_way_delay >= 0 and bytes_per_s > 0 (or None), got "
                f"one_way_delay={one_way_delay!r}, bytes_per_s={bytes_per_s!r}"
            )
        self.target: Address = (str(target[0]), int(str(target[1])))
        self.one_way_delay = one_way_delay
        self.bytes_per_s = bytes_per_s
        self._up, self._down = _Link(one_way_delay, bytes_per_s), _Link(one_way_delay, bytes_per_s)
        self._listener = socket.create_server(("127.0.0.1", port))
        self._sockets: list[socket.socket] = []
        self._closed = False
        self._accepter = threading.Thread(target=self._accept, name="link-proxy", daemon=True)
        self._accepter.start()

    @property
    def address(self) -> Address:
        """Where clients connect: ``("127.0.0.1", port)``."""
        host, port = self._listener.getsockname()[:2]
        return str(host), int(port)

    @property
    def bytes_up(self) -> int:
        return self._up.delivered

    @property
    def bytes_down(self) -> int:
        return self._down.delivered

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()  # the client sees the connection refused, as without a proxy
                continue
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _SOCKET_BUFFER)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _SOCKET_BUFFER)
            self._sockets += [client, upstream]
            _Direction(client, upstream, self._up).start()
            _Direction(upstream, client, self._down).start()

    def close(self) -> None:
        """Stop listening and cut every proxied connection. Idempotent."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def __enter__(self) -> LinkProxy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class LinkProxyProcess:
    """A :class:`LinkProxy` in a child process (``python -m openenv_gym.bench.link_proxy``).

    The child stops when :meth:`stop` runs, or when this process dies (its stdin closes).

    Args:
        target: The ``(host, port)`` to forward to.
        one_way_delay: Seconds each chunk is held, in each direction.
        bytes_per_s: The bandwidth per direction (``None``: not capped).
    """

    def __init__(
        self, target: Address, *, one_way_delay: float = 0.0, bytes_per_s: float | None = None
    ) -> None:
        self.target = target
        self.one_way_delay = one_way_delay
        self.bytes_per_s = bytes_per_s
        self._process: subprocess.Popen[str] | None = None
        self.address: Address | None = None

    @property
    def command(self) -> list[str]:
        """The child's command line."""
        words = [sys.executable, "-m", "openenv_gym.bench.link_proxy"]
        words += ["--target", f"{self.target[0]}:{self.target[1]}"]
        words += ["--delay-s", repr(self.one_way_delay)]
        if self.bytes_per_s is not None:
            words += ["--bytes-per-s", repr(self.bytes_per_s)]
        return words

    def start(self, timeout: float = 30.0) -> Address:
        """Start the child; return the address it listens on.

        Raises:
            LinkProxyError: The child exited or printed no ready line within ``timeout``.
        """
        process = spawn_unbuffered(self.command)
        self._process = process
        lines: list[str] = []
        ready: list[dict[str, Any]] = []
        found = threading.Event()

        def read(stream: IO[str] | None) -> None:
            for line in stream or ():
                lines.append(line.rstrip("\n"))
                if (info := parse_ready_line(line)) is not None:
                    ready.append(info)
                    found.set()

        threading.Thread(target=read, args=(process.stdout,), daemon=True).start()
        if not found.wait(timeout):
            self.stop()
            raise LinkProxyError(
                f"the link proxy did not start within {timeout:g} s (command: "
                f"{' '.join(self.command)}); its output: {' | '.join(lines) or 'none'}"
            )
        self.address = ("127.0.0.1", int(ready[0]["port"]))
        return self.address

    def stop(self) -> None:
        """Stop the child. Idempotent."""
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)

    def __enter__(self) -> LinkProxyProcess:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@dataclass(frozen=True)
class Ceiling:
    """What the proxy itself carries at zero delay and no cap.

    Attributes:
        bytes_per_s: Bulk throughput, one connection, one direction.
        round_trips_per_s: Sequential 64-byte request/reply round trips on one connection.
    """

    bytes_per_s: float
    round_trips_per_s: float

    def describe(self) -> str:
        return (
            f"link proxy ceiling (0 ms, no cap, its own process): "
            f"{self.bytes_per_s * 8 / 1e9:.2f} Gbit/s bulk, "
            f"{self.round_trips_per_s:,.0f} round trips/s on one connection"
        )


def _sink_and_echo(server: socket.socket) -> None:
    """Serve two connections: the first is drained (bulk), the second echoed."""
    with contextlib.suppress(OSError):
        conn, _ = server.accept()
        with conn:
            while conn.recv(READ_BYTES):
                pass
            conn.sendall(b"k")
        conn, _ = server.accept()
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)


def measure_ceiling(bulk_bytes: int = 64 * 1024 * 1024, seconds: float = 0.5) -> Ceiling:
    """Measure a proxy child at zero delay and no cap: bulk bytes/s and round trips/s."""
    server = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=_sink_and_echo, args=(server,), daemon=True).start()
    try:
        proxy = LinkProxyProcess(server.getsockname()[:2])
        address = proxy.start()
        try:
            block = bytes(1 << 20)
            with socket.create_connection(address) as conn:
                start = time.perf_counter()
                for _ in range(bulk_bytes // len(block)):
                    conn.sendall(block)
                conn.shutdown(socket.SHUT_WR)
                conn.recv(1)  # the sink's reply: every byte went through
                bulk = bulk_bytes / (time.perf_counter() - start)
            with socket.create_connection(address) as conn:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                message, count = bytes(64), 0
                start = time.perf_counter()
                while time.perf_counter() - start < seconds:
                    conn.sendall(message)
                    got = 0
                    while got < len(message):
                        got += len(conn.recv(65536))
                    count += 1
                trips = count / (time.perf_counter() - start)
        finally:
            proxy.stop()
    finally:
        server.close()
    return Ceiling(bulk, trips)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m openenv_gym.bench.link_proxy --target HOST:PORT [--delay-s S]
    [--bytes-per-s B]``: proxy until stdin closes."""
    parser = argparse.ArgumentParser(prog="python -m openenv_gym.bench.link_proxy")
    parser.add_argument("--target", required=True, metavar="HOST:PORT")
    parser.add_argument("--delay-s", type=float, default=0.0, metavar="S")
    parser.add_argument("--bytes-per-s", type=float, default=None, metavar="B")
    args = parser.parse_args(argv)
    host, _, port = str(args.target).rpartition(":")
    target = (host, int(port))
    with LinkProxy(target, one_way_delay=args.delay_s, bytes_per_s=args.bytes_per_s) as proxy:
        print(format_ready_line({"port": proxy.address[1]}), flush=True)
        sys.stdin.read()  # EOF: the parent stopped us or died
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
