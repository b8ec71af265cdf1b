"""Check that a value is an element of a space, and normalize it to the space's exact form.

:func:`coerce` is the membership test behind :meth:`ActionCodec.encode` (and the server-side
:meth:`ObservationCodec.encode`). It accepts what Gymnasium's own ``contains`` accepts in
spirit, with precise reasons when it refuses:

* ``Box``: numpy arrays, numpy scalars, lists and tuples whose dtype casts to the space's
  dtype with ``same_kind`` casting (int -> float is fine, float -> int is not), with the
  exact shape and within the bounds. Python scalars must match the dtype's kind: a python
  ``float`` for a float Box of shape ``()``, a python ``int`` for an integer Box; a python
  ``int`` for a float Box is refused (it usually means a Discrete-style action was sent to a
  continuous env). Booleans are refused unless the Box has a bool dtype.
* ``Discrete``: python ``int`` (and ``bool``), numpy integer scalars, 0-d integer arrays.
* ``MultiDiscrete`` / ``MultiBinary``: integer (or bool) arrays, lists, tuples of the shape.
* ``Text``: ``str`` of the allowed length made of the space's characters.
* ``Dict``: a mapping with exactly the space's keys; ``Tuple``: a list/tuple of its length.

The value returned is normalized (arrays cast to the space's dtype, ``Dict`` values as an
``OrderedDict`` in the space's key order).

Example:
    >>> import numpy as np
    >>> from gymnasium import spaces
    >>> coerce(spaces.Box(-1, 1, (2,), np.float32), [0.5, 1]).dtype
    dtype('float32')
    >>> coerce(spaces.Discrete(3), 5)
    Traceback (most recent call last):
    ...
    openenv_gym.errors.CodecError: expected an integer in [0, 2] for Discrete(3), got 5
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from openenv_gym.errors import CodecError
from openenv_gym.spaces.describe import describe_space, describe_value
from openenv_gym.spaces.free_text import FreeText


def coerce(space: spaces.Space[Any], value: Any, path: str = "") -> Any:
    """Return ``value`` as an element of ``space`` (normalized), or raise.

    Raises:
        CodecError: ``value`` is not an element of ``space``; ``field`` is the dotted path.
    """
    if isinstance(space, spaces.Box):
        return _coerce_box(space, value, path)
    if isinstance(space, spaces.Discrete):
        return _coerce_discrete(space, value, path)
    if isinstance(space, spaces.MultiDiscrete | spaces.MultiBinary):
        return _coerce_multi(space, value, path)
    if isinstance(space, spaces.Text):
        return _coerce_text(space, value, path)
    if isinstance(space, spaces.Dict):
        return _coerce_dict(space, value, path)
    if isinstance(space, spaces.Tuple):
        return _coerce_tuple(space, value, path)
    if space.contains(value):
        return value
    raise _refuse(path, f"a member of {describe_space(space)}", value)


def _refuse(path: str, expected: str, value: Any, why: str = "") -> CodecError:
    where = f"field {path!r}: " if path else ""
    tail = f" ({why})" if why else ""
    return CodecError(f"{where}expected {expected}, got {describe_value(value)}{tail}", field=path)


def _as_array(space: spaces.Space[Any], value: Any, path: str) -> np.ndarray:
    """Value -> ndarray, refusing python scalars of the wrong kind and non-numeric data."""
    dtype = np.dtype(space.dtype)
    expected = f"an array like {describe_space(space)}"
    if isinstance(value, bool | np.bool_) and dtype.kind != "b":
        raise _refuse(path, expected, value, "a bool is not a number here")
    if isinstance(value, int | float) and not isinstance(value, bool):
        kind = "i" if isinstance(value, int) else "f"
        if (kind == "i") != (dtype.kind in "iu") or dtype.kind == "b":
            raise _refuse(
                path, expected, value, f"a python {type(value).__name__} for dtype {dtype}"
            )
        return np.asarray(value)
    if isinstance(value, np.ndarray | np.generic):
        array = np.asarray(value)
    elif isinstance(value, list | tuple):
        try:
            array = np.asarray(value)
        except (ValueError, TypeError) as exc:
            raise _refuse(path, expected, value, f"not a regular array: {exc}") from exc
    else:
        raise _refuse(path, expected, value, f"a {type(value).__name__} is not an array")
    if array.dtype.kind not in "biuf":
        raise _refuse(path, expected, value, f"dtype {array.dtype} is not numeric")
    bool_ok = dtype.kind == "b" or isinstance(space, spaces.MultiBinary)
    if array.dtype.kind == "b" and not bool_ok:
        raise _refuse(path, expected, value, "booleans are not numbers here")
    if not np.can_cast(array.dtype, dtype, casting="same_kind"):
        raise _refuse(path, expected, value, f"dtype {array.dtype} does not cast to {dtype}")
    if array.shape != space.shape:
        raise _refuse(path, expected, value, f"shape {array.shape} instead of {space.shape}")
    return array


def _check_bounds(
    space: spaces.Space[Any], array: np.ndarray, low: Any, high: Any, value: Any, path: str
) -> None:
    with np.errstate(invalid="ignore"):
        inside = (array >= low) & (array <= high)
    if not np.all(inside):
        bad = tuple(int(i) for i in np.argwhere(~np.asarray(inside))[0]) if array.ndim else ()
        item = array[bad] if bad else array
        at = f" at index {bad}" if bad else ""
        raise _refuse(
            path,
            f"values within the bounds of {describe_space(space)}",
            value,
            f"{item.item()!r}{at} is out of bounds",
        )


def _coerce_box(space: spaces.Box, value: Any, path: str) -> np.ndarray:
    array = _as_array(space, value, path)
    dtype = np.dtype(space.dtype)
    cast = array.astype(dtype, copy=False)
    # Integer targets compare before the cast (a cast would wrap out-of-range values).
    _check_bounds(space, cast if dtype.kind == "f" else array, space.low, space.high, value, path)
    return cast


def _coerce_multi(space: spaces.MultiDiscrete | spaces.MultiBinary, value: Any, path: str) -> Any:
    array = _as_array(space, value, path)  # refuses floats: they do not cast to ints
    low: Any
    high: Any
    if isinstance(space, spaces.MultiDiscrete):
        low, high = space.start, space.start + space.nvec - 1
    else:
        low, high = 0, 1
    _check_bounds(space, array, low, high, value, path)
    return array.astype(space.dtype, copy=False)


def _coerce_discrete(space: spaces.Discrete, value: Any, path: str) -> Any:
    start, n = int(space.start), int(space.n)
    zero_d = isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind in "biu"
    if (zero_d or isinstance(value, int | np.integer | np.bool_)) and (
        start <= int(value) < start + n
    ):
        return value
    # Described only on refusal: this runs on every step.
    expected = f"an integer in [{start}, {start + n - 1}] for {describe_space(space)}"
    raise _refuse(path, expected, value)


def _coerce_text(space: spaces.Text, value: Any, path: str) -> str:
    expected = f"a string for {describe_space(space)}"
    if not isinstance(value, str):
        raise _refuse(path, expected, value)
    if not space.min_length <= len(value) <= space.max_length:
        raise _refuse(path, expected, value, f"{len(value)} characters")
    unknown = [] if isinstance(space, FreeText) else sorted(set(value) - space.character_set)
    if unknown:
        raise _refuse(path, expected, value, f"characters outside the charset: {unknown[:10]}")
    return value


def _coerce_dict(space: spaces.Dict, value: Any, path: str) -> OrderedDict[str, Any]:
    expected = f"a dict with keys {list(space.spaces)}"
    if not isinstance(value, Mapping):
        raise _refuse(path, expected, value)
    missing = [key for key in space.spaces if key not in value]
    unknown = [key for key in value if key not in space.spaces]
    if missing or unknown:
        why = "; ".join(
            part
            for part in (
                f"missing {missing}" if missing else "",
                f"unknown {unknown}" if unknown else "",
            )
            if part
        )
        raise _refuse(path, expected, value, why)
    return OrderedDict(
        (key, coerce(sub, value[key], _join(path, key))) for key, sub in space.spaces.items()
    )


def _coerce_tuple(space: spaces.Tuple, value: Any, path: str) -> tuple[Any, ...]:
    if not isinstance(value, list | tuple) or len(value) != len(space.spaces):
        raise _refuse(path, f"a tuple of {len(space.spaces)} items", value)
    return tuple(
        coerce(sub, item, f"{path}[{i}]")
        for i, (sub, item) in enumerate(zip(space.spaces, value, strict=True))
    )


def _join(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key
