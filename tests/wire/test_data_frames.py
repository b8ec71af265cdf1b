"""DataFrameReader: the same events and answers as ``websockets``' own parser, byte for byte.

Each test builds a real byte stream with ``websockets``' protocols (a client's masked
frames, a server's plain ones), then feeds it to a protocol behind a
:class:`~openenv_gym.wire.data_frames.DataFrameReader` and to a plain protocol, in the same
chunks, and compares what comes out: the events, the bytes the protocol answers (pongs, close
frames) and its state.
"""

from __future__ import annotations

import random
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.protocol import Protocol, State
from websockets.server import ServerProtocol
from websockets.uri import parse_uri

from openenv_gym.client.blocking import BlockingConnection
from openenv_gym.client.options import ConnectOptions
from openenv_gym.wire.data_frames import DataFrameReader, ends_at_handshake, unmask

MAX_SIZE = 4096


def open_pair(max_size: int = MAX_SIZE) -> tuple[ClientProtocol, ServerProtocol]:
    """A client and a server protocol, handshake done in memory."""
    client = ClientProtocol(parse_uri("ws://127.0.0.1:1/ws"), max_size=max_size)
    server = ServerProtocol(max_size=max_size)
    client.send_request(client.connect())
    server.receive_data(b"".join(client.data_to_send()))
    (request,) = server.events_received()
    assert isinstance(request, Request)
    server.send_response(server.accept(request))
    client.receive_data(b"".join(server.data_to_send()))
    client.events_received()
    assert client.state is State.OPEN
    assert server.state is State.OPEN
    return client, server


def describe(events: Sequence[Any]) -> list[tuple[Any, ...]]:
    return [
        (e.opcode, bytes(e.data), e.fin) if isinstance(e, Frame) else (type(e).__name__,)
        for e in events
    ]


def read_both(
    stream: bytes,
    chunks: Sequence[int],
    make: Callable[[], Protocol],
    *,
    masked: bool,
    max_size: int = MAX_SIZE,
) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Feed ``stream`` cut at ``chunks`` to a reader-fronted and to a plain protocol: what
    each gave (events, answered bytes, state, close frame sent). A client masks its
    answers with a random key: their length and first byte stand for them."""
    outcomes = []
    for fronted in (True, False):
        protocol = make()
        reader = DataFrameReader(protocol, masked=masked, max_size=max_size) if fronted else None
        events: list[Any] = []
        start = 0
        for end in [*chunks, len(stream)]:
            piece = stream[start:end]
            start = end
            if not piece:
                continue
            if reader is not None:
                events += reader.receive_data(piece)
            else:
                protocol.receive_data(piece)
                events += protocol.events_received()
        answer: Any = b"".join(protocol.data_to_send())
        if not masked:
            answer = (len(answer), answer[:1])
        outcomes.append((describe(events), answer, protocol.state, protocol.close_sent))
    return outcomes[0], outcomes[1]


def client_stream(build: Callable[[ClientProtocol], None]) -> tuple[bytes, Callable[[], Protocol]]:
    """The bytes a client protocol sends for ``build``, and a maker of OPEN server protocols."""
    client, _ = open_pair()
    build(client)
    return b"".join(client.data_to_send()), lambda: open_pair()[1]


def cuts(size: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return sorted(rng.sample(range(1, size), min(size - 1, rng.randint(1, 12))))


def mixed_traffic(client: ClientProtocol) -> None:
    client.send_text(b'{"type":"step","data":{"action":1}}')
    client.send_binary(bytes(range(256)) * 3)  # a 16-bit length
    client.send_ping(b"are you there")
    client.send_text(b"frag", fin=False)  # a fragmented message around a ping
    client.send_ping(b"")
    client.send_continuation(b"mented", fin=True)
    client.send_text("é".encode())
    client.send_binary(b"")


@pytest.mark.parametrize("seed", range(12))
def test_client_frames_read_as_the_protocol_reads_them(seed: int) -> None:
    stream, make = client_stream(mixed_traffic)
    fronted, plain = read_both(stream, cuts(len(stream), seed), make, masked=True)
    assert fronted == plain
    texts = [data for opcode, data, _ in fronted[0] if opcode is Opcode.TEXT]
    assert b'{"type":"step","data":{"action":1}}' in texts
    assert fronted[1]  # the pongs went out


def test_byte_by_byte() -> None:
    stream, make = client_stream(mixed_traffic)
    fronted, plain = read_both(stream, list(range(1, len(stream))), make, masked=True)
    assert fronted == plain


def test_server_frames_unmasked() -> None:
    _, server = open_pair()
    server.send_binary(b"\x00" * 70_000)  # a 64-bit length
    server.send_text(b"done")
    server.send_ping(b"p")
    stream = b"".join(server.data_to_send())

    def make() -> Protocol:
        return open_pair(max_size=100_000)[0]

    for chunks in ([], cuts(len(stream), 1), [1, 2, 3, 10, 65_000]):
        fronted, plain = read_both(stream, chunks, make, masked=False, max_size=100_000)
        assert fronted == plain
        datas = [d for opcode, d, _ in fronted[0] if opcode is not Opcode.PING]
        assert datas == [b"\x00" * 70_000, b"done"]
        assert fronted[1][0] > 0  # the pong


@pytest.mark.parametrize(
    ("name", "build"),
    [
        ("too large for max_size", lambda c: c.send_binary(b"x" * (MAX_SIZE + 1))),
        ("close", lambda c: c.send_close(1000, "bye")),
    ],
)
def test_bad_or_closing_frames_go_to_the_protocol(name: str, build: Any) -> None:
    """The protocol fails (or closes) the connection exactly as without the reader."""

    def before_then(client: ClientProtocol) -> None:
        client.send_text(b"before")
        build(client)

    stream, make = client_stream(before_then)
    stream += client_stream(lambda c: c.send_text(b"after"))[0]  # read by nobody
    for chunks in ([], [3, 7], list(range(1, len(stream), 5))):
        fronted, plain = read_both(stream, chunks, make, masked=True)
        assert fronted == plain, name
        assert fronted[2] is not State.OPEN, name
        assert fronted[0][0] == (Opcode.TEXT, b"before", True)


def test_text_that_is_not_utf8_comes_as_the_protocol_gives_it() -> None:
    """The protocol does not decode text frames (their reader does): neither does the reader."""
    stream, make = client_stream(lambda c: c.send_text(b"\xff\xfe"))
    fronted, plain = read_both(stream, [], make, masked=True)
    assert fronted == plain
    assert fronted[0] == [(Opcode.TEXT, b"\xff\xfe", True)]


def test_unmasked_frame_from_a_client_is_refused_as_before() -> None:
    _, server = open_pair()
    server.send_text(b"no mask")  # a server's frame: unmasked, which a server must refuse
    stream = b"".join(server.data_to_send())
    fronted, plain = read_both(stream, [], lambda: open_pair()[1], masked=True)
    assert fronted == plain
    assert fronted[0] == []
    assert fronted[3] is not None
    assert fronted[3].code == 1002


def test_end_of_stream_inside_a_frame() -> None:
    stream, _ = client_stream(lambda c: c.send_text(b"cut short"))
    for fronted in (True, False):
        _, server = open_pair()
        if fronted:
            reader = DataFrameReader(server, masked=True, max_size=MAX_SIZE)
            assert reader.receive_data(stream[:-3]) == []
            events = reader.receive_eof()
        else:
            server.receive_data(stream[:-3])
            server.receive_eof()
            events = server.events_received()
        assert events == []
        assert server.state is State.CLOSED


def test_unmask_both_ways() -> None:
    for size in (0, 1, 3, 4, 5, 4096, 4097, 100_003):
        payload = random.Random(size).randbytes(size)
        assert unmask(unmask(payload, b"\x01\x02\x03\x04"), b"\x01\x02\x03\x04") == payload
    assert unmask(b"\x00\x00\x00\x00\x00", b"abcd") == b"abcda"


def test_ends_at_handshake() -> None:
    head = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"
    assert ends_at_handshake(head)
    assert not ends_at_handshake(head + b"\x81")
    assert not ends_at_handshake(head[:-2])


def test_frame_glued_to_the_handshake_is_read() -> None:
    """A server that sends a frame in the same segment as its 101 response: the client
    reads it (the protocol reads that connection alone)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    received: list[bytes] = []

    def serve() -> None:
        conn, _ = listener.accept()
        server = ServerProtocol()
        while not (events := server.events_received()):
            server.receive_data(conn.recv(65536))
        assert isinstance(events[0], Request)
        server.send_response(server.accept(events[0]))
        server.send_text(b"hello first")
        conn.sendall(b"".join(server.data_to_send()))  # response and frame in one write
        with conn:
            while server.state is State.OPEN and (data := conn.recv(65536)):
                server.receive_data(data)
                for event in server.events_received():
                    if isinstance(event, Frame) and event.opcode is Opcode.TEXT:
                        received.append(bytes(event.data))
                        server.send_text(b"echo " + event.data)
                conn.sendall(b"".join(server.data_to_send()))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        connection = BlockingConnection.open(f"ws://127.0.0.1:{port}/ws", ConnectOptions())
        try:
            assert connection.receive() == "hello first"
            connection.send("ping")
            assert connection.receive() == "echo ping"
        finally:
            connection.close()
        thread.join(5)
        assert received == [b"ping"]
    finally:
        listener.close()
