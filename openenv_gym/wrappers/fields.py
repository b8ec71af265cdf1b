"""Reading one scalar out of an observation or info dict, and checking it exists up front.

Reward-shaping terms and termination conditions name a field: a ``Dict`` entry or info key
(``"lives"``) or a flat index into a ``Box`` observation (``2`` = CartPole's pole angle).

Example:
    >>> import numpy as np
    >>> read_field(np.array([[1.0, 2.0], [3.0, 4.0]]), 2, "the observation")
    np.float64(3.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
from gymnasium import spaces

from openenv_gym.errors import WrapperConfigError

T = TypeVar("T")

__all__ = ["check_instances", "check_scalar_field", "read_field"]


def read_field(value: Any, key: str | int, where: str) -> Any:
    """``value[key]`` for a field name (mappings), or the ``key``-th flat entry of an array.

    Raises:
        KeyError: A named field is missing (the message names ``where``).
    """
    if isinstance(key, str):
        if not isinstance(value, Mapping) or key not in value:
            raise KeyError(f"{where} has no field {key!r}")
        return value[key]
    return np.asarray(value).reshape(-1)[key]


def check_scalar_field(space: spaces.Space[Any], key: str | int, path: str) -> None:
    """Check ``key`` names a scalar of ``space``; else :class:`WrapperConfigError` at ``path``."""
    if isinstance(key, str):
        if not isinstance(space, spaces.Dict) or key not in space.spaces:
            names = list(space.spaces) if isinstance(space, spaces.Dict) else []
            raise WrapperConfigError(
                f"{path}: observation field {key!r} does not exist; expected one of {names} "
                f"(the observation space is {space})",
                path=path,
            )
        sub = space.spaces[key]
        if not isinstance(sub, spaces.Discrete | spaces.Box) or (
            isinstance(sub, spaces.Box) and sub.shape not in ((), (1,))
        ):
            raise WrapperConfigError(
                f"{path}: observation field {key!r} is {sub}, expected a scalar "
                "(Discrete, or a Box of shape () or (1,))",
                path=path,
            )
        return
    if not isinstance(space, spaces.Box | spaces.Discrete):
        raise WrapperConfigError(
            f"{path}: an integer index needs a Box or Discrete observation space, got {space}; "
            "use a field name for Dict observations",
            path=path,
        )
    size = int(np.prod(space.shape)) if isinstance(space, spaces.Box) else 1
    if not -size <= key < size:
        raise WrapperConfigError(
            f"{path}: index {key} is out of range for an observation of {size} value(s)",
            path=path,
        )


def check_instances(items: Sequence[T], kind: type[Any], name: str, expected: str) -> list[T]:
    """``items`` as a list, each a ``kind``; else :class:`WrapperConfigError` at ``name[i]``.

    ``expected`` names what fits (``"Scale, Clip or a subclass"``).
    """
    for index, item in enumerate(items):
        if not isinstance(item, kind):
            raise WrapperConfigError(
                f"{name}[{index}] is {item!r}, expected a {kind.__name__} ({expected})",
                path=f"{name}[{index}]",
            )
    return list(items)
