"""Link profiles: where the suite's servers stand, and what lies between them and the client.

Every published figure used to come from one place OpenEnv servers rarely live: the same host,
where observations travel through shared memory. A :class:`LinkProfile` puts the servers "on
another host" instead:

* ``loopback``: the same host, as before (shared memory and every same-host shortcut apply);
* ``docker``: the servers run in containers of our images, started by the docker provider
  (what ``openenv/Docker-v0`` uses) and published on 127.0.0.1: the container boundary
  (docker-proxy, the container's own ``/dev/shm``) is the link;
* ``lan``: 1 Gbit/s, 0.5 ms round trip;
* ``wan``: 100 Mbit/s, 20 ms round trip;
* ``tunnel``: the ``wan`` link reached the way ``ssh -L`` or ``kubectl port-forward`` reach a
  server: the client connects to 127.0.0.1 (the proxy's near end), so nothing about the
  address tells it that a slow link lies behind;
* custom values: ``rtt_ms=20,mbit=100`` (or ``delay_ms=10,mbit=100``: ``delay_ms`` is the
  one-way delay, added in each direction, as Linux ``netem``'s ``delay`` is).

The emulated profiles start each server with its own private ``/dev/shm`` (see
:mod:`openenv_gym.bench.link_server`) and reach it through a
:class:`~openenv_gym.bench.link_proxy.LinkProxy` that holds every chunk for the one-way delay
and paces the bytes to the bandwidth, per direction.

Each profile knows its physical bounds: ``N / RTT`` steps/s when every vector step costs one
round trip, and ``bandwidth / bytes per step`` when every step must carry its observation.

Example:
    >>> wan = parse_link("wan")
    >>> wan.rtt_ms, wan.mbit, wan.one_way_delay
    (20.0, 100.0, 0.01)
    >>> round(wan.round_trip_bound(16))
    800
    >>> round(wan.bandwidth_bound(100_800))  # env steps/s at one raw Pong frame per step
    124
    >>> parse_link("rtt_ms=5,mbit=10").name
    'rtt_ms=5,mbit=10'
    >>> parse_link("delay_ms=5").rtt_ms
    10.0
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Final, Literal

from openenv_gym.errors import LinkProfileError

#: Where a profile's servers come from.
ServerSource = Literal["local", "docker"]


@dataclass(frozen=True)
class LinkProfile:
    """One link between the client and the servers.

    Attributes:
        name: The name given to ``--link`` (``wan``, or the custom text).
        rtt_ms: The round-trip delay the link adds, in milliseconds.
        mbit: The bandwidth per direction in Mbit/s (``None``: not capped).
        emulated: ``True`` when a :class:`~openenv_gym.bench.link_proxy.LinkProxy` stands
            between client and servers, and the servers get a private ``/dev/shm``.
        server_source: ``"local"`` (child processes) or ``"docker"`` (``openenv/Docker-v0``).
        tunnel: The link stands for a tunnel (``ssh -L``, ``kubectl port-forward``): its near
            end is on 127.0.0.1, as the proxy of every emulated profile is; said in the
            report, and the tunnel's targets apply.
    """

    name: str
    rtt_ms: float = 0.0
    mbit: float | None = None
    emulated: bool = True
    server_source: ServerSource = "local"
    tunnel: bool = False

    @property
    def proxied(self) -> bool:
        """``True`` when a proxy must add a delay or a cap (``rtt_ms=0`` alone needs none: the
        servers just get a private ``/dev/shm``, the same host without shared memory)."""
        return self.emulated and (self.rtt_ms > 0 or self.mbit is not None)

    @property
    def one_way_delay(self) -> float:
        """Seconds each chunk is held in each direction (half the round trip)."""
        return self.rtt_ms / 2000.0

    @property
    def bytes_per_s(self) -> float | None:
        """The bandwidth per direction in bytes/s (``None``: not capped)."""
        return None if self.mbit is None else self.mbit * 1e6 / 8

    def round_trip_bound(self, num_envs: int) -> float:
        """Steps/s when each vector step of ``num_envs`` costs one round trip (``inf`` at 0 ms)."""
        return math.inf if self.rtt_ms <= 0 else num_envs * 1000.0 / self.rtt_ms

    def bandwidth_bound(self, bytes_per_step: float) -> float:
        """Env steps/s the bandwidth carries at ``bytes_per_step`` (``inf`` when not capped)."""
        rate = self.bytes_per_s
        return math.inf if rate is None or bytes_per_step <= 0 else rate / bytes_per_step

    def bounds(self, num_envs: int, bytes_per_step: float) -> str:
        """The link's limits for one row, as text: ``N/RTT 800/s, bandwidth 124/s``."""
        words = []
        if self.rtt_ms > 0:
            words.append(f"N/RTT {self.round_trip_bound(num_envs):,.0f}/s")
        if self.mbit is not None:
            words.append(
                f"bandwidth/({bytes_per_step:,.0f} B/step) "
                f"{self.bandwidth_bound(bytes_per_step):,.0f}/s"
            )
        return ", ".join(words) or "no link limits"

    def describe(self) -> str:
        """A one-line description for the report."""
        if not self.emulated:
            if self.server_source == "docker":
                return (
                    f"{self.name}: servers in Docker containers of our images (the docker "
                    "provider of openenv/Docker-v0), published on 127.0.0.1 through "
                    "docker-proxy; their own /dev/shm, so no shared memory"
                )
            return f"{self.name}: servers on this host, every same-host shortcut applies"
        if not self.proxied:
            return f"{self.name}: servers on this host with a private /dev/shm (no shared memory)"
        rate = "unlimited" if self.mbit is None else f"{self.mbit:g} Mbit/s per direction"
        if self.tunnel:
            return (
                f"{self.name}: {rate}, {self.rtt_ms:g} ms round trip behind a tunnel whose near "
                "end is 127.0.0.1 (as ssh -L or kubectl port-forward: the client sees a loopback "
                "peer); servers with a private /dev/shm, as on another host"
            )
        return (
            f"{self.name}: {rate}, {self.rtt_ms:g} ms round trip (a userspace proxy on "
            "127.0.0.1); servers with a private /dev/shm, as on another host"
        )


#: The named profiles of ``--link``.
PROFILES: Final[dict[str, LinkProfile]] = {
    "loopback": LinkProfile("loopback", emulated=False),
    "docker": LinkProfile("docker", emulated=False, server_source="docker"),
    "lan": LinkProfile("lan", rtt_ms=0.5, mbit=1000.0),
    "wan": LinkProfile("wan", rtt_ms=20.0, mbit=100.0),
    "tunnel": LinkProfile("tunnel", rtt_ms=20.0, mbit=100.0, tunnel=True),
}

_CUSTOM_KEYS: Final = ("rtt_ms", "delay_ms", "mbit")
_USAGE: Final = (
    f"one of {', '.join(PROFILES)} or custom values like rtt_ms=20,mbit=100 (keys: "
    "rtt_ms: round trip in ms; delay_ms: one-way delay in ms, added each way; mbit: "
    "bandwidth per direction in Mbit/s, omit for no cap)"
)


def _number(key: str, text: str, whole: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (key == "mbit" and value == 0):
        bound = "a positive number" if key == "mbit" else "a number >= 0"
        raise LinkProfileError(
            f"--link {whole!r}: {key} must be {bound}, got {text!r}; e.g. --link rtt_ms=20,mbit=100"
        )
    return value


def parse_link(text: str) -> LinkProfile:
    """The profile named by ``text``: a name from :data:`PROFILES` or ``key=value`` pairs.

    Raises:
        LinkProfileError: ``text`` is neither (the message lists what is accepted).
    """
    name = text.strip()
    if name.lower() in PROFILES:
        return PROFILES[name.lower()]
    values: dict[str, float] = {}
    for part in (piece.strip() for piece in name.split(",")):
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or key not in _CUSTOM_KEYS or key in values:
            raise LinkProfileError(f"--link {text!r}: expected {_USAGE}")
        values[key] = _number(key, value.strip(), text)
    if "rtt_ms" in values and "delay_ms" in values:
        raise LinkProfileError(
            f"--link {text!r}: give rtt_ms or delay_ms, not both (rtt_ms = 2 x delay_ms)"
        )
    rtt = values.get("rtt_ms", 2 * values.get("delay_ms", 0.0))
    return LinkProfile(name, rtt_ms=rtt, mbit=values.get("mbit"))


def link_argument(text: str) -> LinkProfile:
    """An argparse type for ``--link``: :func:`parse_link`, its error as a usage error."""
    try:
        return parse_link(text)
    except LinkProfileError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
