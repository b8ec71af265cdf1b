"""The client's side of the WebSocket handshake, over a plain socket.

:func:`read_handshake` reads the server's response into ``websockets``' sans-I/O
:class:`~websockets.client.ClientProtocol` and says whether the bytes read end with it (then
a :class:`~openenv_gym.wire.data_frames.DataFrameReader` can read the frames after it);
:func:`raise_handshake_error` turns a refused or broken handshake into our typed errors
(a refused token, something that is not an OpenEnv server).

Example:
    >>> try:
    ...     raise_handshake_error(ValueError("boom"), "ws://127.0.0.1:1/ws", None)
    ... except ServerConnectionError as exc:
    ...     print(exc)
    the WebSocket handshake with ws://127.0.0.1:1/ws failed: boom
"""

from __future__ import annotations

import socket
import time
from typing import Final, NoReturn

from websockets.client import ClientProtocol
from websockets.exceptions import InvalidHandshake, InvalidStatus
from websockets.frames import Frame
from websockets.http11 import Response

from openenv_gym.client.http import resolve_token, upgrade_refusal
from openenv_gym.errors import NotAnOpenEnvServerError, ServerConnectionError
from openenv_gym.wire.data_frames import ends_at_handshake

#: The most bytes one ``recv`` of a connection reads (the handshake, then every frame).
RECV_CHUNK: Final = 256 * 1024


def read_handshake(
    sock: socket.socket, protocol: ClientProtocol, deadline: float, url: str, timeout: float
) -> tuple[Response | None, list[Frame], bool]:
    """The server's handshake response (``None`` when it was not valid HTTP: then
    ``protocol.handshake_exc`` says why), the frames that came right behind it, and whether
    the bytes read end with the response (no byte of a frame went to the protocol)."""
    ended = False
    received: list[bytes] = []
    while True:
        events = protocol.events_received()
        for k, event in enumerate(events):
            if isinstance(event, Response):
                frames = [e for e in events[k + 1 :] if isinstance(e, Frame)]
                return event, frames, ends_at_handshake(b"".join(received))
        if protocol.handshake_exc is not None:
            return None, [], False
        if ended:
            raise ServerConnectionError(
                f"{url} closed the connection during the WebSocket handshake; the server may "
                "be starting or restarting",
                url=url,
            )
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            data = sock.recv(RECV_CHUNK)
        except TimeoutError as exc:
            raise ServerConnectionError(
                f"{url} did not complete the WebSocket handshake within {timeout:g}s",
                url=url,
            ) from exc
        except OSError as exc:
            raise ServerConnectionError(
                f"the connection to {url} broke during the WebSocket handshake ({exc}); the "
                "server may be starting or restarting",
                url=url,
            ) from exc
        received.append(data)
        if data:
            protocol.receive_data(data)
        else:
            protocol.receive_eof()
            ended = True  # what the server sent is parsed once more, then it is over


def raise_handshake_error(exc: Exception | None, url: str, token: str | None) -> NoReturn:
    """Raise the typed error of a failed handshake (``protocol.handshake_exc``).

    Raises:
        AuthenticationError: The server refused the token (HTTP 401/403).
        ServerConnectionError: Another refusal, or the handshake broke.
        NotAnOpenEnvServerError: Something answered, but not with a WebSocket handshake.
    """
    if isinstance(exc, InvalidStatus):
        response = exc.response
        raise upgrade_refusal(
            url, response.status_code, response.headers, resolve_token(token)
        ) from exc
    if isinstance(exc, InvalidHandshake):
        raise NotAnOpenEnvServerError(
            f"{url} did not complete a WebSocket handshake ({exc}): this is not an OpenEnv "
            "server, or base_url is wrong.",
            url=url,
        ) from exc
    raise ServerConnectionError(f"the WebSocket handshake with {url} failed: {exc}", url=url)


__all__ = ["RECV_CHUNK", "raise_handshake_error", "read_handshake"]
