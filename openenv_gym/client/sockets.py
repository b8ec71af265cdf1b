"""Opening the socket under a WebSocket connection: TCP or a Unix socket, through an HTTP
proxy (``HTTP CONNECT``) where the environment configures one, then TLS for ``wss://``.

Every failure is a :class:`~openenv_gym.errors.ServerConnectionError` naming the URL and
what to try. Loopback URLs and Unix sockets never use a proxy.
"""

from __future__ import annotations

import base64
import socket
import ssl
import time

from websockets.exceptions import InvalidProxy
from websockets.proxy import Proxy, get_proxy, parse_proxy
from websockets.uri import WebSocketURI

from openenv_gym.client.http import is_loopback_url
from openenv_gym.errors import ServerConnectionError


def open_socket(
    uri: WebSocketURI, url: str, *, unix_path: str | None, timeout: float
) -> socket.socket:
    """A connected socket for ``uri`` (``url`` names it in errors), within ``timeout``
    seconds: through ``unix_path`` when given, else TCP, through the configured HTTP proxy
    for a host that is not loopback, with TLS for ``wss://``.

    Raises:
        ServerConnectionError: It cannot be opened (in time).
    """
    deadline = time.monotonic() + timeout
    proxy = None if unix_path is not None or is_loopback_url(url) else proxy_for(uri, url)
    if proxy is None:
        sock = _connect(uri.host, uri.port, unix_path, timeout, url)
    else:
        sock = _connect(proxy.host, proxy.port, None, timeout, url)
    try:
        if proxy is not None:
            _tunnel(sock, proxy, f"{uri.host}:{uri.port}", deadline, url)
        if uri.secure:
            sock = _start_tls(sock, uri.host, url)
    except BaseException:
        sock.close()
        raise
    return sock


def _connect(
    host: str, port: int, unix_path: str | None, timeout: float, url: str
) -> socket.socket:
    try:
        if unix_path is not None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            try:
                sock.connect(unix_path)
            except BaseException:
                sock.close()
                raise
        else:
            sock = socket.create_connection((host, port), timeout=timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except TimeoutError as exc:
        raise ServerConnectionError(
            f"could not open {url} within {timeout:g}s. Check that the server is up and "
            "reachable, or raise connect_timeout.",
            url=url,
        ) from exc
    except OSError as exc:
        raise ServerConnectionError(
            f"could not connect to {url}: {exc.strerror or exc}. Is an OpenEnv server running "
            "there? Start one with `openenv-gym serve ...`, or leave base_url unset to let "
            "openenv-gym start an embedded server.",
            url=url,
        ) from exc
    return sock


def proxy_for(uri: WebSocketURI, url: str) -> Proxy | None:
    """The HTTP proxy the environment configures for ``uri`` (``HTTPS_PROXY``, ...).

    Raises:
        ServerConnectionError: The proxy is not an ``http://`` one (SOCKS, or TLS to the
            proxy itself), which this client does not speak.
    """
    address = get_proxy(uri)
    if address is None:
        return None
    try:
        proxy = parse_proxy(address)
    except InvalidProxy as exc:
        raise ServerConnectionError(
            f"the proxy configured for {url} is not valid ({exc}); fix HTTP(S)_PROXY / "
            "ALL_PROXY, or add the host to NO_PROXY",
            url=url,
        ) from exc
    if proxy.scheme != "http":
        raise ServerConnectionError(
            f"the proxy configured for {url} is {address!r}; openenv-gym reaches servers "
            "through http:// proxies (HTTP CONNECT) only. Use an http:// proxy, or add the "
            "host to NO_PROXY.",
            url=url,
        )
    return proxy


def _tunnel(sock: socket.socket, proxy: Proxy, target: str, deadline: float, url: str) -> None:
    """Ask the HTTP proxy on ``sock`` for a tunnel to ``target`` (``host:port``).

    Raises:
        ServerConnectionError: The proxy refused, or did not answer in time.
    """
    lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}"]
    if proxy.user_info is not None:
        credentials = base64.b64encode(":".join(proxy.user_info).encode()).decode()
        lines.append(f"Proxy-Authorization: Basic {credentials}")
    response = b""
    try:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        while b"\r\n\r\n" not in response and len(response) < 65536:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            data = sock.recv(4096)  # the proxy says nothing after its headers until we do
            if not data:
                break
            response += data
    except OSError as exc:
        sock.close()
        raise ServerConnectionError(
            f"the HTTP proxy {proxy.host}:{proxy.port} did not open a tunnel to {url} ({exc})",
            url=url,
        ) from exc
    status = response.split(b"\r\n", 1)[0].decode("latin-1")
    parts = status.split()
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or parts[1] != "200":
        sock.close()
        raise ServerConnectionError(
            f"the HTTP proxy {proxy.host}:{proxy.port} refused a tunnel to {url}: "
            f"{status or 'no answer'!r}",
            url=url,
        )


def _start_tls(sock: socket.socket, host: str, url: str) -> ssl.SSLSocket:
    """TLS over ``sock`` for a ``wss://`` URL, checked against the system's trusted
    certificates (``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` name others)."""
    try:
        return ssl.create_default_context().wrap_socket(sock, server_hostname=host)
    except ssl.SSLCertVerificationError as exc:
        sock.close()
        raise ServerConnectionError(
            f"the TLS certificate of {url} was refused ({exc.verify_message}). If the server "
            "uses a certificate of your own authority, point SSL_CERT_FILE at it.",
            url=url,
        ) from exc
    except (OSError, ValueError) as exc:
        sock.close()
        raise ServerConnectionError(
            f"the TLS handshake with {url} failed ({exc}); is the server serving wss://?",
            url=url,
        ) from exc


__all__ = ["open_socket", "proxy_for"]
