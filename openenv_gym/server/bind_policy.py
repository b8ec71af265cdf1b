"""Who may reach a server: listening beyond loopback needs a token, or an explicit opt-out.

A server runs arbitrary environments for whoever connects (and ``/state`` builds one per
request the first time). On ``127.0.0.1``/``::1``/``localhost`` only this machine can reach
it; on any other address (``0.0.0.0``, a LAN address, a host name) anyone on the network
can, so ``openenv-gym serve`` refuses such an address without a bearer token unless the user
says ``--insecure``, and then warns. An empty token (``--token ""`` or ``OPENENV_TOKEN=``) is
always an error: it looks like protection and checks nothing.

Example:
    >>> check_bind("127.0.0.1", None, insecure=False)  # loopback: no token needed
    >>> check_bind("0.0.0.0", "s3cret", insecure=False)
    >>> check_bind("0.0.0.0", None, insecure=False)
    Traceback (most recent call last):
    ...
    openenv_gym.errors.InsecureBindError: refusing to listen on 0.0.0.0 without a token: ...
"""

from __future__ import annotations

import ipaddress
import logging
import socket

from openenv_gym.errors import InsecureBindError

logger = logging.getLogger("openenv_gym.server")


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (an address or a name) reaches this machine only.

    A name counts when every address it resolves to is a loopback address; a name that does
    not resolve does not count.
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return False
    addresses = {info[4][0] for info in infos}
    return bool(addresses) and all(
        ipaddress.ip_address(str(address).split("%")[0]).is_loopback for address in addresses
    )


def check_token(token: str | None) -> None:
    """Reject an empty token.

    Raises:
        InsecureBindError: ``token`` is empty or blank.
    """
    if token is not None and not token.strip():
        raise InsecureBindError(
            "the token is empty, which would disable authentication while looking like it is "
            "on. Set a real one (e.g. OPENENV_TOKEN=$(python -c 'import secrets; "
            "print(secrets.token_urlsafe(24))')), or unset OPENENV_TOKEN and drop --token to "
            "serve without a token on 127.0.0.1."
        )


def check_bind(host: str, token: str | None, *, insecure: bool) -> None:
    """Refuse to listen on a non-loopback ``host`` without a token unless ``insecure``.

    With ``insecure`` such a bind is allowed and logged as a WARNING.

    Raises:
        InsecureBindError: The token is empty, or ``host`` is not loopback, there is no
            token and ``insecure`` is false.
    """
    check_token(token)
    if token is not None or is_loopback_host(host):
        return
    if not insecure:
        raise InsecureBindError(
            f"refusing to listen on {host} without a token: anyone who can reach this "
            "machine could open sessions and run environments on it. Set a token with "
            "OPENENV_TOKEN=... (clients send the same variable) or --token, or pass "
            "--insecure to serve without one (e.g. inside a private network)."
        )
    logger.warning(
        "listening on %s without a token (--insecure): anyone who can reach this machine can "
        "open sessions on this server",
        host,
    )


__all__ = ["check_bind", "check_token", "is_loopback_host"]
