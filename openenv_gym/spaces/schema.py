"""JSON Schema (pydantic ``model_json_schema()`` output) -> field codecs and spaces.

This is the one place where schema fields become Gymnasium spaces. The rules, in the order
they are tried for each field (dotted path ``"board.cells"`` for nested fields):

1. ``field_spaces[path]`` (the caller's explicit space) wins; it is used with the generic wire
   form of :func:`~openenv_gym.spaces.fields.codec_for_space`.
2. ``"x-space"`` in the field's schema: exactly that space (:func:`space_from_json`).
3. ``$ref`` is followed (siblings such as ``default`` kept), ``allOf`` of one schema is unwrapped.
4. ``anyOf``/``oneOf``/``type: [..]`` with ``null``: ``Optional[X]`` -> X's space; ``null``
   decodes to X's neutral element (see :mod:`openenv_gym.spaces.fields`), and a field of an
   object gets a ``<field>_present`` ``Discrete(2)`` flag beside it (see
   :mod:`openenv_gym.spaces.optional_fields`). Unions whose members are all
   ``const``/``enum`` become one enum. Other unions cannot be mapped.
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
    in ``include`` (or given a ``field_spaces`` entry), or every field when all have
    defaults; optional fields are filled in by the server's defaults, and an action dict may
    leave out those in the space (:mod:`openenv_gym.spaces.optional_fields`).
12. Anything else (``dict[str, X]``, ``Any``, variable-length arrays, mixed unions) raises
    :class:`~openenv_gym.errors.SpaceMappingError` naming the dotted field, showing the schema
    fragment, and saying how to pass an explicit space.

At the top level, observations leave out ``reward``, ``done``, ``metadata`` (the OpenEnv
``Observation`` base fields), the ``x-truncated-key`` field and ``exclude``; actions leave out
``metadata``. ``x-observation-key`` / ``x-action-key`` make one field the whole space.
A single-field action space is that field's space (not a Dict).

Text defaults: string fields get a :class:`~openenv_gym.spaces.charset.DefaultCharsetText` (a
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

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

from gymnasium import spaces

from openenv_gym.errors import SpaceMappingError
from openenv_gym.spaces.container_rules import ContainerWalker
from openenv_gym.spaces.fields import FieldCodec, OptionalCodec
from openenv_gym.spaces.inference import ActionHints, Inference
from openenv_gym.spaces.problems import (
    CODEC_KEYWORDS,
    MappingProblem,
    Option,
    UnmappableFieldError,
    format_problems,
    fragment_text,
)
from openenv_gym.spaces.serialization import (
    X_ACTION_KEY,
    X_OBSERVATION_KEY,
    X_SPACE,
    X_TERMINATED_KEY,
    X_TRUNCATED_KEY,
)

__all__ = [
    "ACTION_ENVELOPE_FIELDS",
    "OBSERVATION_ENVELOPE_FIELDS",
    "SchemaMapping",
    "map_action_schema",
    "map_observation_schema",
]

#: Observation fields of the OpenEnv ``Observation`` base class, never part of the space.
OBSERVATION_ENVELOPE_FIELDS: Final = ("reward", "done", "metadata")
#: Action fields of the OpenEnv ``Action`` base class, never part of the space.
ACTION_ENVELOPE_FIELDS: Final = ("metadata",)


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
        pinned_shapes: The ``field_shapes`` the caller gave (path -> shape), for advice
            that names every pin a new one must come with.
    """

    codec: FieldCodec
    key: str | None
    truncated_key: str | None = None
    terminated_key: str | None = None
    inferred: tuple[Inference, ...] = ()
    variable: Mapping[str, str] = field(default_factory=dict)
    legal_key: str | None = None
    pinned_shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)


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


class _Walker(ContainerWalker):
    """Walks one top-level schema: selects its fields, maps them (see
    :class:`~openenv_gym.spaces.container_rules.ContainerWalker`) and reports every
    unmappable field and unknown option name in one error."""

    # ------------------------------------------------------------------ top level

    def map_top(self) -> SchemaMapping:
        try:
            root, _ = self._resolve(self.root, "")
        except UnmappableFieldError as error:
            self.errors.append(error)
            self._finish()
            raise  # pragma: no cover - _finish raised
        properties = root.get("properties")
        if not isinstance(properties, Mapping) or not properties:
            raise SpaceMappingError(
                f"the {self.role} schema has no 'properties'; expected an object schema such as "
                f"Model.model_json_schema(). Schema seen: {fragment_text(root)}",
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
                f"Schema seen: {fragment_text(root)}",
                field="",
                schema=dict(root),
            )
        if self.role == "action" and len(selected) == 1:
            key, codec = selected[0]
            if not isinstance(codec, OptionalCodec):
                return self._mapping(codec, key, None)
        try:
            codec = self._object_codec(root, properties, selected, "")
        except UnmappableFieldError as error:
            self.errors.append(error)
            self._finish()
            raise  # pragma: no cover - _finish raised
        return self._mapping(codec, None, truncated)

    def _mapping(self, codec: FieldCodec, key: str | None, truncated: str | None) -> SchemaMapping:
        return SchemaMapping(
            codec,
            key,
            truncated,
            terminated_key=self.terminated_key,
            inferred=tuple(self.inferred),
            variable=dict(self.variable),
            legal_key=self.legal_key,
            pinned_shapes={
                path: tuple(int(n) for n in shape) for path, shape in self.field_shapes.items()
            },
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
                f"JSON Schema seen: {fragment_text(first.fragment)}"
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

    def _problem(self, error: UnmappableFieldError) -> MappingProblem:
        fixes: list[tuple[Option, str]] = []
        if error.shape_fix:
            fixes.append(("field_shapes", "(n,)"))
        if self.role == "observation":
            fixes.append(("exclude", ""))  # works as pasted: the field goes to info
        if error.space_fix:
            example = error.example or "gymnasium.spaces.Box(low, high, shape, dtype)"
            fixes.append(("field_spaces", example))
        reason = error.reason
        if error.also:
            reason += f" (or {error.also})"
        if error.path and error.space_fix:
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
            observed=error.observed,
        )
