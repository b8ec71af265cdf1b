"""The rules that map container fields (objects, ``dict[str, X]``, arrays, tuples) to codecs.

:class:`ContainerWalker` completes :class:`~openenv_gym.spaces.field_rules.FieldWalker`
with rules 10-12 of :mod:`openenv_gym.spaces.schema`: fixed-shape arrays become ``Box`` /
``MultiDiscrete`` / ``MultiBinary`` or ``Tuple`` spaces, open shapes are taken from the data
(the reset observation, the legal actions, the state's ``action_spec``) or left to ``info``,
and objects become ``Dict`` spaces of their fields.

Example:
    >>> from openenv_gym.spaces.schema import map_observation_schema
    >>> position = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
    >>> map_observation_schema({"properties": {"position": position}}).codec.space["position"]
    Box(-inf, inf, (2,), float32)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

import numpy as np
from gymnasium import spaces

from openenv_gym.spaces.field_rules import X_SHAPE, FieldWalker
from openenv_gym.spaces.fields import DictCodec, FieldCodec, NumericArrayCodec, TupleCodec
from openenv_gym.spaces.inference import (
    MISSING,
    Inference,
    is_legal_actions_name,
    numeric_shape,
    pin_inference,
    sample_at,
    space_source,
    spec_bounds,
    spec_shape,
)
from openenv_gym.spaces.problems import UnmappableFieldError, VariableFieldError
from openenv_gym.spaces.schema_keywords import fixed_length, is_plain_numeric, join_path

#: How a dict with free-form keys is named: JSON keys are strings, so the schema of a
#: ``dict[int, X]`` is that of a ``dict[str, X]``.
FREE_KEYS: Final = "a Python dict[K, V]; JSON keys are strings"


class ContainerWalker(FieldWalker):
    """A :class:`~openenv_gym.spaces.field_rules.FieldWalker` that also maps objects and
    arrays (see the module docstring)."""

    # ------------------------------------------------------------------ objects

    def _object(self, schema: Mapping[str, Any], path: str) -> FieldCodec:
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or not properties:
            extra = schema.get("additionalProperties")
            if isinstance(extra, Mapping) and extra:
                return self._keyed_object(schema, extra, path)
            if extra not in (None, False) and self.role == "observation":
                raise VariableFieldError(path, "a dict of free-form values")
            reason = (
                f"a dict with free-form keys ({FREE_KEYS}) has no fixed set of fields"
                if extra not in (None, False)
                else "an object without properties"
            )
            raise UnmappableFieldError(
                path, reason, schema, example="gymnasium.spaces.Dict([(key, space), ...])"
            )
        errors_before = len(self.errors)
        variable_before = set(self.variable)
        selected = self._select(schema, properties, path)
        if not selected and len(self.errors) == errors_before:
            moved = [p for p in self.variable if p not in variable_before]
            if moved and self.role == "observation" and self.legal_key not in moved:
                # Every field went to info: the object goes there whole, as a list does.
                for sub in moved:
                    del self.variable[sub]
                raise VariableFieldError(
                    path, f"an object whose every field goes to info ({', '.join(moved)})"
                )
            raise UnmappableFieldError(
                path,
                "no fields are left to form a space",
                schema,
                also="name optional fields in include=[...]" if self.role == "action" else "",
            )
        return self._object_codec(schema, properties, selected, path)

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
            raise VariableFieldError(path, "an empty dict of free-form keys at reset")
        else:
            raise UnmappableFieldError(
                path,
                f"a dict with free-form keys ({FREE_KEYS}) has no fixed set of fields"
                + (" and no reset observation to take them from" if value is MISSING else ""),
                schema,
                example="gymnasium.spaces.Dict({key: space, ...})",
                needs_data=value is MISSING and self.role == "observation",
            )
        items: list[tuple[str, FieldCodec]] = []
        inferred_before = len(self.inferred)
        for key in keys:
            sub = join_path(path, key)
            self.known.add(sub)
            codec = self._guarded(values, sub)
            if codec is not None:
                items.append((key, codec))
        if not pinned:
            # One pin for the whole dict: the shapes of its keys (or their spaces).
            del self.inferred[inferred_before:]
            for key, codec in items:
                self.inferred.append(pin_inference(self.role, join_path(path, key), codec.space))
        if not items:
            raise VariableFieldError(path, "no key of the dict maps to a space")
        return DictCodec(items)

    # ------------------------------------------------------------------ arrays

    def _array(self, schema: Mapping[str, Any], path: str) -> FieldCodec:
        hint = self.field_shapes.get(path, schema.get(X_SHAPE))
        if hint is not None:
            return self._shaped_array(schema, path, hint)
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list) and prefix and schema.get("items") in (None, False):
            return self._prefix_array(schema, prefix, path)
        length = fixed_length(schema)
        if length is None:
            return self._open_array(schema, path)
        items = schema.get("items")
        if not isinstance(items, Mapping):
            raise UnmappableFieldError(path, "the array's items have no schema", schema)
        dims = [length]
        leaf, _ = self._resolve(items, path)
        while leaf.get("type") == "array":
            count = fixed_length(leaf)
            inner = leaf.get("items")
            if count is None or not isinstance(inner, Mapping):
                break
            dims.append(count)
            leaf, _ = self._resolve(inner, path)
        if is_plain_numeric(leaf):
            return self._numeric([leaf], tuple(dims), path, schema)
        return self._tuple([items] * length, path, schema)

    def _open_array(self, schema: Mapping[str, Any], path: str) -> FieldCodec:
        """An array without a fixed length: its shape from the data, or ``info``."""
        leaf: Mapping[str, Any] = schema
        while leaf.get("type") == "array" and isinstance(leaf.get("items"), Mapping):
            leaf, _ = self._resolve(leaf["items"], path)
        numeric = is_plain_numeric(leaf) and leaf is not schema
        if self.role == "observation":
            if is_legal_actions_name(path) and leaf.get("type") in ("integer", "string"):
                raise VariableFieldError(
                    path, "the legal actions (they change as the game goes on)", legal=True
                )
            if not numeric:
                raise VariableFieldError(path, "a list of non-numeric items has no fixed shape")
            value = MISSING if self.sample is None else sample_at(self.sample, path)
            if value is not MISSING:
                shape = numeric_shape(value)
                if shape is None:
                    raise VariableFieldError(
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
        raise UnmappableFieldError(
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
            except UnmappableFieldError as error:
                raise UnmappableFieldError(
                    path, f"item {i}: {error.reason}", schema, example=error.example
                ) from None
        return TupleCodec(codecs)

    def _shaped_array(self, schema: Mapping[str, Any], path: str, hint: Any) -> FieldCodec:
        try:
            shape = tuple(int(n) for n in hint)
        except (TypeError, ValueError):
            raise UnmappableFieldError(
                path, f"the shape {hint!r} is not a list of ints", schema
            ) from None
        if any(n < 0 for n in shape):
            raise UnmappableFieldError(path, f"the shape {shape} has negative sizes", schema)
        leaf = schema
        while leaf.get("type") == "array" and isinstance(leaf.get("items"), Mapping):
            leaf, _ = self._resolve(leaf["items"], path)
        if not is_plain_numeric(leaf):
            raise UnmappableFieldError(
                path, "a shape is given but the array's items are not numbers/booleans", schema
            )
        return self._numeric([leaf], shape, path, schema)

    def _prefix_array(self, schema: Mapping[str, Any], prefix: list[Any], path: str) -> FieldCodec:
        if not all(isinstance(p, Mapping) for p in prefix):
            raise UnmappableFieldError(path, "a prefixItems member is not a schema", schema)
        leaves = [self._resolve(p, path)[0] for p in prefix]
        if (
            all(is_plain_numeric(leaf) for leaf in leaves)
            and len({leaf.get("type") for leaf in leaves}) == 1
        ):
            return self._numeric(leaves, (len(leaves),), path, schema)
        return self._tuple(prefix, path, schema)
