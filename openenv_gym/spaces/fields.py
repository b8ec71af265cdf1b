"""Field codecs: one JSON wire value <-> one element of a Gymnasium space.

A schema becomes a tree of :class:`FieldCodec` objects (see :mod:`openenv_gym.spaces.schema`);
each knows its space, how to turn the wire value into an element of that space (``decode``,
strict: wrong types, sizes and out-of-space values raise) and back (``encode``, for values
already checked by :func:`openenv_gym.spaces.membership.coerce`).

Decoded values obey the space exactly: Box/MultiDiscrete/MultiBinary values are arrays of the
space's dtype and shape, Discrete values are numpy integer scalars of the space's dtype, Text
values are ``str``, Dict values are ``OrderedDict`` in the space's key order.

Null handling (``Optional[X]`` fields, :class:`OptionalCodec`): a JSON ``null`` decodes to the
*neutral* element of X's space: zeros (clipped into the bounds) for Box, ``start`` for
Discrete (index 0 for enums and ``False`` for booleans), ``start`` for MultiDiscrete, zeros for
MultiBinary, ``""`` for Text (when ``min_length > 0``: that many spaces, or of the charset's
first character if it has no space), and the neutral element of every member for Dict and
Tuple. Encoding never produces ``null`` here; in an object, the field's presence flag says
whether it was ``null`` (:mod:`openenv_gym.spaces.optional_fields`).

Example:
    >>> from gymnasium import spaces
    >>> codec = EnumCodec(["rgb", "grayscale", "ram"])
    >>> codec.space, codec.decode("ram", "obs_type"), codec.encode(1, "obs_type")
    (Discrete(3), np.int64(2), 'grayscale')
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from openenv_gym.errors import CodecError, SpaceMappingError
from openenv_gym.spaces.describe import describe_space, describe_value
from openenv_gym.spaces.free_text import FreeText


class FieldCodec(ABC):
    """Converts one field's wire value to an element of :attr:`space` and back."""

    space: spaces.Space[Any]

    @abstractmethod
    def decode(self, wire: Any, path: str) -> Any:
        """Wire value -> element of :attr:`space`.

        Raises:
            CodecError: The value does not fit; ``field`` is ``path``.
        """

    @abstractmethod
    def encode(self, value: Any, path: str) -> Any:
        """Element of :attr:`space` (already membership-checked) -> JSON-able wire value."""

    @abstractmethod
    def neutral(self) -> Any:
        """The element a JSON ``null`` decodes to (see the module docstring)."""

    def collect_extras(self, wire: Any, path: str, out: dict[str, Any]) -> None:  # noqa: B027
        """Add wire values this codec does not map to ``out`` under their dotted paths.

        Leaves map their whole value, so the default adds nothing.
        """

    def _mismatch(self, path: str, expected: str, wire: Any, why: str = "") -> CodecError:
        where = f"field {path!r}: " if path else ""
        tail = f" ({why})" if why else ""
        return CodecError(
            f"{where}expected {expected}, got {describe_value(wire)}{tail}", field=path
        )


class NumericArrayCodec(FieldCodec):
    """Box, MultiDiscrete and MultiBinary values, including Box of shape ``()`` for scalars.

    Wire values are (nested) lists or numbers; a flat list whose size matches is reshaped
    (the official Atari server sends its screen flattened). ``wire_bool`` makes ``encode``
    send booleans (a MultiBinary mapped from an array of JSON booleans).
    """

    def __init__(
        self,
        space: spaces.Box | spaces.MultiDiscrete | spaces.MultiBinary,
        *,
        wire_bool: bool = False,
    ) -> None:
        self.space = space
        self.wire_bool = wire_bool
        self._dtype = np.dtype(space.dtype)
        self._shape: tuple[int, ...] = tuple(space.shape)
        self._size = int(np.prod(self._shape))
        if isinstance(space, spaces.Box):
            self._low: Any = space.low
            self._high: Any = space.high
        elif isinstance(space, spaces.MultiDiscrete):
            self._low, self._high = space.start, space.start + space.nvec - 1
        else:
            self._low, self._high = 0, 1
        self._accepts_bool = isinstance(space, spaces.MultiBinary) or self._dtype.kind == "b"
        self._expected = describe_space(space)  # once: decode runs on every step
        low, high = np.asarray(self._low), np.asarray(self._high)
        # Bounds that every value of the dtype meets (uint8 in [0, 255]) need no check;
        # uniform bounds are checked with two reductions instead of elementwise masks.
        self._dtype_in_bounds = self._dtype.kind in "iu" and bool(
            np.all(low <= np.iinfo(self._dtype).min) and np.all(high >= np.iinfo(self._dtype).max)
        )
        uniform = low.size > 0 and bool(np.all(low == low.flat[0]) and np.all(high == high.flat[0]))
        self._scalar_bounds = (low.flat[0], high.flat[0]) if uniform else None

    def decode(self, wire: Any, path: str) -> np.ndarray:
        expected = self._expected
        try:
            array = np.asarray(wire)
        except (ValueError, TypeError) as exc:
            raise self._mismatch(path, expected, wire, f"not a regular array: {exc}") from exc
        kind = array.dtype.kind
        if kind not in "biuf" or (kind == "b" and not self._accepts_bool):
            what = "booleans" if kind == "b" else f"non-numeric data (dtype {array.dtype})"
            raise self._mismatch(path, expected, wire, what)
        if kind == "f" and self._dtype.kind in "biu":
            with np.errstate(invalid="ignore"):
                integral = np.all(np.isfinite(array)) and np.all(array == np.trunc(array))
            if not integral:
                raise self._mismatch(path, expected, wire, "non-integer numbers")
        if array.shape != self._shape:
            if array.size != self._size:
                raise self._mismatch(
                    path,
                    f"{self._size} values (shape {self._shape}) for {expected}",
                    wire,
                    f"shape {array.shape}",
                )
            array = array.reshape(self._shape)
        if self._dtype.kind == "f":
            array = array.astype(self._dtype, copy=False)
        self._check_bounds(array, wire, path)
        return array.astype(self._dtype, copy=False)

    def decode_batch(self, wire: Any, count: int, path: str) -> np.ndarray:
        """``count`` wire values stacked on axis 0 -> an array of shape ``(count, *shape)``.

        The vectorized twin of :meth:`decode` (a vector env's batch replies): one check of
        the whole stack, and every row that fails is decoded alone so the error is the one
        :meth:`decode` raises for it.
        """
        array = wire if isinstance(wire, np.ndarray) else None
        if (
            array is not None
            and array.shape != (count, *self._shape)
            and array.ndim >= 1
            and array.shape[0] == count
            and array.size == count * self._size
        ):
            array = array.reshape(count, *self._shape)  # rows sent flat, as decode allows
        if (
            array is not None
            and array.shape == (count, *self._shape)
            and array.dtype.kind in "biuf"
            and (array.dtype.kind != "b" or self._accepts_bool)
            and (array.dtype.kind != "f" or self._dtype.kind == "f")
        ):
            if self._dtype.kind == "f":
                array = array.astype(self._dtype, copy=False)
            if self._all_inside(array):
                return array.astype(self._dtype, copy=False)
            inside = (array >= self._low) & (array <= self._high)
            bad = int(np.argwhere(~inside.reshape(count, -1).all(axis=1))[0][0])
            self.decode(array[bad], path)  # raises, naming the value
        return np.stack([self.decode(wire[k], path) for k in range(count)])

    def fits_every(self, dtype: np.dtype[Any], size: int) -> bool:
        """Whether every array of ``dtype`` and ``size`` values decodes as itself, unchecked:
        the space's own dtype and size, and bounds that every value of it meets (uint8 in
        ``[0, 255]``), as :meth:`decode_batch` would find row after row."""
        return dtype == self._dtype and size == self._size and self._dtype_in_bounds

    def _all_inside(self, array: np.ndarray) -> bool:
        """Whether every value of ``array`` is within the bounds (NaN is not)."""
        if array.dtype == self._dtype and self._dtype_in_bounds:
            return True
        if array.size == 0:
            return True
        if self._scalar_bounds is not None:
            low, high = self._scalar_bounds
            return bool(array.min() >= low and array.max() <= high)  # NaN compares False
        return bool(((array >= self._low) & (array <= self._high)).all())

    def _check_bounds(self, array: np.ndarray, wire: Any, path: str) -> None:
        if self._all_inside(array):
            return
        inside = (array >= self._low) & (array <= self._high)  # NaN compares False, silently
        index = tuple(int(i) for i in np.argwhere(~np.asarray(inside))[0]) if array.ndim else ()
        item = array[index] if index else array
        at = f" at index {index}" if index else ""
        raise self._mismatch(
            path,
            f"values within the bounds of {self._expected}",
            wire,
            f"{item.item()!r}{at} is out of bounds",
        )

    def encode(self, value: Any, path: str) -> Any:
        array = np.asarray(value)
        return array.astype(bool).tolist() if self.wire_bool else array.tolist()

    def neutral(self) -> np.ndarray:
        zeros = np.zeros(self._shape, dtype=np.float64)
        return np.asarray(np.clip(zeros, self._low, self._high), dtype=self._dtype)


class DiscreteCodec(FieldCodec):
    """A bounded integer as ``Discrete(n, start)``; JSON booleans count as 0/1."""

    def __init__(self, space: spaces.Discrete) -> None:
        self.space = space
        self._start = int(space.start)
        self._stop = self._start + int(space.n)
        self._type = np.dtype(space.dtype).type
        self._expected = (
            f"an integer in [{self._start}, {self._stop - 1}] ({describe_space(space)})"
        )

    def decode(self, wire: Any, path: str) -> Any:
        expected = self._expected
        integral_float = isinstance(wire, float) and wire.is_integer()
        if isinstance(wire, bool | int | np.integer | np.bool_) or integral_float:
            number = int(wire)
        else:
            raise self._mismatch(path, expected, wire)
        if not self._start <= number < self._stop:
            raise self._mismatch(path, expected, wire, "out of range")
        return self._type(number)

    def encode(self, value: Any, path: str) -> int:
        return int(value)

    def neutral(self) -> Any:
        return self._type(self._start)


class BoolCodec(FieldCodec):
    """A JSON boolean as ``Discrete(2)``: ``false`` -> 0, ``true`` -> 1."""

    def __init__(self) -> None:
        self.space = spaces.Discrete(2)

    def decode(self, wire: Any, path: str) -> np.int64:
        if not isinstance(wire, bool | np.bool_):
            raise self._mismatch(path, "a boolean (true/false) for Discrete(2)", wire)
        return np.int64(int(wire))

    def encode(self, value: Any, path: str) -> bool:
        return bool(value)

    def neutral(self) -> np.int64:
        return np.int64(0)


class EnumCodec(FieldCodec):
    """A closed set of JSON values (``enum``, ``const``, ``Literal``) as ``Discrete(len)``.

    Element ``i`` of the space stands for ``values[i]``; ``True`` and ``1`` are different
    values, ``1`` and ``1.0`` are the same (JSON does not tell them apart).
    """

    def __init__(self, values: Sequence[Any]) -> None:
        self.values: tuple[Any, ...] = tuple(values)
        self.space = spaces.Discrete(len(self.values))
        self._index: dict[tuple[str, Any], int] = {}
        for i, value in enumerate(self.values):
            key = _enum_key(value)
            if key is not None:
                self._index.setdefault(key, i)

    def decode(self, wire: Any, path: str) -> np.int64:
        key = _enum_key(wire)
        if key is not None:
            found = self._index.get(key)
        else:
            found = next((i for i, v in enumerate(self.values) if v == wire), None)
        if found is None:
            raise self._mismatch(path, f"one of {list(self.values)!r}", wire)
        return np.int64(found)

    def encode(self, value: Any, path: str) -> Any:
        return self.values[int(value)]

    def neutral(self) -> np.int64:
        return np.int64(0)


def _enum_key(value: Any) -> tuple[str, Any] | None:
    """A hashable lookup key that keeps ``True`` apart from ``1``; ``None`` if unhashable."""
    if value is None:
        return ("null", None)
    if isinstance(value, bool | np.bool_):
        return ("bool", bool(value))
    if isinstance(value, int | float | np.integer | np.floating):
        return ("number", float(value) if isinstance(value, float | np.floating) else int(value))
    if isinstance(value, str):
        return ("str", value)
    return None


class TextCodec(FieldCodec):
    """A JSON string as :class:`gymnasium.spaces.Text` (length and charset checked)."""

    def __init__(self, space: spaces.Text) -> None:
        self.space = space
        self._text = space
        # A FreeText (an observation) takes any character; a Text, its charset's.
        self._charset: frozenset[str] | None = (
            None if isinstance(space, FreeText) else space.character_set
        )

    def decode(self, wire: Any, path: str) -> str:
        space = self._text
        if not isinstance(wire, str):
            raise self._mismatch(path, f"a string ({describe_space(space)})", wire)
        if not space.min_length <= len(wire) <= space.max_length:
            raise self._mismatch(
                path,
                f"a string of {space.min_length}..{space.max_length} characters",
                wire,
                f"{len(wire)} characters; pass an explicit Text space with a larger "
                "max_length via field_spaces, or set maxLength in the schema",
            )
        unknown = set(wire) - self._charset if self._charset is not None else set()
        if unknown:
            shown = ", ".join(f"{c!r} (U+{ord(c):04X})" for c in sorted(unknown)[:10])
            raise self._mismatch(
                path,
                "a string made of the Text space's characters",
                wire,
                f"characters outside the charset: {shown}; pass field_spaces with a Text whose "
                "charset includes them, e.g. Text(4096, charset=DEFAULT_TEXT_CHARSET + '...')",
            )
        return wire

    def encode(self, value: Any, path: str) -> str:
        return str(value)

    def neutral(self) -> str:
        charset = self._text.character_set
        filler = " " if " " in charset else min(charset, default="")
        return filler * self._text.min_length


class OptionalCodec(FieldCodec):
    """``Optional[X]``: ``null`` decodes to X's neutral element; otherwise as X."""

    def __init__(self, inner: FieldCodec) -> None:
        self.inner = inner
        self.space = inner.space

    def decode(self, wire: Any, path: str) -> Any:
        return self.inner.neutral() if wire is None else self.inner.decode(wire, path)

    def encode(self, value: Any, path: str) -> Any:
        return self.inner.encode(value, path)

    def neutral(self) -> Any:
        return self.inner.neutral()

    def collect_extras(self, wire: Any, path: str, out: dict[str, Any]) -> None:
        if wire is not None:
            self.inner.collect_extras(wire, path, out)


class DictCodec(FieldCodec):
    """A JSON object as ``spaces.Dict`` in the given key order (kept, never sorted)."""

    def __init__(self, items: Sequence[tuple[str, FieldCodec]]) -> None:
        self.codecs: dict[str, FieldCodec] = dict(items)
        self.space = spaces.Dict([(key, codec.space) for key, codec in items])

    @property
    def wire_keys(self) -> list[str]:
        """The fields as they travel."""
        return list(self.codecs)

    def decode(self, wire: Any, path: str) -> OrderedDict[str, Any]:
        if not isinstance(wire, Mapping):
            raise self._mismatch(path, f"an object with fields {self.wire_keys}", wire)
        return OrderedDict(
            (key, self._decode_field(wire, key, codec, _join(path, key)))
            for key, codec in self.codecs.items()
        )

    def _decode_field(self, wire: Mapping[str, Any], key: str, codec: FieldCodec, sub: str) -> Any:
        """Field ``key`` of the object ``wire`` (``sub`` is its dotted path)."""
        if key not in wire:
            raise CodecError(
                f"field {sub!r}: missing; expected a value for {describe_space(codec.space)}, "
                f"the object has fields {list(wire)}",
                field=sub,
            )
        return codec.decode(wire[key], sub)

    def encode(self, value: Any, path: str) -> dict[str, Any]:
        return {
            key: codec.encode(value[key], _join(path, key)) for key, codec in self.codecs.items()
        }

    def neutral(self) -> OrderedDict[str, Any]:
        return OrderedDict((key, codec.neutral()) for key, codec in self.codecs.items())

    def collect_extras(self, wire: Any, path: str, out: dict[str, Any]) -> None:
        if not isinstance(wire, Mapping):
            return
        for key, value in wire.items():
            codec = self.codecs.get(key)
            if codec is None:
                out[_join(path, key)] = value
            else:
                codec.collect_extras(value, _join(path, key), out)


class TupleCodec(FieldCodec):
    """A fixed-length JSON array of non-numeric items as ``spaces.Tuple``."""

    def __init__(self, items: Sequence[FieldCodec]) -> None:
        self.codecs: tuple[FieldCodec, ...] = tuple(items)
        self.space = spaces.Tuple([codec.space for codec in self.codecs])

    def decode(self, wire: Any, path: str) -> tuple[Any, ...]:
        if not isinstance(wire, list | tuple) or len(wire) != len(self.codecs):
            raise self._mismatch(path, f"a list of {len(self.codecs)} items", wire)
        return tuple(
            codec.decode(item, f"{path}[{i}]")
            for i, (codec, item) in enumerate(zip(self.codecs, wire, strict=True))
        )

    def encode(self, value: Any, path: str) -> list[Any]:
        return [
            codec.encode(item, f"{path}[{i}]")
            for i, (codec, item) in enumerate(zip(self.codecs, value, strict=True))
        ]

    def neutral(self) -> tuple[Any, ...]:
        return tuple(codec.neutral() for codec in self.codecs)


def codec_for_space(space: spaces.Space[Any], path: str = "") -> FieldCodec:
    """The codec for an explicit space (``field_spaces`` or ``x-space``).

    The wire value is the space element's JSON form: lists for arrays, an int for Discrete
    (a JSON boolean is read as 0/1), a string for Text, an object for Dict, a list for Tuple.

    Raises:
        SpaceMappingError: The space has no JSON wire form (Graph, Sequence, ...).
    """
    if isinstance(space, spaces.Box | spaces.MultiDiscrete | spaces.MultiBinary):
        return NumericArrayCodec(space)
    if isinstance(space, spaces.Discrete):
        return DiscreteCodec(space)
    if isinstance(space, spaces.Text):
        return TextCodec(space)
    if isinstance(space, spaces.Dict):
        return DictCodec(
            [(key, codec_for_space(sub, _join(path, key))) for key, sub in space.spaces.items()]
        )
    if isinstance(space, spaces.Tuple):
        return TupleCodec(
            [codec_for_space(sub, f"{path}[{i}]") for i, sub in enumerate(space.spaces)]
        )
    raise SpaceMappingError(
        f"field {path or '<root>'!r}: a {type(space).__name__} space has no JSON wire form; "
        "use Box, Discrete, MultiDiscrete, MultiBinary, Text, Dict or Tuple",
        field=path,
        schema=repr(space),
    )


def _join(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key
