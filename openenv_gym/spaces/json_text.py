"""Free-form JSON values (``Any``, open dicts) as JSON text in a ``Text`` space.

Where a JSON Schema leaves a value open (``{}``, ``dict[str, Any]``, an output schema with
``additionalProperties`` only), no Gymnasium space describes it. Such values travel as JSON
text instead: a :class:`JsonText` space, which is a plain ``Text`` over
:data:`~openenv_gym.spaces.charset.DEFAULT_TEXT_CHARSET` whose :meth:`~JsonText.sample`
returns a JSON document that fits the schema it was made for.

* Observations: the value is serialized with ``json.dumps(value, ensure_ascii=True)``
  (compact separators), so the text is printable ASCII, always inside the charset;
  ``json.loads(text)`` gives the value back. A value whose text is longer than the space's
  ``max_length`` raises :class:`~openenv_gym.errors.ObservationMismatchError`.
* Actions: the text is parsed with ``json.loads`` and the value is sent; text that is not
  valid JSON is sent as a JSON string (so ``"hello"`` and ``'"hello"'`` both send the string
  ``hello`` to an ``Any`` argument).

Example:
    >>> codec = JsonTextCodec(JsonText(64, schema={"type": "object"}))
    >>> codec.decode({"b": [1, 2], "a": None}, "payload")
    '{"b":[1,2],"a":null}'
    >>> codec.encode('{"k": 1}', "payload"), codec.encode("not json", "payload")
    ({'k': 1}, 'not json')
    >>> space = JsonText(64, schema={"type": "integer", "minimum": 0, "maximum": 9}, seed=0)
    >>> 0 <= json.loads(space.sample()) <= 9
    True
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping
from typing import Any, Final

import numpy as np

from openenv_gym.spaces.charset import DefaultCharsetText
from openenv_gym.spaces.fields import FieldCodec

#: Nesting depth past which :meth:`JsonText.sample` stops descending (returns ``null``).
_MAX_SAMPLE_DEPTH: Final = 4
#: Range of sampled integers/numbers when the schema gives no bounds.
_SAMPLE_RANGE: Final = 100


def dump_json(value: Any) -> str:
    """``value`` as compact, ASCII-only JSON text (non-ASCII characters are ``\\u`` escaped)."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), default=str)


class JsonText(DefaultCharsetText):
    """A ``Text`` space holding JSON documents of a JSON Schema.

    Membership is ``Text``'s (length and charset); :meth:`sample` draws a JSON value that
    fits ``schema`` (bounds, enums, required properties; open objects sample as ``{}``,
    arrays with their ``minItems``, unconstrained values as ``null``). It equals a plain
    ``Text`` of the same lengths and charset.

    Args:
        max_length: The longest text.
        schema: The JSON Schema of the value (``{}`` for anything).
        seed: The space's seed.
    """

    def __init__(
        self, max_length: int, *, schema: Mapping[str, Any] | None = None, seed: Any = None
    ) -> None:
        super().__init__(max_length, seed=seed)
        self.schema: dict[str, Any] = dict(schema or {})

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """A JSON document fitting :attr:`schema` (with a mask: ``Text.sample``'s text)."""
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        text = dump_json(_sample_value(self.schema, self.schema, self.np_random, 0))
        return text if len(text) <= self.max_length else "null"

    def __repr__(self) -> str:
        return f"JsonText({self.min_length}, {self.max_length}, charset=DEFAULT_TEXT_CHARSET)"


class JsonTextCodec(FieldCodec):
    """A free-form JSON value <-> its JSON text (see the module docstring)."""

    def __init__(self, space: JsonText) -> None:
        self.space = space
        self._max_length = space.max_length

    def decode(self, wire: Any, path: str) -> str:
        text = dump_json(wire)
        if len(text) > self._max_length:
            raise self._mismatch(
                path,
                f"JSON text of at most {self._max_length} characters",
                wire,
                f"{len(text)} characters",
            )
        return text

    def encode(self, value: Any, path: str) -> Any:
        try:
            return json.loads(value)
        except ValueError:
            return str(value)

    def neutral(self) -> str:
        return "null"


def _sample_value(
    schema: Any, root: Mapping[str, Any], rng: np.random.Generator, depth: int
) -> Any:
    """A random JSON value that fits ``schema`` (best effort for the common keywords)."""
    if not isinstance(schema, Mapping) or depth > _MAX_SAMPLE_DEPTH:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, Mapping) else None
        return _sample_value(target, root, rng, depth + 1)
    if "const" in schema:
        return schema["const"]
    choices = schema.get("enum")
    if isinstance(choices, list) and choices:
        return choices[int(rng.integers(len(choices)))]
    union = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(union, list) and union:
        return _sample_value(union[int(rng.integers(len(union)))], root, rng, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[int(rng.integers(len(kind)))] if kind else None
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        required = schema.get("required") or ()
        return {
            key: _sample_value(properties.get(key, {}), root, rng, depth + 1)
            for key in required
            if isinstance(key, str)
        }
    if kind == "array":
        count = int(schema.get("minItems", 0) or 0)
        return [_sample_value(schema.get("items", {}), root, rng, depth + 1) for _ in range(count)]
    if kind == "string":
        low = int(schema.get("minLength", 0) or 0)
        high = max(low, min(int(schema.get("maxLength", 8) or 0), 8))
        size = int(rng.integers(low, high + 1))
        letters = string.ascii_letters
        return "".join(letters[int(i)] for i in rng.integers(len(letters), size=size))
    if kind == "boolean":
        return bool(rng.integers(2))
    if kind in ("integer", "number"):
        low_f = float(schema.get("minimum", schema.get("exclusiveMinimum", -_SAMPLE_RANGE)))
        high_f = float(schema.get("maximum", schema.get("exclusiveMaximum", _SAMPLE_RANGE)))
        if high_f < low_f:  # one bound given, beyond the default range
            has_low = "minimum" in schema or "exclusiveMinimum" in schema
            low_f, high_f = (
                (low_f, low_f + 2 * _SAMPLE_RANGE)
                if has_low
                else (high_f - 2 * _SAMPLE_RANGE, high_f)
            )
        if kind == "integer":
            low_i = int(np.ceil(low_f)) + (1 if "exclusiveMinimum" in schema else 0)
            high_i = int(np.floor(high_f)) - (1 if "exclusiveMaximum" in schema else 0)
            return int(rng.integers(low_i, max(low_i, high_i) + 1))
        return float(np.clip(rng.uniform(low_f, high_f), low_f, high_f))
    return None
