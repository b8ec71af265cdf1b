"""The per-field rules that turn one JSON Schema field into a field codec.

:class:`FieldWalker` holds the state of one walk over a top-level schema (the options, the
fields seen, the unmappable ones collected) and applies rules 1-9 of
:mod:`openenv_gym.spaces.schema` to each field: explicit spaces, ``x-space``, ``$ref``
resolution, unions, enums, booleans, integers, numbers and strings. Objects and arrays are
the rules of :mod:`openenv_gym.spaces.container_rules`; the top-level selection and the error
report are in :mod:`openenv_gym.spaces.schema`.

Example:
    >>> from openenv_gym.spaces.schema import map_observation_schema
    >>> schema = {"properties": {"level": {"type": "integer", "minimum": 1, "maximum": 3}}}
    >>> map_observation_schema(schema).codec.space["level"]
    Discrete(3, start=1)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

import numpy as np
from gymnasium import spaces

from openenv_gym.errors import SpaceMappingError
from openenv_gym.spaces.charset import DEFAULT_TEXT_CHARSET, DefaultCharsetText
from openenv_gym.spaces.fields import (
    BoolCodec,
    DictCodec,
    DiscreteCodec,
    EnumCodec,
    FieldCodec,
    NumericArrayCodec,
    OptionalCodec,
    TextCodec,
    codec_for_space,
)
from openenv_gym.spaces.free_text import FreeText
from openenv_gym.spaces.inference import ActionHints, Inference, legal_integers
from openenv_gym.spaces.optional_fields import ObjectCodec, presence_key
from openenv_gym.spaces.problems import (
    Role,
    UnmappableFieldError,
    VariableFieldError,
    observed_discrete,
)
from openenv_gym.spaces.schema_keywords import (
    dedupe_values,
    implied_type,
    int_bounds,
    int_limits,
    join_path,
    keyword_bound,
    round_bound,
    shaped_values,
)
from openenv_gym.spaces.serialization import X_SPACE, space_from_json

#: Field-level schema hint: the shape of a variable-length array, e.g. ``[210, 160, 3]``.
X_SHAPE: Final = "x-shape"
#: Field-level schema hint: the numpy dtype of an array mapped to a Box, e.g. ``"uint8"``.
X_DTYPE: Final = "x-dtype"

#: ``max_length`` of an action string field without ``maxLength``.
DEFAULT_ACTION_TEXT_MAX_LENGTH: Final = 4096
#: ``max_length`` of an observation string field without ``maxLength``.
DEFAULT_OBSERVATION_TEXT_MAX_LENGTH: Final = 65536


def _names(value: Collection[str] | str) -> frozenset[str]:
    return frozenset([value] if isinstance(value, str) else value)


class FieldWalker:
    """Walks the fields of one top-level schema, building codecs and collecting the
    unmappable fields (see the module docstring). Subclasses give the container rules."""

    def __init__(
        self,
        schema: Mapping[str, Any],
        role: Role,
        field_spaces: Mapping[str, spaces.Space[Any]] | None,
        field_shapes: Mapping[str, Sequence[int]] | None,
        *,
        exclude: Collection[str] = (),
        include: Collection[str] = (),
        sample: Mapping[str, Any] | None = None,
        hints: ActionHints | None = None,
    ) -> None:
        if not isinstance(schema, Mapping):
            raise SpaceMappingError(
                f"expected the {role} JSON Schema as a dict (e.g. Model.model_json_schema() or "
                f"the '{role}' entry of GET /schema), got {type(schema).__name__}",
                field="",
                schema=schema,
            )
        self.root = schema
        self.role: Role = role
        self.field_spaces = dict(field_spaces or {})
        self.field_shapes = dict(field_shapes or {})
        self.exclude = _names(exclude)
        self.include = _names(include)
        self.errors: list[UnmappableFieldError] = []
        self.known: set[str] = set()  # field paths an option may name
        self.left_out: set[str] = set()  # fields never in the space: exclude/include are no-ops
        self._expanding: list[str] = []  # $refs being expanded (recursion guard)
        self.sample = sample
        self.hints = hints or ActionHints()
        self.inferred: list[Inference] = []
        self.variable: dict[str, str] = {}
        self.legal_key: str | None = None
        self.terminated_key: str | None = None

    # ------------------------------------------------------------------ fields

    def _select(
        self,
        schema: Mapping[str, Any],
        properties: Mapping[str, Any],
        path: str,
        *,
        skip: Collection[Any] = (),
        take_all: bool = False,
    ) -> list[tuple[str, FieldCodec]]:
        """The (key, codec) pairs of an object's properties, in schema order."""
        required = schema.get("required") or ()
        selected: list[tuple[str, FieldCodec]] = []
        dropped: list[tuple[str, list[UnmappableFieldError]]] = []
        for key, sub in properties.items():
            if key in skip:
                continue
            self.known.add(sub_path := join_path(path, key))
            if self.role == "observation" and sub_path in self.exclude:
                continue
            named = {*self.include, *self.field_spaces}
            defaulted = self.role == "action" and key not in required and sub_path not in named
            if defaulted and not take_all:
                continue
            before = len(self.errors)
            codec = self._guarded(sub, sub_path)
            new = self.errors[before:]
            if defaulted and new and not any(error.needs_data for error in new):
                del self.errors[before:]  # no space even with data: the server's default applies
                dropped.append((sub_path, new))
            elif codec is not None:
                selected.append((key, codec))
        for sub_path, errors in dropped:  # with nothing left to send: refuse, naming each
            if not selected:
                self.errors.extend(errors)
            else:
                reasons = "; ".join(error.reason for error in errors)
                self.variable[sub_path] = f"{reasons}; not sent, the server's default applies"
        return selected

    def _object_codec(
        self,
        schema: Mapping[str, Any],
        properties: Mapping[str, Any],
        selected: list[tuple[str, FieldCodec]],
        path: str,
    ) -> DictCodec:
        """The codec of an object's selected fields: an :class:`ObjectCodec` when a field is
        nullable or (actions) has a default, see :mod:`openenv_gym.spaces.optional_fields`."""
        required = set(schema.get("required") or ())
        optional = {key for key, _ in selected if key not in required}
        nullable = [key for key, codec in selected if isinstance(codec, OptionalCodec)]
        taken = {key for key, _ in selected}
        for key in nullable:
            flag = presence_key(key)
            if flag in taken:
                raise UnmappableFieldError(
                    join_path(path, flag),
                    f"the field {key!r} is nullable and its presence flag would take the name of "
                    "this field (leave one of the two out)",
                    properties[flag],
                    space_fix=False,
                )
        if nullable or (self.role == "action" and optional):
            return ObjectCodec(selected, optional=optional)
        return DictCodec(selected)

    def _guarded(self, schema: Any, path: str) -> FieldCodec | None:
        try:
            return self._field(schema, path)
        except UnmappableFieldError as error:
            self.errors.append(error)
            return None
        except VariableFieldError as variable:
            self.variable[variable.path] = variable.why
            if variable.legal and self.legal_key is None:
                self.legal_key = variable.path
            return None

    def _field(self, schema: Any, path: str) -> FieldCodec:
        if not isinstance(schema, Mapping):
            raise UnmappableFieldError(path, "the field's schema is not an object", schema)
        override = self.field_spaces.get(path)
        if override is not None:
            return self._maybe_optional(self._explicit(override, path, schema), schema)
        if X_SPACE in schema:
            return self._maybe_optional(self._x_space(schema, path), schema)
        resolved, refs = self._resolve(schema, path)
        if X_SPACE in resolved:
            return self._maybe_optional(self._x_space(resolved, path), schema)
        self._expanding.extend(refs)
        try:
            return self._kind(resolved, path)
        except SpaceMappingError:
            raise
        except (ValueError, TypeError, OverflowError, AssertionError) as exc:
            # gymnasium < 1.3 checks some space arguments with assert.
            reason = f"the schema's values do not form a space: {exc}"
            raise UnmappableFieldError(path, reason, schema) from exc
        finally:
            del self._expanding[len(self._expanding) - len(refs) :]

    def _kind(self, schema: Mapping[str, Any], path: str) -> FieldCodec:
        union = schema.get("anyOf", schema.get("oneOf"))
        if union is not None:
            return self._union(schema, union, path)
        types = schema.get("type")
        if isinstance(types, list):
            non_null = [t for t in types if t != "null"]
            if len(non_null) != 1:
                raise UnmappableFieldError(
                    path, f"a union of types {types} has no single space", schema
                )
            inner = self._kind({**schema, "type": non_null[0]}, path)
            return OptionalCodec(inner) if "null" in types else inner
        if "enum" in schema or "const" in schema:
            values = schema["enum"] if "enum" in schema else [schema["const"]]
            if not isinstance(values, list) or not values:
                raise UnmappableFieldError(path, "an empty or invalid enum", schema)
            return EnumCodec(dedupe_values(values))
        kind = types or implied_type(schema)
        if path in self.field_shapes and kind != "array":
            raise UnmappableFieldError(
                path, f"field_shapes is given but the field is a {kind}", schema
            )
        if kind == "boolean":
            return BoolCodec()
        if kind == "integer":
            return self._integer(schema, path)
        if kind == "number":
            low, high = self._float_bounds([schema], np.dtype(np.float32))
            return NumericArrayCodec(spaces.Box(low[0], high[0], (), np.float32))
        if kind == "string":
            return self._string(schema)
        if kind == "array":
            return self._array(schema, path)
        if kind == "object":
            return self._object(schema, path)
        if kind == "null":
            raise UnmappableFieldError(path, "the field is always null", schema)
        raise UnmappableFieldError(path, f"the schema gives no usable type (type={kind!r})", schema)

    def _maybe_optional(self, codec: FieldCodec, schema: Mapping[str, Any]) -> FieldCodec:
        union = schema.get("anyOf", schema.get("oneOf"))
        types = schema.get("type")
        if isinstance(union, list):
            nullable = any(isinstance(s, Mapping) and s.get("type") == "null" for s in union)
        else:
            nullable = isinstance(types, list) and "null" in types
        return OptionalCodec(codec) if nullable else codec

    def _explicit(self, space: Any, path: str, schema: Any) -> FieldCodec:
        if not isinstance(space, spaces.Space):
            raise SpaceMappingError(
                f"field_spaces[{path!r}] must be a gymnasium space, got {type(space).__name__}",
                field=path,
                schema=schema,
            )
        return codec_for_space(space, path)

    def _x_space(self, schema: Mapping[str, Any], path: str) -> FieldCodec:
        return codec_for_space(space_from_json(schema[X_SPACE], field=path), path)

    # ------------------------------------------------------------------ $ref

    def _resolve(
        self, schema: Mapping[str, Any], path: str
    ) -> tuple[Mapping[str, Any], tuple[str, ...]]:
        """Follow ``$ref`` (and a one-element ``allOf``) to the schema it names: keys next to
        ``$ref`` (``default``, ``description``, ``x-space``) win over the target's. Returns the
        merged schema and the chain of references followed."""
        refs: list[str] = []
        while True:
            all_of = schema.get("allOf")
            if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], Mapping):
                rest = {k: v for k, v in schema.items() if k != "allOf"}
                schema = {**all_of[0], **rest}
            ref = schema.get("$ref")
            if ref is None:
                return schema, tuple(refs)
            if ref in self._expanding or ref in refs:
                raise UnmappableFieldError(
                    path, f"the model {ref!r} is recursive (it contains itself)", schema
                )
            refs.append(ref)
            target = self._lookup(ref, path, schema)
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **siblings}

    def _lookup(self, ref: Any, path: str, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise UnmappableFieldError(
                path, f"the reference {ref!r} is not local to the schema", schema
            )
        target: Any = self.root
        for part in ref[1:].split("/"):
            if not part:
                continue
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, Mapping) or part not in target:
                raise UnmappableFieldError(path, f"the reference {ref!r} does not resolve", schema)
            target = target[part]
        if not isinstance(target, Mapping):
            raise UnmappableFieldError(
                path, f"the reference {ref!r} does not name a schema", schema
            )
        return target

    # ------------------------------------------------------------------ kinds

    def _union(self, schema: Mapping[str, Any], union: Any, path: str) -> FieldCodec:
        if not isinstance(union, list) or not union:
            raise UnmappableFieldError(path, "an empty or invalid anyOf/oneOf", schema)
        if not all(isinstance(b, Mapping) for b in union):
            raise UnmappableFieldError(path, "a union member is not a schema", schema)
        branches = [b for b in union if b.get("type") != "null"]
        nullable = len(branches) < len(union)
        if not branches:
            raise UnmappableFieldError(path, "the field is always null", schema)
        if len(branches) == 1:
            codec = self._field(branches[0], path)
        else:
            resolved = [self._resolve(b, path)[0] for b in branches]
            if not all("const" in b or isinstance(b.get("enum"), list) for b in resolved):
                kinds = [b.get("type", "?") for b in resolved]
                scalars = not {"object", "array"} & set(kinds)  # else only leaving it out helps
                raise UnmappableFieldError(
                    path,
                    f"a union of {kinds} has no single space",
                    schema,
                    example="gymnasium.spaces.Discrete(n)" if scalars else "",
                    space_fix=scalars,
                )
            values: list[Any] = []
            for branch in resolved:
                values.extend(branch["enum"] if "enum" in branch else [branch["const"]])
            codec = EnumCodec(dedupe_values(values))
        return OptionalCodec(codec) if nullable else codec

    def _integer(self, schema: Mapping[str, Any], path: str) -> FieldCodec:
        low, high = int_bounds(schema)
        if low is not None and high is not None:
            if high < low:
                raise UnmappableFieldError(
                    path, f"the integer range [{low}, {high}] is empty", schema
                )
            return DiscreteCodec(spaces.Discrete(high - low + 1, start=low))
        if self.role == "action":
            declared = self.hints.range_for(path)
            if declared is not None:
                return self._discrete_declared(*declared, path)
            legal = legal_integers(self.hints.legal)
            observed = (
                f"; observed, not declared: legal actions {min(legal)}..{max(legal)} at one "
                "reset (a sample: the game may have more)"
                if legal is not None
                else ""
            )
            probed = self.hints.legal is not None or self.hints.spec is not None
            raise UnmappableFieldError(
                path,
                "an integer action without both minimum and maximum, and the server declares "
                "no range (no action_spec minimum/maximum, no num_actions field)" + observed,
                schema,
                example=observed_discrete(legal),
                also="give the schema bounds (pydantic Field(ge=0, lt=n))",
                needs_data=not probed,
                observed=legal is not None,
            )
        dtype_min, dtype_max = int_limits(np.dtype(np.int64))
        box = spaces.Box(
            dtype_min if low is None else max(low, dtype_min),
            dtype_max if high is None else min(high, dtype_max),
            (),
            np.int64,
        )
        return NumericArrayCodec(box)

    def _discrete_declared(self, low: int, high: int, source: str, path: str) -> FieldCodec:
        """``Discrete`` over the integer range ``low .. high`` the server declares."""
        space: spaces.Discrete = spaces.Discrete(high - low + 1, start=low)
        value = f"gymnasium.spaces.Discrete({int(space.n)}" + (f", start={low})" if low else ")")
        self.inferred.append(Inference(self.role, path, "field_spaces", value, source))
        return DiscreteCodec(space)

    def _string(self, schema: Mapping[str, Any]) -> TextCodec:
        default = (
            DEFAULT_OBSERVATION_TEXT_MAX_LENGTH
            if self.role == "observation"
            else DEFAULT_ACTION_TEXT_MAX_LENGTH
        )
        max_length = int(schema.get("maxLength", default))
        min_length = int(schema.get("minLength", 0))
        if self.role == "observation":  # a server's text may hold any character
            return TextCodec(
                FreeText(max_length, min_length=min_length, charset=DEFAULT_TEXT_CHARSET)
            )
        return TextCodec(DefaultCharsetText(max_length, min_length=min_length))

    # ------------------------------------------------------------------ containers

    def _object(self, schema: Mapping[str, Any], path: str) -> FieldCodec:
        """An ``object`` field: see :mod:`openenv_gym.spaces.container_rules`."""
        raise NotImplementedError

    def _array(self, schema: Mapping[str, Any], path: str) -> FieldCodec:
        """An ``array`` field: see :mod:`openenv_gym.spaces.container_rules`."""
        raise NotImplementedError

    # ------------------------------------------------------------------ numbers

    def _numeric(
        self,
        leaves: Sequence[Mapping[str, Any]],
        shape: tuple[int, ...],
        path: str,
        schema: Mapping[str, Any],
    ) -> NumericArrayCodec:
        """A numeric space of ``shape`` from one leaf schema or one per element."""
        kind = leaves[0].get("type")
        if kind == "boolean":
            n = shape[0] if len(shape) == 1 else list(shape)
            return NumericArrayCodec(spaces.MultiBinary(n), wire_bool=True)
        hint = schema.get(X_DTYPE)
        try:
            dtype = np.dtype(hint) if hint is not None else None
        except TypeError:
            raise UnmappableFieldError(
                path, f"{X_DTYPE} {hint!r} is not a numpy dtype", schema
            ) from None
        if dtype is not None and dtype.kind not in "iuf":
            raise UnmappableFieldError(path, f"{X_DTYPE} {hint!r} is not a numeric dtype", schema)
        if dtype is None:
            dtype = np.dtype(np.int64 if kind == "integer" else np.float32)
        if dtype.kind == "f":
            low_f, high_f = self._float_bounds(leaves, dtype)
            return NumericArrayCodec(
                spaces.Box(
                    shaped_values(low_f, shape), shaped_values(high_f, shape), shape, dtype.type
                )
            )
        bounds = [int_bounds(leaf) for leaf in leaves]
        if self.role == "action":
            if any(low is None or high is None for low, high in bounds):
                raise UnmappableFieldError(
                    path,
                    "an integer action array needs items with minimum and maximum",
                    schema,
                    example=f"gymnasium.spaces.MultiDiscrete(nvec) with nvec of shape {shape}",
                    also="give the items bounds (list[Annotated[int, Field(ge=0, lt=n)]])",
                )
            starts = np.array([low for low, _ in bounds], dtype=np.int64)
            stops = np.array([high for _, high in bounds], dtype=np.int64)
            if np.any(stops < starts):
                raise UnmappableFieldError(path, "an items range is empty", schema)
            return NumericArrayCodec(
                spaces.MultiDiscrete(
                    shaped_values(stops - starts + 1, shape),
                    dtype=dtype.type,
                    start=shaped_values(starts, shape),
                )
            )
        dtype_min, dtype_max = int_limits(dtype)
        low_i = np.array([dtype_min if lo is None else max(lo, dtype_min) for lo, _ in bounds])
        high_i = np.array([dtype_max if hi is None else min(hi, dtype_max) for _, hi in bounds])
        return NumericArrayCodec(
            spaces.Box(shaped_values(low_i, shape), shaped_values(high_i, shape), shape, dtype.type)
        )

    def _float_bounds(
        self, leaves: Sequence[Mapping[str, Any]], dtype: np.dtype[Any]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per-leaf bounds in ``dtype``: rounded outward for observations, inward for actions."""
        inward = self.role == "action"
        lows, highs = [], []
        for leaf in leaves:
            low, high = dtype.type(-np.inf), dtype.type(np.inf)
            minimum, low_exclusive = keyword_bound(leaf, "minimum", "exclusiveMinimum")
            maximum, high_exclusive = keyword_bound(leaf, "maximum", "exclusiveMaximum")
            if minimum is not None:
                low = round_bound(minimum, dtype, up=inward, strict=inward and low_exclusive)
            if maximum is not None:
                high = round_bound(maximum, dtype, up=not inward, strict=inward and high_exclusive)
            lows.append(low)
            highs.append(high)
        return np.array(lows, dtype=dtype), np.array(highs, dtype=dtype)
