"""Spaces from the data where the schema leaves them open.

A real OpenEnv schema often leaves shapes open: ``list[float]`` of unstated length,
``dict[str, list[float]]`` whose keys depend on the task, an ``int`` action without bounds.
:mod:`openenv_gym.spaces.schema` then takes them from one sample of the data:

* an observation array of numbers: its shape in the reset observation (``Box``);
* an observation ``dict[str, X]``: its keys in the reset observation (``Dict``);
* a list named like ``legal_actions`` / ``legal_moves`` / ``valid_actions``: it changes
  length as the game goes on, so it goes to ``info`` and gives the action mask;
* other arrays without a fixed length whose items are not numbers: ``info``;
* an ``int`` action without bounds: ``Discrete`` over the range the server declares (the
  state's ``action_spec`` ``minimum``/``maximum``, or a ``num_actions`` field); the legal
  actions of a reset are a sample, not the game's range, so without a declaration the
  mapping refuses and names ``action_field_spaces``, showing what it observed;
* a numeric action array of unstated length: the shape (and bounds) of the state's
  ``action_spec`` (``{"shape": [6], "minimum": [...], "maximum": [...]}``, as the
  official dm_control env publishes).

Each inference is recorded as an :class:`Inference` (what was taken, and the keyword that
pins it), logged once, and shown by ``openenv-gym check``.

Example:
    >>> is_legal_actions_name("legal_actions"), is_legal_actions_name("board")
    (True, False)
    >>> numeric_shape([[1.0, 2.0], [3.0, 4.0]])
    (2, 2)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeGuard

import numpy as np
from gymnasium import spaces

from openenv_gym.spaces.problems import Option

_LEGAL_NAME: Final = re.compile(
    r"^(legal|valid|available|allowed|possible)_?(actions?|moves?|action_ids?)$", re.IGNORECASE
)
#: The sentinel of :func:`sample_at` for a value the sample does not hold.
MISSING: Final = object()


@dataclass(frozen=True)
class Inference:
    """A space taken from the data.

    Attributes:
        role: ``"observation"`` or ``"action"``.
        path: The field's dotted path.
        option: The keyword (codec spelling) that pins it: ``"field_shapes"`` or
            ``"field_spaces"``.
        value: The pinning value as Python source, e.g. ``"(50,)"``.
        source: Where it came from, e.g. ``"the reset observation"``.
    """

    role: str
    path: str
    option: Option
    value: str
    source: str

    def describe(self) -> str:
        """``"observation 'info_state': field_shapes (50,) from the reset observation"``."""
        return f"{self.role} {self.path!r}: {self.value} from {self.source}"


@dataclass(frozen=True)
class ActionHints:
    """What the data says about open action fields.

    Attributes:
        legal: The legal actions of the reset observation (integers), if it lists them:
            observed, never taken as the action range.
        spec: The state's ``action_spec`` mapping (``shape``, ``minimum``, ``maximum``).
        count: The number of actions the server declares (a ``num_actions``,
            ``num_distinct_actions`` or ``action_space_size`` field of the state or of the
            reset observation's ``metadata``), if any.
        state: The session's state fields at the probe (what the server says it is).
        known: Field-specific action counts from a source other than the server's
            declaration (a catalog profile): ``path -> (count, source)``; they come first.
    """

    legal: Sequence[Any] | None = None
    spec: Mapping[str, Any] | None = None
    count: int | None = None
    state: Mapping[str, Any] | None = None
    known: Mapping[str, tuple[int, str]] | None = None

    def range_for(self, path: str) -> tuple[int, int, str] | None:
        """The integer range of the action field ``path``: a :attr:`known` count, else
        :meth:`declared_range`.

        Example:
            >>> ActionHints(known={"column": (7, "a profile")}).range_for("column")
            (0, 6, 'a profile')
        """
        if self.known and path in self.known:
            count, source = self.known[path]
            return 0, count - 1, source
        return self.declared_range()

    def declared_range(self) -> tuple[int, int, str] | None:
        """The integer action range the server declares, ``(low, high, where)``: the
        ``action_spec``'s integer ``minimum``/``maximum`` (or ``num_values``), else
        :attr:`count` as ``0 .. count - 1``; ``None`` when it declares none.

        Example:
            >>> ActionHints(spec={"minimum": 0, "maximum": 8}).declared_range()
            (0, 8, "the state's action_spec")
            >>> ActionHints(legal=[0, 1, 2]).declared_range() is None
            True
        """
        spec = self.spec if isinstance(self.spec, Mapping) else {}
        low, high = spec.get("minimum"), spec.get("maximum")
        if _is_int(low) and _is_int(high) and low <= high:
            return int(low), int(high), "the state's action_spec"
        values = spec.get("num_values")
        if _is_int(values) and values > 0:
            return 0, int(values) - 1, "the state's action_spec"
        if self.count is not None and self.count > 0:
            return 0, self.count - 1, "the server's declared number of actions"
        return None


#: Fields in which a server may declare its number of (integer) actions.
ACTION_COUNT_FIELDS: Final = ("num_actions", "num_distinct_actions", "action_space_size")


def declared_count(*places: Any) -> int | None:
    """The first positive integer under one of :data:`ACTION_COUNT_FIELDS` in ``places``."""
    for place in places:
        if isinstance(place, Mapping):
            for name in ACTION_COUNT_FIELDS:
                if _is_int(place.get(name)) and place[name] > 0:
                    return int(place[name])
    return None


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def is_legal_actions_name(path: str) -> bool:
    """Whether a field's last name says it lists the legal actions or moves."""
    return bool(_LEGAL_NAME.match(path.rsplit(".", 1)[-1]))


def sample_at(sample: Any, path: str) -> Any:
    """The value at dotted ``path`` in ``sample``, or :data:`MISSING`."""
    if not path:
        return sample
    value = sample
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return MISSING
        value = value[part]
    return value


def numeric_shape(value: Any) -> tuple[int, ...] | None:
    """The shape of a regular (nested) list of numbers, else ``None``."""
    if not isinstance(value, list | tuple):
        return None
    try:
        array = np.asarray(value)
    except (ValueError, TypeError):
        return None
    if array.dtype.kind not in "biuf" or array.size == 0:
        return None
    return tuple(int(n) for n in array.shape)


def spec_shape(spec: Mapping[str, Any] | None) -> tuple[int, ...] | None:
    """The ``shape`` of an ``action_spec`` mapping, if it holds a valid one."""
    if not isinstance(spec, Mapping):
        return None
    shape = spec.get("shape")
    if not isinstance(shape, list | tuple) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
    ):
        return None
    return tuple(shape)


def spec_bounds(
    spec: Mapping[str, Any], shape: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray] | None:
    """The ``minimum``/``maximum`` of an ``action_spec`` broadcast to ``shape``, if given."""
    try:
        low = np.broadcast_to(np.asarray(spec["minimum"], dtype=np.float64), shape)
        high = np.broadcast_to(np.asarray(spec["maximum"], dtype=np.float64), shape)
    except (KeyError, ValueError, TypeError):
        return None
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high)) and np.all(low <= high)):
        return None
    return low, high


def legal_integers(value: Any) -> list[int] | None:
    """``value`` as a list of ints when it is a non-empty list of integers, else ``None``."""
    if not isinstance(value, list | tuple) or not value:
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return None
    return [int(v) for v in value]


def space_source(space: spaces.Space[Any]) -> str:
    """A space as Python source a user can paste (``gymnasium.spaces.Box(...)``)."""
    if isinstance(space, spaces.Box):
        low, high = np.unique(space.low), np.unique(space.high)
        if low.size == 1 and high.size == 1:
            bounds = f"{low[0].item()!r}, {high[0].item()!r}"
        else:
            bounds = f"numpy.array({space.low.tolist()!r}), numpy.array({space.high.tolist()!r})"
        bounds = bounds.replace("inf", "numpy.inf").replace("-numpy.inf", "-numpy.inf")
        return f"gymnasium.spaces.Box({bounds}, {space.shape}, numpy.{np.dtype(space.dtype).name})"
    if isinstance(space, spaces.Discrete):
        start = int(space.start)
        return f"gymnasium.spaces.Discrete({int(space.n)}" + (f", start={start})" if start else ")")
    return repr(space)


def pin_inference(role: str, path: str, space: spaces.Space[Any]) -> Inference:
    """How to pin a space taken from the reset observation: its shape when it is an array."""
    if isinstance(space, spaces.Box | spaces.MultiBinary) and space.shape:
        return Inference(
            role, path, "field_shapes", repr(tuple(space.shape)), "the reset observation"
        )
    return Inference(role, path, "field_spaces", space_source(space), "the reset observation")


__all__ = [
    "ACTION_COUNT_FIELDS",
    "MISSING",
    "ActionHints",
    "Inference",
    "declared_count",
    "is_legal_actions_name",
    "legal_integers",
    "numeric_shape",
    "pin_inference",
    "sample_at",
    "space_source",
    "spec_bounds",
    "spec_shape",
]
