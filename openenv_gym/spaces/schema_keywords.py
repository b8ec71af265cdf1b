"""Reading JSON Schema keywords: numeric bounds, fixed array lengths and implied types.

Small pure functions over one schema fragment (a ``dict`` from pydantic's
``model_json_schema()``), shared by the field rules of :mod:`openenv_gym.spaces.field_rules`
and :mod:`openenv_gym.spaces.container_rules`.

Example:
    >>> int_bounds({"type": "integer", "minimum": 0, "exclusiveMaximum": 4})
    (0, 3)
    >>> fixed_length({"type": "array", "minItems": 3, "maxItems": 3})
    3
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from openenv_gym.spaces.serialization import X_SPACE

#: The JSON Schema types that map to numeric spaces (``Box``, ``MultiDiscrete``, ...).
NUMERIC_TYPES: Final = ("number", "integer", "boolean")


def join_path(parent: str, key: str) -> str:
    """The dotted path of field ``key`` under ``parent`` (``""`` at the top level)."""
    return f"{parent}.{key}" if parent else key


def dedupe_values(values: Sequence[Any]) -> list[Any]:
    """``values`` without repeats (``1`` and ``True`` stay distinct), in order."""
    out: list[Any] = []
    for value in values:
        if not any(value == seen and type(value) is type(seen) for seen in out):
            out.append(value)
    return out


def implied_type(schema: Mapping[str, Any]) -> str | None:
    """The type a schema without ``type`` implies by its keywords, or ``None``."""
    if "properties" in schema or "additionalProperties" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return None


def is_plain_numeric(schema: Mapping[str, Any]) -> bool:
    """Whether the schema is a number, integer or boolean without enum, const or x-space."""
    return (
        schema.get("type") in NUMERIC_TYPES
        and "enum" not in schema
        and "const" not in schema
        and X_SPACE not in schema
    )


def fixed_length(schema: Mapping[str, Any]) -> int | None:
    """The length of an array with ``minItems == maxItems``, else ``None``."""
    if schema.get("type") != "array" and "items" not in schema:
        return None
    low, high = schema.get("minItems"), schema.get("maxItems")
    if isinstance(low, int) and low == high and low >= 0:
        return low
    return None


def keyword_bound(
    schema: Mapping[str, Any], key: str, exclusive_key: str
) -> tuple[float | None, bool]:
    """(bound, exclusive) from draft 2020-12 numbers or draft-4 boolean exclusives."""
    exclusive = schema.get(exclusive_key)
    value = schema.get(key)
    if isinstance(exclusive, bool):
        return (None if value is None else float(value)), exclusive
    if isinstance(exclusive, int | float):
        if value is not None and (
            (key == "minimum" and value > exclusive) or (key == "maximum" and value < exclusive)
        ):
            return float(value), False
        return float(exclusive), True
    return (None if value is None else float(value)), False


def int_bounds(schema: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """The inclusive integer (low, high) of a schema; ``None`` where unbounded."""
    minimum, low_exclusive = keyword_bound(schema, "minimum", "exclusiveMinimum")
    maximum, high_exclusive = keyword_bound(schema, "maximum", "exclusiveMaximum")
    low = high = None
    if minimum is not None and math.isfinite(minimum):
        low = math.floor(minimum) + 1 if low_exclusive else math.ceil(minimum)
    if maximum is not None and math.isfinite(maximum):
        high = math.ceil(maximum) - 1 if high_exclusive else math.floor(maximum)
    return low, high


def round_bound(value: float, dtype: np.dtype[Any], *, up: bool, strict: bool) -> Any:
    """``value`` in ``dtype``, rounded up or down (and past it when ``strict``)."""
    scalar = dtype.type(value)
    target = math.inf if up else -math.inf
    if (up and float(scalar) < value) or (not up and float(scalar) > value):
        scalar = np.nextafter(scalar, dtype.type(target))
    if strict and float(scalar) == value:
        scalar = np.nextafter(scalar, dtype.type(target))
    return scalar


def int_limits(dtype: np.dtype[Any]) -> tuple[int, int]:
    """The bounds of an unbounded integer Box of ``dtype``: the dtype's range, except that
    64-bit types stop one below ``int64`` max (``Box.sample`` computes ``high + 1`` in int64).
    """
    info = np.iinfo(dtype)
    return int(info.min), min(int(info.max), int(np.iinfo(np.int64).max) - 1)


def shaped_values(values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """One value per leaf -> an array of ``shape`` (broadcast one leaf, or one per element)."""
    if values.size == 1:
        return np.full(shape, values.reshape(()), dtype=values.dtype)
    return values.reshape(shape)
