"""Round trips per second of WebSocket stacks on loopback: the measurement behind our stack.

Each server runs in its own process and echoes every frame; each client sends one small text
frame (the size of a CartPole step message), waits for the echo, and repeats for a few
seconds. Servers: ``websockets`` on asyncio's default loop and on uvloop, an
:class:`asyncio.Protocol` framed by ``websockets``' sans-I/O protocol on uvloop (the design
of :mod:`openenv_gym.server.connection`), ``aiohttp`` and ``picows`` on uvloop. Clients: a
blocking socket framed by ``websockets``' sans-I/O protocol (the single env's path),
``websockets`` asyncio on uvloop, ``picows`` on uvloop (sending from its frame callback,
and, as a synchronous ``step`` must, running the loop until each reply). Stacks that are
not installed (``picows`` and ``aiohttp`` come with the ``[bench]`` extra) are left out.

Run it with ``python -m benchmarks.ws_stack`` (``--seconds``, ``--size``).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import multiprocessing
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openenv_gym.bench.ray_cluster import free_ports

SERVERS = (
    "websockets/asyncio",
    "websockets/uvloop",
    "websockets-sans-io/uvloop",
    "aiohttp/uvloop",
    "picows/uvloop",
)
CLIENTS = (
    "websockets-sans-io/blocking",
    "websockets/uvloop",
    "picows/uvloop",
    "picows-loop-per-step/uvloop",
)


@dataclass(frozen=True)
class EchoResult:
    """One server x client pair: round trips per second and microseconds per round trip."""

    server: str
    client: str
    round_trips_per_s: float

    @property
    def microseconds(self) -> float:
        """Mean microseconds per round trip."""
        return 1e6 / self.round_trips_per_s


def _run_server(kind: str, port: int, ready: Any) -> None:
    if kind.endswith("uvloop"):
        import uvloop

        uvloop.install()

    async def main() -> None:
        server: Any
        if kind.startswith("picows"):
            import picows

            class Echo(picows.WSListener):
                def on_ws_frame(self, transport: Any, frame: Any) -> None:
                    if frame.msg_type == picows.WSMsgType.TEXT:
                        transport.send(picows.WSMsgType.TEXT, frame.get_payload_as_bytes())
                    elif frame.msg_type == picows.WSMsgType.CLOSE:
                        transport.send_close(frame.get_close_code())
                        transport.disconnect()

            server = await picows.ws_create_server(lambda _request: Echo(), "127.0.0.1", port)
        elif kind.startswith("websockets-sans-io"):
            from websockets.frames import Frame, Opcode
            from websockets.http11 import Request
            from websockets.server import ServerProtocol

            class SansIoEcho(asyncio.Protocol):
                def connection_made(self, transport: Any) -> None:
                    self.transport = transport
                    self.protocol = ServerProtocol()

                def data_received(self, data: bytes) -> None:
                    protocol = self.protocol
                    protocol.receive_data(data)
                    for event in protocol.events_received():
                        if isinstance(event, Request):
                            protocol.send_response(protocol.accept(event))
                        elif isinstance(event, Frame) and event.opcode is Opcode.TEXT:
                            protocol.send_text(event.data)
                    for chunk in protocol.data_to_send():
                        if chunk:
                            self.transport.write(chunk)
                        else:
                            self.transport.close()

            loop = asyncio.get_running_loop()
            server = await loop.create_server(SansIoEcho, "127.0.0.1", port)
        elif kind.startswith("aiohttp"):
            from aiohttp import WSMsgType, web

            async def handle(request: web.Request) -> web.WebSocketResponse:
                response = web.WebSocketResponse(autoping=True, compress=False)
                await response.prepare(request)
                async for message in response:
                    if message.type == WSMsgType.TEXT:
                        await response.send_str(message.data)
                return response

            app = web.Application()
            app.router.add_get("/", handle)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", port).start()
            ready.set()
            await asyncio.Event().wait()
            return
        else:
            from websockets.asyncio.server import ServerConnection, serve

            async def echo(connection: ServerConnection) -> None:
                async for message in connection:
                    await connection.send(message)

            server = await serve(echo, "127.0.0.1", port, compression=None, ping_interval=None)
        ready.set()
        await asyncio.Event().wait()
        server.close()

    asyncio.run(main())


def _blocking_client(url: str, message: str, seconds: float) -> float:
    from openenv_gym.client.blocking import BlockingConnection
    from openenv_gym.client.options import ConnectOptions

    options = ConnectOptions(connect_timeout=10, reply_timeout=10, max_message_size=1 << 20)
    connection = BlockingConnection.open(url, options)
    try:
        count, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            connection.send(message)
            connection.receive()
            count += 1
        return count / elapsed
    finally:
        connection.close()


def _websockets_client(url: str, message: str, seconds: float) -> float:
    import uvloop
    from websockets.asyncio.client import connect

    async def main() -> float:
        async with connect(url, compression=None, ping_interval=None) as connection:
            count, start = 0, time.perf_counter()
            while (elapsed := time.perf_counter() - start) < seconds:
                await connection.send(message)
                await connection.recv()
                count += 1
            return count / elapsed

    return uvloop.run(main())


def _picows_client(url: str, message: str, seconds: float) -> float:
    import picows
    import uvloop

    payload = message.encode()

    async def main() -> float:
        loop = asyncio.get_running_loop()
        state: dict[str, Any] = {"count": 0, "done": loop.create_future()}
        start = time.perf_counter()

        class Pinger(picows.WSListener):
            def on_ws_connected(self, transport: Any) -> None:
                transport.send(picows.WSMsgType.TEXT, payload)

            def on_ws_frame(self, transport: Any, frame: Any) -> None:
                state["count"] += 1
                if time.perf_counter() - start < seconds:
                    transport.send(picows.WSMsgType.TEXT, payload)
                elif not state["done"].done():
                    state["done"].set_result(time.perf_counter() - start)

        transport, _listener = await picows.ws_connect(Pinger, url)
        elapsed = await state["done"]
        transport.send_close(picows.WSCloseCode.OK)
        transport.disconnect()
        return float(state["count"] / elapsed)

    return uvloop.run(main())


def _picows_loop_per_step_client(url: str, message: str, seconds: float) -> float:
    """picows driven the way a synchronous ``env.step`` would drive it: the loop runs only
    until the reply of each request arrives (``run_until_complete`` per round trip)."""
    import picows
    import uvloop

    payload = message.encode()
    loop = uvloop.new_event_loop()
    waiter: list[asyncio.Future[None]] = []

    class Receiver(picows.WSListener):
        def on_ws_frame(self, transport: Any, frame: Any) -> None:
            if waiter and not waiter[0].done():
                waiter[0].set_result(None)

    try:
        transport, _listener = loop.run_until_complete(picows.ws_connect(Receiver, url))
        count, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            waiter[:] = [loop.create_future()]
            transport.send(picows.WSMsgType.TEXT, payload)
            loop.run_until_complete(waiter[0])
            count += 1
        transport.send_close(picows.WSCloseCode.OK)
        transport.disconnect()
        return count / elapsed
    finally:
        loop.close()


_CLIENT_RUNNERS: dict[str, Callable[[str, str, float], float]] = {
    CLIENTS[0]: _blocking_client,
    CLIENTS[1]: _websockets_client,
    CLIENTS[2]: _picows_client,
    CLIENTS[3]: _picows_loop_per_step_client,
}


def _client_in_child(kind: str, url: str, message: str, seconds: float, out: Any) -> None:
    out.put(_CLIENT_RUNNERS[kind](url, message, seconds))


def installed(kind: str) -> bool:
    """Whether the library and loop ``kind`` (``"picows/uvloop"``) needs are importable."""
    library, loop = kind.split("/")
    names = [library.split("-")[0], loop]
    return all(name in ("asyncio", "blocking") or importlib.util.find_spec(name) for name in names)


def measure(seconds: float = 2.0, size: int = 64) -> list[EchoResult]:
    """Every installed server x client pair, each in its own process (module docstring)."""
    context = multiprocessing.get_context("spawn")
    message = '{"type":"step","data":{"action":0}}'.ljust(size)
    results = []
    clients = [kind for kind in CLIENTS if installed(kind)]
    for server_kind in (kind for kind in SERVERS if installed(kind)):
        (port,) = free_ports(1)
        ready = context.Event()
        server = context.Process(target=_run_server, args=(server_kind, port, ready), daemon=True)
        server.start()
        try:
            if not ready.wait(30):
                raise RuntimeError(f"echo server {server_kind!r} did not start in 30 s")
            url = f"ws://127.0.0.1:{port}"
            for client_kind in clients:
                out = context.Queue()
                client = context.Process(
                    target=_client_in_child, args=(client_kind, url, message, seconds, out)
                )
                client.start()
                rate = out.get(timeout=seconds + 60)
                client.join()
                results.append(EchoResult(server_kind, client_kind, rate))
        finally:
            server.kill()
            server.join()
    return results


def format_table(results: list[EchoResult]) -> str:
    """A Markdown table: one row per server, one column per client (round trips/s, µs)."""
    clients = [c for c in CLIENTS if any(r.client == c for r in results)]
    lines = ["| server \\ client | " + " | ".join(clients) + " |"]
    lines.append("|---|" + "---:|" * len(clients))
    for server_kind in (s for s in SERVERS if any(r.server == s for r in results)):
        cells = [
            f"{r.round_trips_per_s:,.0f}/s ({r.microseconds:.0f} µs)"
            for client_kind in clients
            for r in results
            if r.server == server_kind and r.client == client_kind
        ]
        lines.append(f"| {server_kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """``python -m benchmarks.ws_stack``: print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="per pair (default 2)")
    parser.add_argument("--size", type=int, default=64, help="frame bytes (default 64)")
    args = parser.parse_args(argv)
    print(format_table(measure(args.seconds, args.size)))


if __name__ == "__main__":
    main()
