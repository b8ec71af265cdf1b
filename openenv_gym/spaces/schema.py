"""JSON Schema (pydantic ``model_json_schema()`` output) -> field codecs and spaces.

This is the one place where schema fields become Gymnasium spaces. The rules, in the order
they are tried for each field (dotted path ``"board.cells"`` for nested fields):

1. ``field_spaces[path]`` (the caller's explicit space) wins; it is used with the generic wire
   form of :func:`~openenv_gym.spaces.fields.codec_for_space`.
2. ``"x-space"`` in the field's schema: exactly that space (:func:`space_from_json`).
3. ``$ref`` is followed (siblings such as ``default`` kept), ``allOf`` of one schema is unwrapped.
4. ``anyOf``/``oneOf``/``type: [..]`` with ``null``: ``Optional[X]`` -> X's space; ``null``
   decodes to X's neutral element (see :mod:`openenv_gym.spaces.fields`). Unions whose members
   are all ``const``/``enum`` become one enum. Other unions cannot be mapped.
5. ``enum`` / ``const`` -> ``Discrete(len)`` with a value table.
6. ``boolean`` -> ``Discrete(2)``.
7. ``integer`` with both bounds (``minimum``/``maximum``/``exclusive*``) ->
   ``Discrete(max - min + 1, start=min)``. Unbounded: observations get
   ``Box(int64 min, int64 max - 1, shape=())`` (the top value is left out so that
   ``Box.sample()`` works); actions raise (sampling would be meaningless).
8. ``number`` -> ``Box(low, high, (), float32)`` (bounds or +-inf). Bounds are rounded to
   float32 outward for observations (a float64 value on the bound stays inside) and inward for
   actions (a sampled action never leaves the server's range).
9. ``string`` -> ``Text(max_length=maxLength or the default, min_length=minLength or 0,
   charset=DEFAULT_TEXT_CHARSET)``. ``pattern`` and ``format`` are not enforced.
10. ``array``: a shape from ``field_shapes[path]`` or ``"x-shape"`` (dtype from ``"x-dtype"``
    when given), else a fixed length (``minItems == maxItems``, nested for more dims, or
    ``prefixItems``). Numbers -> ``Box`` float32, integers -> ``Box`` int64 for observations and
    ``MultiDiscrete(nvec, start=min)`` for actions (bounds required), booleans ->
    ``MultiBinary``. Fixed-length arrays of anything else -> ``Tuple``.
11. ``object`` with ``properties`` / ``$ref`` to a model -> ``Dict`` of its fields, in schema
    order. Observations take every field; actions take the required fields plus those named
    in ``include`` (or given a ``field_spaces`` entry); optional fields are filled in by the
    server's defaults.
12. Anything else (``dict[str, X]``, ``Any``, variable-length arrays, mixed unions) raises
    :class:`~openenv_gym.errors.SpaceMappingError` naming the dotted field, showing the schema
    fragment, and saying how to pass an explicit space.

At the top level, observations leave out ``reward``, ``done``, ``metadata`` (the OpenEnv
``Observation`` base fields), the ``x-truncated-key`` field and ``exclude``; actions leave out
``metadata``. ``x-observation-key`` / ``x-action-key`` make one field the whole space.
A single-field action space is that field's space (not a Dict).

Text defaults: string fields get a :class:`~openenv_gym.spaces.fields.DefaultCharsetText` (a
plain ``Text`` whose repr names its charset instead of printing it).
:data:`DEFAULT_TEXT_CHARSET` is ``string.printable`` (ASCII letters, digits,
punctuation, space and ``\\t\\n\\r\\x0b\\x0c``) plus the assigned, non-control characters of
Latin-1 Supplement and Latin Extended-A/B (U+00A0-U+024F), Greek (U+0370-U+03FF), Cyrillic
(U+0400-U+04FF), General Punctuation (U+2000-U+206F), Currency Symbols (U+20A0-U+20CF),
Arrows (U+2190-U+21FF), Box Drawing, Block Elements and Geometric Shapes (U+2500-U+25FF) and
Miscellaneous Symbols (U+2600-U+26FF, e.g. chess pieces). Other characters (CJK, emoji)
need an explicit ``Text`` space. :data:`DEFAULT_ACTION_TEXT_MAX_LENGTH` is 4096 (sampled
actions stay short); :data:`DEFAULT_OBSERVATION_TEXT_MAX_LENGTH` is 65536 (long prompts
and documents decode).

Example:
    >>> mapping = map_action_schema(
    ...     {"properties": {"move": {"type": "string", "maxLength": 5}}, "required": ["move"]}
    ... )
    >>> mapping.key, mapping.codec.space.max_length
    ('move', 5)
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

import numpy as np
from gymnasium import spaces

from openenv_gym.errors import SpaceMappingError
from openenv_gym.spaces.fields import (
    BoolCodec,
    DefaultCharsetText,
    DictCodec,
    DiscreteCodec,
    EnumCodec,
    FieldCodec,
    NumericArrayCodec,
    OptionalCodec,
    TextCodec,
    TupleCodec,
    codec_for_space,
)
from openenv_gym.spaces.inference import (
    MISSING,
    ActionHints,
    Inference,
    is_legal_actions_name,
    legal_integers,
    numeric_shape,
    pin_inference,
    sample_at,
    space_source,
    spec_bounds,
    spec_shape,
)
from openenv_gym.spaces.problems import (
    CODEC_KEYWORDS,
    MappingProblem,
    Option,
    Role,
    format_problems,
    fragment_text,
)
from openenv_gym.spaces.serialization import (
    X_ACTION_KEY,
    X_OBSERVATION_KEY,
    X_SPACE,
    X_TERMINATED_KEY,
    X_TRUNCATED_KEY,
    space_from_json,
)

#: Field-level schema hint: the shape of a variable-length array, e.g. ``[210, 160, 3]``.
X_SHAPE: Final = "x-shape"
#: Field-level schema hint: the numpy dtype of an array mapped to a Box, e.g. ``"uint8"``.
X_DTYPE: Final = "x-dtype"

#: Observation fields of the OpenEnv ``Observation`` base class, never part of the space.
OBSERVATION_ENVELOPE_FIELDS: Final = ("reward", "done", "metadata")
#: Action fields of the OpenEnv ``Action`` base class, never part of the space.
ACTION_ENVELOPE_FIELDS: Final = ("metadata",)

#: ``max_length`` of an action string field without ``maxLength``.
DEFAULT_ACTION_TEXT_MAX_LENGTH: Final = 4096
#: ``max_length`` of an observation string field without ``maxLength``.
DEFAULT_OBSERVATION_TEXT_MAX_LENGTH: Final = 65536

_NUMERIC_TYPES: Final = ("number", "integer", "boolean")


@dataclass(frozen=True)
class SchemaMapping:
    """The result of mapping a top-level action or observation schema.

    Attributes:
        codec: The root codec; its ``space`` is the env's space.
        key: When the space is one field's space: that field's wire key; else ``None``
            (the root codec is a :class:`DictCodec` over the wire object).
        truncated_key: The ``x-truncated-key`` field, if any (observations only).
        terminated_key: The ``x-terminated-key`` field, if any (observations only).
        inferred: The spaces taken from the data (see :mod:`openenv_gym.spaces.inference`).
        variable: Observation fields without a fixed shape, left to ``info``: path -> why.
        legal_key: The observation field listing the legal actions, if any.
    """

    codec: FieldCodec
    key: str | None
    truncated_key: str | None = None
    terminated_key: str | None = None
    inferred: tuple[Inference, ...] = ()
    variable: Mapping[str, str] = field(default_factory=dict)
    legal_key: str | None = None


class _UnmappableError(Exception):
    """Internal: one field could not be mapped (collected, then raised as one error).

    ``example`` is a space expression for the advice (``field_spaces={path: example}``);
    ``also`` is one more way out, appended to the advice.
    """

    def __init__(
        self,
        path: str,
        reason: str,
        fragment: Any,
        *,
        example: str = "",
        also: str = "",
        shape_fix: bool = False,
        needs_data: bool = False,
    ) -> None:
        super().__init__(reason)
        self.path = path
        self.reason = reason
        self.fragment = fragment
        self.example = example
        self.also = also
        self.shape_fix = shape_fix
        self.needs_data = needs_data


class _VariableFieldError(Exception):
    """Internal: an observation field without a fixed shape; it goes to ``info``."""

    def __init__(self, path: str, why: str, *, legal: bool = False) -> None:
        super().__init__(why)
        self.path = path
        self.why = why
        self.legal = legal


def map_observation_schema(
    schema: Mapping[str, Any],
    *,
    field_spaces: Mapping[str, spaces.Space[Any]] | None = None,
    field_shapes: Mapping[str, Sequence[int]] | None = None,
    exclude: Collection[str] = (),
    sample: Mapping[str, Any] | None = None,
) -> SchemaMapping:
    """Map an observation schema (see the module docstring for the rules).

    ``sample`` is a wire observation (e.g. the reset observation): open shapes are taken
    from it (see :mod:`openenv_gym.spaces.inference`).

    Raises:
        SpaceMappingError: A field cannot be mapped, or an option names an unknown field;
            ``problems`` lists every one.
    """
    walker = _Walker(
        schema, "observation", field_spaces, field_shapes, exclude=exclude, sample=sample
    )
    return walker.map_top()


def map_action_schema(
    schema: Mapping[str, Any],
    *,
    field_spaces: Mapping[str, spaces.Space[Any]] | None = None,
    field_shapes: Mapping[str, Sequence[int]] | None = None,
    include: Collection[str] = (),
    hints: ActionHints | None = None,
) -> SchemaMapping:
    """Map an action schema (see the module docstring for the rules).

    ``hints`` (legal actions, the state's ``action_spec``) close open action shapes.

    Raises:
        SpaceMappingError: A field cannot be mapped, or an option names an unknown field;
            ``problems`` lists every one.
    """
    walker = _Walker(schema, "action", field_spaces, field_shapes, include=include, hints=hints)
    return walker.map_top()


def _names(value: Collection[str] | str) -> frozenset[str]:
    return frozenset([value] if isinstance(value, str) else value)


_fragment_text = fragment_text


class _Walker:
    """Walks one top-level schema, building codecs and collecting unmappable fields."""

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
        self.errors: list[_UnmappableError] = []
        self.known: set[str] = set()  # field paths an option may name
        self.left_out: set[str] = set()  # fields never in the space: exclude/include are no-ops
        self._expanding: list[str] = []  # $refs being expanded (recursion guard)
        self.sample = sample
        self.hints = hints or ActionHints()
        self.inferred: list[Inference] = []
        self.variable: dict[str, str] = {}
        self.legal_key: str | None = None
        self.terminated_key: str | None = None

    # ------------------------------------------------------------------ top level

    def map_top(self) -> SchemaMapping:
        try:
            root, _ = self._resolve(self.root, "")
        except _UnmappableError as error:
            self.errors.append(error)
            self._finish()
            raise  # pragma: no cover - _finish raised
        properties = root.get("properties")
        if not isinstance(properties, Mapping) or not properties:
            raise SpaceMappingError(
                f"the {self.role} schema has no 'properties'; expected an object schema such as "
                f"Model.model_json_schema(). Schema seen: {_fragment_text(root)}",
                field="",
                schema=dict(root),
            )
        flag = X_OBSERVATION_KEY if self.role == "observation" else X_ACTION_KEY
        single = self._top_key(root, flag, properties)
        truncated = terminated = None
        if self.role == "observation":
            truncated = self._top_key(root, X_TRUNCATED_KEY, properties)
            terminated = self._top_key(root, X_TERMINATED_KEY, properties)
        self.terminated_key = terminated

        envelope = (
            OBSERVATION_ENVELOPE_FIELDS if self.role == "observation" else ACTION_ENVELOPE_FIELDS
        )
        self.left_out.update(
            name for name in (*envelope, truncated, terminated) if name in properties
        )
        if single is not None:
            self.left_out.update(name for name in properties if name != single)
            self.known.add(single)
            codec = self._guarded(properties[single], single)
            self._finish()
            return self._mapping(cast(FieldCodec, codec), single, truncated)

        skip = {*envelope, truncated, terminated}
        required = set(root.get("required") or ()) - skip
        # An action model whose fields all have defaults (dm_control's ``values``) sends them all.
        take_all = self.role == "action" and not required.intersection(properties)
        selected = self._select(root, properties, "", skip=skip, take_all=take_all)
        self._finish()
        if not selected:
            advice = (
                "name optional fields to send in include=[...]"
                if self.role == "action"
                else "exclude fewer fields"
            )
            raise SpaceMappingError(
                f"the {self.role} schema has no fields left to form a space; {advice}. "
                f"Schema seen: {_fragment_text(root)}",
                field="",
                schema=dict(root),
            )
        if self.role == "action" and len(selected) == 1:
            key, codec = selected[0]
            return self._mapping(codec, key, None)
        return self._mapping(DictCodec(selected), None, truncated)

    def _mapping(self, codec: FieldCodec, key: str | None, truncated: str | None) -> SchemaMapping:
        return SchemaMapping(
            codec,
            key,
            truncated,
            terminated_key=self.terminated_key,
            inferred=tuple(self.inferred),
            variable=dict(self.variable),
            legal_key=self.legal_key,
        )

    def _top_key(
        self, root: Mapping[str, Any], flag: str, properties: Mapping[str, Any]
    ) -> str | None:
        key = root.get(flag, self.root.get(flag))
        if key is None:
            return None
        if not isinstance(key, str) or key not in properties:
            raise SpaceMappingError(
                f"the {self.role} schema's {flag!r} is {key!r}, which is not one of its fields "
                f"{list(properties)}; fix the server's schema",
                field=str(key),
                schema={flag: key},
            )
        return key

    def _finish(self) -> None:
        """Raise one error for unknown option names and unmappable fields (all listed)."""
        problems = self.problems()
        if not problems:
            return
        first = problems[0]
        if not first.path and first.fragment is not None and not first.fixes:
            message = (
                f"cannot map the {self.role} schema: {first.reason}. "
                f"JSON Schema seen: {_fragment_text(first.fragment)}"
            )
        else:
            message = format_problems(problems, CODEC_KEYWORDS)
        raise SpaceMappingError(
            message, field=first.path, schema=first.fragment, problems=tuple(problems)
        )

    def problems(self) -> list[MappingProblem]:
        """Unknown option names and unmappable fields, as :class:`MappingProblem` objects."""
        problems: list[MappingProblem] = []
        options: tuple[tuple[Option, set[str]], ...] = (
            ("field_spaces", set(self.field_spaces)),
            ("field_shapes", set(self.field_shapes)),
            ("exclude", set(self.exclude - self.left_out)),
            ("include", set(self.include - self.left_out)),
        )
        for option, names in options:
            for name in sorted(names - self.known):
                problems.append(
                    MappingProblem(
                        self.role,
                        name,
                        f"names {name!r}, which is not a mappable field of the {self.role} "
                        f"schema; its fields are {sorted(self.known)}",
                        option=option,
                    )
                )
        problems.extend(self._problem(error) for error in self.errors)
        return problems

    def _problem(self, error: _UnmappableError) -> MappingProblem:
        fixes: list[tuple[Option, str]] = []
        if error.shape_fix:
            fixes.append(("field_shapes", "(n,)"))
        if self.role == "observation":
            fixes.append(("exclude", ""))  # works as pasted: the field goes to info
        example = error.example or "gymnasium.spaces.Box(low, high, shape, dtype)"
        fixes.append(("field_spaces", example))
        reason = error.reason
        if error.also:
            reason += f" (or {error.also})"
        if error.path:
            reason += (
                f"; or the server can publish '{X_SPACE}' for the field "
                "(openenv_gym.spaces.space_to_json(space))"
            )
        return MappingProblem(
            self.role,
            error.path,
            reason,
            error.fragment,
            fixes=tuple(fixes) if error.path else (),
            needs_data=error.needs_data,
        )

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
        for key, sub in properties.items():
            if key in skip:
                continue
            sub_path = _join(path, key)
            self.known.add(sub_path)
            if self.role == "observation" and sub_path in self.exclude:
                continue
            if (
                self.role == "action"
                and not take_all
                and key not in required
                and sub_path not in self.include
                and sub_path not in self.field_spaces
            ):
                continue
            codec = self._guarded(sub, sub_path)
            if codec is not None:
                selected.append((key, codec))
        return selected

    def _guarded(self, schema: Any, path: str) -> FieldCodec | None:
        try:
            return self._field(schema, path)
        except _UnmappableError as error:
            self.errors.append(error)
            return None
        except _VariableFieldError as variable:
            self.variable[variable.path] = variable.why
            if variable.legal and self.legal_key is None:
                self.legal_key = variable.path
            return None

    def _field(self, schema: Any, path: str) -> FieldCodec:
        if not isinstance(schema, Mapping):
            raise _UnmappableError(path, "the field's schema is not an object", schema)
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
            raise _UnmappableError(path, reason, schema) from exc
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
                raise _UnmappableError(
                    path, f"a union of types {types} has no single space", schema
                )
            inner = self._kind({**schema, "type": non_null[0]}, path)
            return OptionalCodec(inner) if "null" in types else inner
        if "enum" in schema or "const" in schema:
            values = schema["enum"] if "enum" in schema else [schema["const"]]
            if not isinstance(values, list) or not values:
                raise _UnmappableError(path, "an empty or invalid enum", schema)
            return EnumCodec(_dedupe(values))
        kind = types or _implied_type(schema)
        if path in self.field_shapes and kind != "array":
            raise _UnmappableError(path, f"field_shapes is given but the field is a {kind}", schema)
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
            raise _UnmappableError(path, "the field is always null", schema)
        raise _UnmappableError(path, f"the schema gives no usable type (type={kind!r})", schema)

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
        """Follow ``$ref`` (and unwrap a one-element ``allOf``) to the schema it names.

        Keys next to ``$ref`` (``default``, ``description``, ``x-space``) win over the
        target's. Returns the merged schema and the chain of references followed.
        """
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
                raise _UnmappableError(
                    path, f"the model {ref!r} is recursive (it contains itself)", schema
                )
            refs.append(ref)
            target = self._lookup(ref, path, schema)
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **siblings}

    def _lookup(self, ref: Any, path: str, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise _UnmappableError(
                path, f"the reference {ref!r} is not local to the schema", schema
            )
        target: Any = self.root
        for part in ref[1:].split("/"):
            if not part:
                continue
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, Mapping) or part not in target:
                raise _UnmappableError(path, f"the reference {ref!r} does not resolve", schema)
            target = target[part]
        if not isinstance(target, Mapping):
            raise _UnmappableError(path, f"the reference {ref!r} does not name a schema", schema)
        return target

    # ------------------------------------------------------------------ kinds

    def _union(self, schema: Mapping[str, Any], union: Any, path: str) -> FieldCodec:
        if not isinstance(union, list) or not union:
            raise _UnmappableError(path, "an empty or invalid anyOf/oneOf", schema)
        if not all(isinstance(b, Mapping) for b in union):
            raise _UnmappableError(path, "a union member is not a schema", schema)
        branches = [b for b in union if b.get("type") != "null"]
        nullable = len(branches) < len(union)
        if not branches:
            raise _UnmappableError(path, "the field is always null", schema)
        if len(branches) == 1:
            codec = self._field(branches[0], path)
        else:
            resolved = [self._resolve(b, path)[0] for b in branches]
            if not all("const" in b or isinstance(b.get("enum"), list) for b in resolved):
                kinds = [b.get("type", "?") for b in resolved]
                raise _UnmappableError(
                    path,
                    f"a union of {kinds} has no single space",
                    schema,
                    example="gymnasium.spaces.Discrete(n)",
                )
            values: list[Any] = []
            for branch in resolved:
                values.extend(branch["enum"] if "enum" in branch else [branch["const"]])
            codec = EnumCodec(_dedupe(values))
        return OptionalCodec(codec) if nullable else codec

    def _integer(self, schema: Mapping[str, Any], path: str) -> FieldCodec:
        low, high = _int_bounds(schema)
        if low is not None and high is not None:
            if high < low:
                raise _UnmappableError(path, f"the integer range [{low}, {high}] is empty", schema)
            return DiscreteCodec(spaces.Discrete(high - low + 1, start=low))
        if self.role == "action":
            legal = legal_integers(self.hints.legal)
            if legal is not None:
                return self._discrete_from_legal(legal, low, path)
            raise _UnmappableError(
                path,
                "an integer action without both minimum and maximum cannot be sampled, and "
                "the observation lists no legal actions to take its range from",
                schema,
                example="gymnasium.spaces.Discrete(n)",
                also="give the schema bounds (pydantic Field(ge=0, lt=n))",
                needs_data=self.hints.legal is None,
            )
        dtype_min, dtype_max = _int_limits(np.dtype(np.int64))
        box = spaces.Box(
            dtype_min if low is None else max(low, dtype_min),
            dtype_max if high is None else min(high, dtype_max),
            (),
            np.int64,
        )
        return NumericArrayCodec(box)

    def _discrete_from_legal(self, legal: list[int], low: int | None, path: str) -> FieldCodec:
        """``Discrete`` over ``start .. max(legal)``: the legal actions of the reset."""
        start = min(0, *legal) if low is None else low
        if min(legal) < start:
            start = min(legal)
        space: spaces.Discrete = spaces.Discrete(max(legal) - start + 1, start=start)
        value = f"gymnasium.spaces.Discrete({int(space.n)}" + (
            f", start={start})" if start else ")"
        )
        self.inferred.append(
            Inference(self.role, path, "field_spaces", value, "the legal actions at reset")
        )
        return DiscreteCodec(space)

    def _string(self, schema: Mapping[str, Any]) -> TextCodec:
        default = (
            DEFAULT_OBSERVATION_TEXT_MAX_LENGTH
            if self.role == "observation"
            else DEFAULT_ACTION_TEXT_MAX_LENGTH
        )
        max_length = int(schema.get("maxLength", default))
        min_length = int(schema.get("minLength", 0))
        return TextCodec(DefaultCharsetText(max_length, min_length=min_length))

    def _object(self, schema: Mapping[str, Any], path: str) -> FieldCodec:
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or not properties:
            extra = schema.get("additionalProperties")
            if isinstance(extra, Mapping) and extra:
                return self._keyed_object(schema, extra, path)
            if extra not in (None, False) and self.role == "observation":
                raise _VariableFieldError(path, "a dict of free-form values")
            reason = (
                "a dict with free-form keys (dict[str, ...]) has no fixed set of fields"
                if extra not in (None, False)
                else "an object without properties"
            )
            raise _UnmappableError(
                path, reason, schema, example="gymnasium.spaces.Dict([(key, space), ...])"
            )
        errors_before = len(self.errors)
        selected = self._select(schema, properties, path)
        if not selected and len(self.errors) == errors_before:
            raise _UnmappableError(
                path,
                "no fields are left to form a space",
                schema,
                also="name optional fields in include=[...]" if self.role == "action" else "",
            )
        return DictCodec(selected)

    def _keyed_object(
        self, schema: Mapping[str, Any], values: Mapping[str, Any], path: str
    ) -> FieldCodec:
        """``dict[str, X]``: keys from ``field_shapes``/``field_spaces`` entries under the
        field, else from the sample (the reset observation)."""
        prefix = f"{path}."
        pinned = [
            name[len(prefix) :]
            for name in (*self.field_shapes, *self.field_spaces)
            if name.startswith(prefix) and "." not in name[len(prefix) :]
        ]
        value = MISSING if self.sample is None else sample_at(self.sample, path)
        if pinned:
            keys = list(dict.fromkeys(pinned))
        elif isinstance(value, Mapping) and value:
            keys = [str(key) for key in value]
        elif self.role == "observation" and isinstance(value, Mapping):
            raise _VariableFieldError(path, "an empty dict of free-form keys at reset")
        else:
            raise _UnmappableError(
                path,
                "a dict with free-form keys (dict[str, ...]) has no fixed set of fields"
                + (" and no reset observation to take them from" if value is MISSING else ""),
                schema,
                example="gymnasium.spaces.Dict({key: space, ...})",
                needs_data=value is MISSING and self.role == "observation",
            )
        items: list[tuple[str, FieldCodec]] = []
        inferred_before = len(self.inferred)
        for key in keys:
            sub = _join(path, key)
            self.known.add(sub)
            codec = self._guarded(values, sub)
            if codec is not None:
                items.append((key, codec))
        if not pinned:
            # One pin for the whole dict: the shapes of its keys (or their spaces).
            del self.inferred[inferred_before:]
            for key, codec in items:
                self.inferred.append(pin_inference(self.role, _join(path, key), codec.space))
        if not items:
            raise _VariableFieldError(path, "no key of the dict maps to a space")
        return DictCodec(items)

    # ------------------------------------------------------------------ arrays

    def _array(self, schema: Mapping[str, Any], path: str) -> FieldCodec:
        hint = self.field_shapes.get(path, schema.get(X_SHAPE))
        if hint is not None:
            return self._shaped_array(schema, path, hint)
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list) and prefix and schema.get("items") in (None, False):
            return self._prefix_array(schema, prefix, path)
        length = _fixed_length(schema)
        if length is None:
            return self._open_array(schema, path)
        items = schema.get("items")
        if not isinstance(items, Mapping):
            raise _UnmappableError(path, "the array's items have no schema", schema)
        dims = [length]
        leaf, _ = self._resolve(items, path)
        while leaf.get("type") == "array":
            count = _fixed_length(leaf)
            inner = leaf.get("items")
            if count is None or not isinstance(inner, Mapping):
                break
            dims.append(count)
            leaf, _ = self._resolve(inner, path)
        if _plain_numeric(leaf):
            return self._numeric([leaf], tuple(dims), path, schema)
        return self._tuple([items] * length, path, schema)

    def _open_array(self, schema: Mapping[str, Any], path: str) -> FieldCodec:
        """An array without a fixed length: its shape from the data, or ``info``."""
        leaf: Mapping[str, Any] = schema
        while leaf.get("type") == "array" and isinstance(leaf.get("items"), Mapping):
            leaf, _ = self._resolve(leaf["items"], path)
        numeric = _plain_numeric(leaf) and leaf is not schema
        if self.role == "observation":
            if is_legal_actions_name(path) and leaf.get("type") in ("integer", "string"):
                raise _VariableFieldError(
                    path, "the legal actions (they change as the game goes on)", legal=True
                )
            if not numeric:
                raise _VariableFieldError(path, "a list of non-numeric items has no fixed shape")
            value = MISSING if self.sample is None else sample_at(self.sample, path)
            if value is not MISSING:
                shape = numeric_shape(value)
                if shape is None:
                    raise _VariableFieldError(
                        path, "empty or ragged in the reset observation, so it has no shape"
                    )
                codec = self._numeric([leaf], shape, path, schema)
                self.inferred.append(pin_inference(self.role, path, codec.space))
                return codec
        elif numeric:
            shape = spec_shape(self.hints.spec)
            if shape is not None and leaf.get("type") == "number":
                bounds = spec_bounds(cast(Mapping[str, Any], self.hints.spec), shape)
                if bounds is not None:
                    box = spaces.Box(bounds[0], bounds[1], shape, np.float32)
                    codec = NumericArrayCodec(box)
                else:
                    codec = self._numeric([leaf], shape, path, schema)
                self.inferred.append(
                    Inference(
                        self.role,
                        path,
                        "field_spaces",
                        space_source(codec.space),
                        "the state's action_spec",
                    )
                )
                return codec
        raise _UnmappableError(
            path,
            "an array without a fixed length (minItems == maxItems) has no fixed shape"
            + (
                ""
                if self.role == "action"
                else " and there is no reset observation to take it from"
            ),
            schema,
            example="gymnasium.spaces.Box(low, high, shape=(n,), dtype)",
            also="'x-shape' in the schema",
            shape_fix=numeric,
            needs_data=numeric and (self.role == "observation" or self.hints.spec is None),
        )

    def _tuple(self, items: Sequence[Any], path: str, schema: Mapping[str, Any]) -> TupleCodec:
        codecs = []
        for i, item in enumerate(items):
            try:
                codecs.append(self._field(item, f"{path}[{i}]"))
            except _UnmappableError as error:
                raise _UnmappableError(
                    path, f"item {i}: {error.reason}", schema, example=error.example
                ) from None
        return TupleCodec(codecs)

    def _shaped_array(self, schema: Mapping[str, Any], path: str, hint: Any) -> FieldCodec:
        try:
            shape = tuple(int(n) for n in hint)
        except (TypeError, ValueError):
            raise _UnmappableError(
                path, f"the shape {hint!r} is not a list of ints", schema
            ) from None
        if any(n < 0 for n in shape):
            raise _UnmappableError(path, f"the shape {shape} has negative sizes", schema)
        leaf = schema
        while leaf.get("type") == "array" and isinstance(leaf.get("items"), Mapping):
            leaf, _ = self._resolve(leaf["items"], path)
        if not _plain_numeric(leaf):
            raise _UnmappableError(
                path, "a shape is given but the array's items are not numbers/booleans", schema
            )
        return self._numeric([leaf], shape, path, schema)

    def _prefix_array(self, schema: Mapping[str, Any], prefix: list[Any], path: str) -> FieldCodec:
        if not all(isinstance(p, Mapping) for p in prefix):
            raise _UnmappableError(path, "a prefixItems member is not a schema", schema)
        leaves = [self._resolve(p, path)[0] for p in prefix]
        if (
            all(_plain_numeric(leaf) for leaf in leaves)
            and len({leaf.get("type") for leaf in leaves}) == 1
        ):
            return self._numeric(leaves, (len(leaves),), path, schema)
        return self._tuple(prefix, path, schema)

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
            raise _UnmappableError(
                path, f"{X_DTYPE} {hint!r} is not a numpy dtype", schema
            ) from None
        if dtype is not None and dtype.kind not in "iuf":
            raise _UnmappableError(path, f"{X_DTYPE} {hint!r} is not a numeric dtype", schema)
        if dtype is None:
            dtype = np.dtype(np.int64 if kind == "integer" else np.float32)
        if dtype.kind == "f":
            low_f, high_f = self._float_bounds(leaves, dtype)
            return NumericArrayCodec(
                spaces.Box(_shaped(low_f, shape), _shaped(high_f, shape), shape, dtype.type)
            )
        bounds = [_int_bounds(leaf) for leaf in leaves]
        if self.role == "action":
            if any(low is None or high is None for low, high in bounds):
                raise _UnmappableError(
                    path,
                    "an integer action array needs items with minimum and maximum",
                    schema,
                    example=f"gymnasium.spaces.MultiDiscrete(nvec) with nvec of shape {shape}",
                    also="give the items bounds (list[Annotated[int, Field(ge=0, lt=n)]])",
                )
            starts = np.array([low for low, _ in bounds], dtype=np.int64)
            stops = np.array([high for _, high in bounds], dtype=np.int64)
            if np.any(stops < starts):
                raise _UnmappableError(path, "an items range is empty", schema)
            return NumericArrayCodec(
                spaces.MultiDiscrete(
                    _shaped(stops - starts + 1, shape),
                    dtype=dtype.type,
                    start=_shaped(starts, shape),
                )
            )
        dtype_min, dtype_max = _int_limits(dtype)
        low_i = np.array([dtype_min if lo is None else max(lo, dtype_min) for lo, _ in bounds])
        high_i = np.array([dtype_max if hi is None else min(hi, dtype_max) for _, hi in bounds])
        return NumericArrayCodec(
            spaces.Box(_shaped(low_i, shape), _shaped(high_i, shape), shape, dtype.type)
        )

    def _float_bounds(
        self, leaves: Sequence[Mapping[str, Any]], dtype: np.dtype[Any]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per-leaf bounds in ``dtype``: rounded outward for observations, inward for actions."""
        inward = self.role == "action"
        lows, highs = [], []
        for leaf in leaves:
            low, high = dtype.type(-np.inf), dtype.type(np.inf)
            minimum, low_exclusive = _bound(leaf, "minimum", "exclusiveMinimum")
            maximum, high_exclusive = _bound(leaf, "maximum", "exclusiveMaximum")
            if minimum is not None:
                low = _round_bound(minimum, dtype, up=inward, strict=inward and low_exclusive)
            if maximum is not None:
                high = _round_bound(maximum, dtype, up=not inward, strict=inward and high_exclusive)
            lows.append(low)
            highs.append(high)
        return np.array(lows, dtype=dtype), np.array(highs, dtype=dtype)


# ---------------------------------------------------------------------- helpers


def _join(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


def _dedupe(values: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if not any(value == seen and type(value) is type(seen) for seen in out):
            out.append(value)
    return out


def _implied_type(schema: Mapping[str, Any]) -> str | None:
    if "properties" in schema or "additionalProperties" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return None


def _plain_numeric(schema: Mapping[str, Any]) -> bool:
    return (
        schema.get("type") in _NUMERIC_TYPES
        and "enum" not in schema
        and "const" not in schema
        and X_SPACE not in schema
    )


def _fixed_length(schema: Mapping[str, Any]) -> int | None:
    if schema.get("type") != "array" and "items" not in schema:
        return None
    low, high = schema.get("minItems"), schema.get("maxItems")
    if isinstance(low, int) and low == high and low >= 0:
        return low
    return None


def _bound(schema: Mapping[str, Any], key: str, exclusive_key: str) -> tuple[float | None, bool]:
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


def _int_bounds(schema: Mapping[str, Any]) -> tuple[int | None, int | None]:
    minimum, low_exclusive = _bound(schema, "minimum", "exclusiveMinimum")
    maximum, high_exclusive = _bound(schema, "maximum", "exclusiveMaximum")
    low = high = None
    if minimum is not None and math.isfinite(minimum):
        low = math.floor(minimum) + 1 if low_exclusive else math.ceil(minimum)
    if maximum is not None and math.isfinite(maximum):
        high = math.ceil(maximum) - 1 if high_exclusive else math.floor(maximum)
    return low, high


def _round_bound(value: float, dtype: np.dtype[Any], *, up: bool, strict: bool) -> Any:
    """``value`` in ``dtype``, rounded up or down (and past it when ``strict``)."""
    scalar = dtype.type(value)
    target = math.inf if up else -math.inf
    if (up and float(scalar) < value) or (not up and float(scalar) > value):
        scalar = np.nextafter(scalar, dtype.type(target))
    if strict and float(scalar) == value:
        scalar = np.nextafter(scalar, dtype.type(target))
    return scalar


def _int_limits(dtype: np.dtype[Any]) -> tuple[int, int]:
    """The bounds of an unbounded integer Box of ``dtype``: the dtype's range, except that
    64-bit types stop one below ``int64`` max (``Box.sample`` computes ``high + 1`` in int64).
    """
    info = np.iinfo(dtype)
    return int(info.min), min(int(info.max), int(np.iinfo(np.int64).max) - 1)


def _shaped(values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """One value per leaf -> an array of ``shape`` (broadcast one leaf, or one per element)."""
    if values.size == 1:
        return np.full(shape, values.reshape(()), dtype=values.dtype)
    return values.reshape(shape)
