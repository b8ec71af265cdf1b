"""argparse ``type=`` converters (bounded numbers, JSON objects), shared by every command.

Each converter raises :class:`argparse.ArgumentTypeError`, so argparse prints one usage line
naming the option and exits with code 2.

Example:
    >>> port = int_argument("a port number", minimum=0, maximum=65535, bound="a port in 0..65535")
    >>> port("8000")
    8000
    >>> positive_seconds("0.5")
    0.5
    >>> seconds_or_off("0")
    0.0
    >>> json_object('{"max_episode_steps": 200}')
    {'max_episode_steps': 200}
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any


def int_argument(
    what: str, *, minimum: int, maximum: int | None = None, bound: str
) -> Callable[[str], int]:
    """A converter to ``int`` in ``[minimum, maximum]``.

    Args:
        what: What an unparsable value should have been (``"a port number"``).
        minimum: The smallest accepted value.
        maximum: The largest accepted value (``None``: no limit).
        bound: What an out-of-range value should have been (``"a port in 0..65535"``).
    """

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"expected {bound}, got {text!r}")
        return value

    return convert


def float_argument(
    what: str,
    *,
    minimum: float,
    maximum: float | None = None,
    exclusive_minimum: bool = False,
    bound: str,
) -> Callable[[str], float]:
    """A converter to ``float`` in ``[minimum, maximum]`` (``(minimum, ...`` when
    ``exclusive_minimum``); NaN is always refused."""

    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        ok = value > minimum if exclusive_minimum else value >= minimum
        if maximum is not None:
            ok = ok and value <= maximum
        if not ok:  # also NaN, which compares false
            raise argparse.ArgumentTypeError(f"expected {bound}, got {text!r}")
        return value

    return convert


#: ``1, 2, ...``
positive_int = int_argument("a positive integer", minimum=1, bound="a positive integer")
#: ``0..65535`` (0: a free port).
port_number = int_argument("a port number", minimum=0, maximum=65535, bound="a port in 0..65535")
#: Seconds, ``> 0``.
positive_seconds = float_argument(
    "a number of seconds", minimum=0.0, exclusive_minimum=True, bound="a positive number of seconds"
)
#: Seconds, ``>= 0`` (``0``: off, e.g. ``--ping-interval 0``).
seconds_or_off = float_argument(
    "a number of seconds", minimum=0.0, bound="a number of seconds >= 0 (0: off)"
)
#: Microseconds, ``0..100000`` (``--busy-poll-us``).
microseconds = int_argument(
    "a number of microseconds", minimum=0, maximum=100_000, bound="microseconds in 0..100000"
)
#: ``[0, 1]``.
probability = float_argument(
    "a probability", minimum=0.0, maximum=1.0, bound="a probability in [0, 1]"
)


def json_object(text: str) -> dict[str, Any]:
    """A converter of a JSON object (``'{"render_mode": null}'``) to a ``dict``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(
            f"expected a JSON object, e.g. '{{\"render_mode\": null}}', got {text!r} ({exc.msg})"
        ) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f"expected a JSON object, got {type(value).__name__}: {text!r}"
        )
    return value


__all__ = [
    "float_argument",
    "int_argument",
    "json_object",
    "port_number",
    "positive_int",
    "positive_seconds",
    "probability",
    "seconds_or_off",
]
