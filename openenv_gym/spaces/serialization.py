"""Gymnasium spaces <-> JSON, and single values <-> JSON wire values.

A server that knows its exact spaces publishes them in its ``GET /schema`` under the JSON
Schema extension key ``"x-space"`` (see :data:`X_SPACE`); clients rebuild the space with
:func:`space_from_json`. An official OpenEnv client ignores unknown ``x-`` keys.

Wire values are what JSON can carry: Box/MultiDiscrete/MultiBinary values travel as
nested lists, Discrete as an int, Text as a str, Dict as an object, Tuple as a list.

Example:
    >>> import numpy as np
    >>> from gymnasium import spaces
    >>> box = spaces.Box(-1.0, 1.0, (2,), np.float32)
    >>> space_from_json(space_to_json(box)) == box
    True
    >>> to_wire(box, np.array([0.5, -0.25], np.float32))
    [0.5, -0.25]
    >>> from_wire(box, [0.5, -0.25]).dtype
    dtype('float32')
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, Final

import numpy as np
from gymnasium import spaces

from openenv_gym.errors import CodecError, SpaceMappingError

#: JSON Schema extension key holding a serialized Gymnasium space for a field.
X_SPACE: Final = "x-space"
#: Top-level key of an observation schema naming the one field that is the whole observation.
X_OBSERVATION_KEY: Final = "x-observation-key"
#: Top-level key of an action schema naming the one field that is the whole action.
X_ACTION_KEY: Final = "x-action-key"
#: Top-level key of an observation schema naming a boolean field that carries truncation.
X_TRUNCATED_KEY: Final = "x-truncated-key"
#: Top-level observation-schema key naming the boolean field that carries termination
#: (``done`` is ``terminated or truncated``: both may be true on a time limit's last step).
X_TERMINATED_KEY: Final = "x-terminated-key"


def _bound_to_json(values: np.ndarray) -> Any:
    """Bounds as (nested) lists; infinities as the strings ``"inf"``/``"-inf"``."""
    if values.size and np.all(values == values.flat[0]):
        return _scalar_to_json(values.flat[0])
    return _nested(values)


def _nested(values: np.ndarray) -> Any:
    if values.ndim == 0:
        return _scalar_to_json(values.item())
    return [_nested(v) for v in values]


def _scalar_to_json(value: Any) -> Any:
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def _bound_from_json(value: Any) -> Any:
    if isinstance(value, list):
        return [_bound_from_json(v) for v in value]
    if value in ("inf", "+inf", "Infinity"):
        return math.inf
    if value in ("-inf", "-Infinity"):
        return -math.inf
    return value


def space_to_json(space: spaces.Space[Any]) -> dict[str, Any]:
    """Describe a Gymnasium space as a JSON-able dict (the ``x-space`` format).

    Raises:
        SpaceMappingError: The space type has no JSON form (Graph, Sequence, ...).
    """
    if isinstance(space, spaces.Box):
        return {
            "type": "Box",
            "shape": list(space.shape),
            "dtype": np.dtype(space.dtype).name,
            "low": _bound_to_json(space.low),
            "high": _bound_to_json(space.high),
        }
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, spaces.MultiDiscrete):
        return {
            "type": "MultiDiscrete",
            "nvec": space.nvec.tolist(),
            "start": space.start.tolist(),
            "dtype": np.dtype(space.dtype).name,
        }
    if isinstance(space, spaces.MultiBinary):
        n: Any = space.n
        return {"type": "MultiBinary", "n": int(n) if np.ndim(n) == 0 else list(n)}
    if isinstance(space, spaces.Text):
        return {
            "type": "Text",
            "min_length": int(space.min_length),
            "max_length": int(space.max_length),
            "charset": "".join(sorted(space.character_set)),
        }
    if isinstance(space, spaces.Dict):
        return {
            "type": "Dict",
            "spaces": [[key, space_to_json(sub)] for key, sub in space.spaces.items()],
        }
    if isinstance(space, spaces.Tuple):
        return {"type": "Tuple", "spaces": [space_to_json(sub) for sub in space.spaces]}
    raise SpaceMappingError(
        f"cannot describe a {type(space).__name__} space as JSON; supported: Box, Discrete, "
        "MultiDiscrete, MultiBinary, Text, Dict, Tuple",
        field="",
        schema=repr(space),
    )


def space_from_json(spec: dict[str, Any], *, field: str = "") -> spaces.Space[Any]:
    """Rebuild a Gymnasium space from :func:`space_to_json` output.

    Raises:
        SpaceMappingError: ``spec`` is not a valid space description.
    """
    try:
        kind = spec["type"]
        if kind == "Box":
            shape = tuple(int(n) for n in spec["shape"])
            dtype = np.dtype(spec["dtype"])
            return spaces.Box(
                low=_bound_array(spec["low"], shape, dtype),
                high=_bound_array(spec["high"], shape, dtype),
                shape=shape,
                dtype=dtype,
            )
        if kind == "Discrete":
            return spaces.Discrete(int(spec["n"]), start=int(spec.get("start", 0)))
        if kind == "MultiDiscrete":
            return spaces.MultiDiscrete(
                np.asarray(spec["nvec"]),
                dtype=np.dtype(spec.get("dtype", "int64")),
                start=np.asarray(spec["start"]) if "start" in spec else None,
            )
        if kind == "MultiBinary":
            n = spec["n"]
            return spaces.MultiBinary(n if isinstance(n, int) else list(n))
        if kind == "Text":
            return spaces.Text(
                max_length=int(spec["max_length"]),
                min_length=int(spec.get("min_length", 0)),
                charset=spec.get("charset") or None,  # type: ignore[arg-type]
            )
        if kind == "Dict":
            return spaces.Dict(
                OrderedDict(
                    (key, space_from_json(sub, field=_join(field, key)))
                    for key, sub in spec["spaces"]
                )
            )
        if kind == "Tuple":
            return spaces.Tuple(
                [
                    space_from_json(sub, field=_join(field, str(i)))
                    for i, sub in enumerate(spec["spaces"])
                ]
            )
    except SpaceMappingError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise SpaceMappingError(
            f"field {field or '<root>'!r}: invalid '{X_SPACE}' description {spec!r} ({exc}); "
            "expected e.g. {'type': 'Box', 'shape': [4], 'dtype': 'float32', 'low': -1, "
            "'high': 1}",
            field=field,
            schema=spec,
        ) from exc
    raise SpaceMappingError(
        f"field {field or '<root>'!r}: unknown space type {spec.get('type')!r} in '{X_SPACE}'; "
        "supported: Box, Discrete, MultiDiscrete, MultiBinary, Text, Dict, Tuple",
        field=field,
        schema=spec,
    )


def _bound_array(bound: Any, shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    values = np.asarray(_bound_from_json(bound), dtype=np.float64)
    if not np.issubdtype(dtype, np.floating):
        values = np.asarray(bound)
    return np.broadcast_to(values.astype(dtype), shape).copy()


def _join(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


# --------------------------------------------------------------------------- values


def to_wire(space: spaces.Space[Any], value: Any, *, field: str = "") -> Any:
    """Convert an element of ``space`` to a JSON-able wire value (no containment check)."""
    if isinstance(space, spaces.Box | spaces.MultiDiscrete | spaces.MultiBinary):
        return np.asarray(value).tolist()
    if isinstance(space, spaces.Discrete):
        return int(value)
    if isinstance(space, spaces.Text):
        return str(value)
    if isinstance(space, spaces.Dict):
        if not isinstance(value, dict):
            raise CodecError(
                f"field {field or '<root>'!r}: expected a dict for a Dict space, "
                f"got {type(value).__name__}",
                field=field,
            )
        return {k: to_wire(sub, value[k], field=_join(field, k)) for k, sub in space.items()}
    if isinstance(space, spaces.Tuple):
        return [
            to_wire(sub, v, field=_join(field, str(i)))
            for i, (sub, v) in enumerate(zip(space.spaces, value, strict=True))
        ]
    raise CodecError(
        f"field {field or '<root>'!r}: no wire form for {type(space).__name__}", field=field
    )


def from_wire(space: spaces.Space[Any], value: Any, *, field: str = "") -> Any:
    """Convert a wire value to an element of ``space`` with the space's exact dtype and shape.

    Flat lists are reshaped to the space's shape when their size matches (the official
    Atari server sends its screen flattened).

    Raises:
        CodecError: The value cannot be converted (wrong size, wrong type, missing key).
    """
    where = field or "<root>"
    try:
        if isinstance(space, spaces.Box | spaces.MultiDiscrete | spaces.MultiBinary):
            array = np.asarray(value, dtype=space.dtype)
            if array.shape != space.shape:
                if array.size != int(np.prod(space.shape)):
                    raise CodecError(
                        f"field {where!r}: expected {int(np.prod(space.shape))} values "
                        f"(shape {space.shape}), got shape {array.shape}",
                        field=field,
                    )
                array = array.reshape(space.shape)
            return array
        if isinstance(space, spaces.Discrete):
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                if isinstance(value, float) and value.is_integer():
                    return np.int64(value)
                raise CodecError(
                    f"field {where!r}: expected an integer, got {value!r}", field=field
                )
            return np.int64(value)
        if isinstance(space, spaces.Text):
            if not isinstance(value, str):
                raise CodecError(f"field {where!r}: expected a string, got {value!r}", field=field)
            return value
        if isinstance(space, spaces.Dict):
            if not isinstance(value, dict):
                raise CodecError(
                    f"field {where!r}: expected an object, got {type(value).__name__}",
                    field=field,
                )
            missing = [k for k in space.spaces if k not in value]
            if missing:
                raise CodecError(f"field {where!r}: missing keys {missing}", field=field)
            return OrderedDict(
                (k, from_wire(sub, value[k], field=_join(field, k))) for k, sub in space.items()
            )
        if isinstance(space, spaces.Tuple):
            if not isinstance(value, list | tuple) or len(value) != len(space.spaces):
                raise CodecError(
                    f"field {where!r}: expected a list of {len(space.spaces)} items, got {value!r}",
                    field=field,
                )
            return tuple(
                from_wire(sub, v, field=_join(field, str(i)))
                for i, (sub, v) in enumerate(zip(space.spaces, value, strict=True))
            )
    except CodecError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:
        raise CodecError(
            f"field {where!r}: cannot convert {str(value)[:100]!r} to {space}: {exc}",
            field=field,
        ) from exc
    raise CodecError(f"field {where!r}: no wire form for {type(space).__name__}", field=field)
