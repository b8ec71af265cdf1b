"""Optional and nullable fields: ``None`` stays distinguishable, defaults stay defaults.

The policy (see docs/spaces.md, "Optional and nullable fields"), for the fields of an object
(the top-level action or observation, or a nested model):

* A **nullable** field ``x`` (``Optional[X]``, ``X | None``) keeps X's space under ``x`` and
  gets a sibling ``x_present``: ``Discrete(2)``, ``1`` when ``x`` holds a value, ``0`` when it
  is ``None`` (``x`` then holds X's neutral element: zeros, ``start``, ``""``; read it only
  where ``x_present == 1``). An observation ``opponent_last_action=None`` decodes to
  ``{"opponent_last_action": 0, "opponent_last_action_present": 0}``; action ``0`` to
  ``{..: 0, .._present: 1}``. An action with ``x_present == 0`` sends ``"x": null``.
* A field with a **default** that is part of the action space (named in ``action_include``,
  given a space, or every field of the action has a default) may be left out of an action
  dict: it is then not sent, and the server's default applies. ``None`` for a nullable field
  sends ``null``, with or without its ``x_present`` key. Actions from
  ``action_space.sample()`` hold every key and send every field.

A field whose ``x_present`` name is already a field of the same object is refused (pin or
exclude one of the two). Nullable values outside an object (a ``Tuple`` item, an
``x-observation-key`` field) decode ``None`` to the neutral element, as documented in
:mod:`openenv_gym.spaces.fields`.

Example:
    >>> from openenv_gym.spaces.fields import DiscreteCodec, OptionalCodec
    >>> from gymnasium import spaces
    >>> codec = ObjectCodec(
    ...     [("last", OptionalCodec(DiscreteCodec(spaces.Discrete(9))))], optional={"last"}
    ... )
    >>> list(codec.space.spaces)
    ['last', 'last_present']
    >>> {k: int(v) for k, v in codec.decode({"last": None}, "").items()}
    {'last': 0, 'last_present': 0}
    >>> codec.encode_partial({"last": None}, ""), codec.encode_partial({}, "")
    ({'last': None}, {})
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

import numpy as np
from gymnasium import spaces

from openenv_gym.errors import CodecError
from openenv_gym.spaces.describe import describe_space
from openenv_gym.spaces.fields import DictCodec, FieldCodec, OptionalCodec
from openenv_gym.spaces.membership import coerce

__all__ = ["PRESENT_SUFFIX", "ObjectCodec", "PresenceCodec", "presence_key"]

#: The suffix of the ``Discrete(2)`` key that says whether a nullable field holds a value.
PRESENT_SUFFIX: Final = "_present"


def presence_key(key: str) -> str:
    """The name of ``key``'s presence flag (``"final_answer"`` -> ``"final_answer_present"``)."""
    return key + PRESENT_SUFFIX


class PresenceCodec(FieldCodec):
    """``Discrete(2)``: whether the nullable field :attr:`field` holds a value (1) or not (0).

    It reads the field's wire value; it has no wire value of its own.
    """

    def __init__(self, field: str) -> None:
        self.field = field
        self.space = spaces.Discrete(2)

    def decode(self, wire: Any, path: str) -> np.int64:
        return np.int64(wire is not None)

    def encode(self, value: Any, path: str) -> None:  # pragma: no cover - never sent
        return None

    def neutral(self) -> np.int64:
        return np.int64(0)


class ObjectCodec(DictCodec):
    """A :class:`DictCodec` whose nullable fields carry a presence flag and whose fields with
    defaults may be left out of an action (see the module docstring).

    Args:
        items: The fields' (key, codec) pairs in schema order; an :class:`OptionalCodec` is a
            nullable field and gets its ``key_present`` flag right after it.
        optional: The keys that have a default (not in the schema's ``required``).
    """

    def __init__(
        self, items: Sequence[tuple[str, FieldCodec]], *, optional: Collection[str] = ()
    ) -> None:
        pairs: list[tuple[str, FieldCodec]] = []
        self.flags: dict[str, str] = {}  # nullable field -> its presence key
        for key, codec in items:
            pairs.append((key, codec))
            if isinstance(codec, OptionalCodec):
                flag = presence_key(key)
                self.flags[key] = flag
                pairs.append((flag, PresenceCodec(key)))
        super().__init__(pairs)
        self.optional = frozenset(optional)

    def _decode_field(self, wire: Mapping[str, Any], key: str, codec: FieldCodec, sub: str) -> Any:
        if isinstance(codec, PresenceCodec):
            return codec.decode(wire.get(codec.field), sub)
        if key not in wire and key in self.flags:  # a nullable field left out is None
            return codec.decode(None, sub)
        return super()._decode_field(wire, key, codec, sub)

    @property
    def wire_keys(self) -> list[str]:
        """The fields as they travel (presence flags are not sent)."""
        return [k for k, c in self.codecs.items() if not isinstance(c, PresenceCodec)]

    def encode(self, value: Any, path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, codec in self.codecs.items():
            if isinstance(codec, PresenceCodec):
                continue
            flag = self.flags.get(key)
            if flag is not None and not int(value[flag]):
                out[key] = None
            else:
                out[key] = codec.encode(value[key], _join(path, key))
        return out

    def encode_partial(self, action: Mapping[str, Any], path: str) -> dict[str, Any]:
        """An action dict that may leave out fields with defaults, and give ``None`` for
        nullable ones -> the wire object (left-out fields are not sent).

        Raises:
            CodecError: A field without a default is missing, ``None`` is given for a field
                that is not nullable, or a value does not fit its space.
        """
        filled: dict[str, Any] = {}
        sent: list[str] = []
        for key, codec in self.codecs.items():
            if isinstance(codec, PresenceCodec):
                continue
            flag = self.flags.get(key)
            if key not in action and flag is not None and flag in action:
                action = {**action, key: None if not int(action[flag]) else _MISSING_VALUE}
            if action.get(key) is _MISSING_VALUE:
                raise CodecError(
                    f"field {_join(path, key)!r}: {flag}=1 but no value; give one, or {flag}=0",
                    field=_join(path, key),
                )
            if key not in action:
                if key in self.optional:
                    filled[key] = codec.neutral()
                    if flag is not None:
                        filled[flag] = np.int64(0)
                    continue
                raise CodecError(
                    f"field {_join(path, key)!r}: missing; it has no default, so the action "
                    f"needs a value for {describe_space(codec.space)}",
                    field=_join(path, key),
                )
            sent.append(key)
            value = action[key]
            if value is None:
                if flag is None:
                    raise CodecError(
                        f"field {_join(path, key)!r}: got None, but the field is not nullable; "
                        f"expected a value for {describe_space(codec.space)}"
                        + (
                            ", or leave the key out to send the server's default"
                            if key in self.optional
                            else ""
                        ),
                        field=_join(path, key),
                    )
                filled[key] = codec.neutral()
                filled[flag] = np.int64(action.get(flag, 0))
                if int(filled[flag]):
                    raise CodecError(
                        f"field {_join(path, key)!r}: got None with {flag}=1; give a value, or "
                        f"{flag}=0",
                        field=_join(path, key),
                    )
            else:
                filled[key] = value
                if flag is not None:
                    filled[flag] = action.get(flag, 1)
        unknown = sorted(set(action) - set(self.codecs))
        if unknown:
            raise CodecError(
                f"unknown action fields {unknown}; the action space has {list(self.codecs)}",
                field=_join(path, unknown[0]),
            )
        member = coerce(self.space, filled, path)
        wire = self.encode(member, path)
        return {key: wire[key] for key in sent}


#: Stands for "the flag says present, the value is missing" in :meth:`ObjectCodec.encode_partial`.
_MISSING_VALUE: Final = object()


def _join(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key
