"""Observation and action codecs: the env's spaces and the wire <-> space conversions.

Build them from a JSON Schema (``GET /schema``) or from the Pydantic classes; both go through
:mod:`openenv_gym.spaces.schema`, so one set of rules applies.

Example:
    >>> from pydantic import BaseModel, Field
    >>> class Move(BaseModel):
    ...     square: int = Field(ge=0, lt=64)
    >>> codec = action_codec_for_model(Move)
    >>> codec.space, codec.encode(12), codec.decode({"square": 12})
    (Discrete(64), {'square': 12}, np.int64(12))
    >>> codec.encode(64)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    openenv_gym.errors.ActionOutOfSpaceError: action 64 is not in the action space ...
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import batch_space, iterate

from openenv_gym.errors import (
    ActionOutOfSpaceError,
    CodecError,
    ObservationMismatchError,
)
from openenv_gym.spaces.describe import describe_space, describe_value
from openenv_gym.spaces.fields import (
    DiscreteCodec,
    EnumCodec,
    FieldCodec,
    NumericArrayCodec,
    OptionalCodec,
)
from openenv_gym.spaces.inference import MISSING, ActionHints, Inference, numeric_shape, sample_at
from openenv_gym.spaces.membership import coerce
from openenv_gym.spaces.optional_fields import ObjectCodec
from openenv_gym.spaces.schema import SchemaMapping, map_action_schema, map_observation_schema
from openenv_gym.spaces.sources import model_schema


class ObservationCodec:
    """The observation space of an env and the conversions of its wire observations.

    Attributes:
        space: The observation space.
        key: The wire field that is the whole observation (``x-observation-key``), or ``None``
            when the space is a ``Dict`` of the mapped fields.
        truncated_key: The boolean field carrying truncation (``x-truncated-key``), or
            ``None``. It is not part of the space.
        terminated_key: The boolean field carrying termination (``x-terminated-key``), or
            ``None`` (then ``done and not truncated`` is termination).
        inferred: The spaces taken from the reset observation (see
            :mod:`openenv_gym.spaces.inference`).
        variable: Fields without a fixed shape, left to ``info`` (path -> why).
        legal_key: The field listing the legal actions (in ``info``), if any.
        truncation_rule: ``True`` when :meth:`truncates` reads truncation from the
            observation itself (for servers that send no truncation field, e.g. chess).
    """

    #: Whether :meth:`truncates` may answer ``True`` (the vector env then asks it per row).
    truncation_rule: bool = False

    def truncates(self, observation: Mapping[str, Any]) -> bool:
        """Whether a ``done`` reply with this observation is a truncation, when no
        ``truncated_key`` field says so; never, unless a subclass knows its game."""
        return False

    def __init__(self, mapping: SchemaMapping) -> None:
        self._codec = mapping.codec
        self.space: spaces.Space[Any] = mapping.codec.space
        self.key: str | None = mapping.key
        self.truncated_key: str | None = mapping.truncated_key
        self.terminated_key: str | None = mapping.terminated_key
        self.inferred: tuple[Inference, ...] = mapping.inferred
        self._pinned_shapes: Mapping[str, tuple[int, ...]] = mapping.pinned_shapes
        self.variable: Mapping[str, str] = mapping.variable
        self.legal_key: str | None = mapping.legal_key

    def decode(self, observation: Mapping[str, Any]) -> Any:
        """The ``observation`` object of a reply -> an element of :attr:`space`.

        Raises:
            ObservationMismatchError: A field is missing, has the wrong type or size, or its
                value is outside the space; ``field`` names it.
        """
        if not isinstance(observation, Mapping):
            raise ObservationMismatchError(
                "expected the observation as an object of fields, "
                f"got {describe_value(observation)}"
            )
        try:
            return _decode_object(self._codec, self.key, observation, "observation")
        except CodecError as exc:
            raise self._mismatch(exc, observation) from exc

    def batch_fits_every(self, dtype: np.dtype[Any], row_size: int) -> bool:
        """Whether a single-field space takes every stacked array of ``dtype`` with
        ``row_size`` values a row as it is (:meth:`decode_batch` would check nothing, and
        return it reshaped): e.g. a ``Box(0, 255, uint8)`` of screens."""
        codec = self._codec
        return (
            self.key is not None
            and isinstance(codec, NumericArrayCodec)
            and codec.fits_every(dtype, row_size)
        )

    def decode_batch(self, fields: Mapping[str, Any], count: int) -> np.ndarray | list[Any]:
        """``count`` observations whose fields come stacked (a batch reply: each field an
        array or list with one entry per observation) -> their decoded values.

        A single-field Box/MultiDiscrete/MultiBinary space is checked as one array and
        returned as an array of shape ``(count, *shape)``; anything else is decoded row by
        row with :meth:`decode` (a list). The checks and errors are those of :meth:`decode`.

        Raises:
            ObservationMismatchError: A value does not fit the space; ``field`` names it.
        """
        codec = self._codec
        key = self.key
        if key is not None and isinstance(codec, NumericArrayCodec):
            value = fields.get(key)
            if isinstance(value, np.ndarray) and value.shape[:1] == (count,):
                try:
                    return codec.decode_batch(value, count, key)
                except CodecError as exc:
                    raise self._mismatch(exc) from exc
        return [
            self.decode({name: column[k] for name, column in fields.items()}) for k in range(count)
        ]

    def _mismatch(
        self, exc: CodecError, observation: Mapping[str, Any] | None = None
    ) -> ObservationMismatchError:
        return ObservationMismatchError(
            f"the server's observation does not fit the observation space: {exc}. "
            + self._advice(exc.field, observation),
            field=exc.field,
        )

    def _advice(self, path: str, observation: Mapping[str, Any] | None = None) -> str:
        """How to get past a field that does not fit (env keyword names): for an array, the
        ``observation_field_shapes`` keyword that holds this observation, with every other
        shape pin (given or taken from the data) it must come with, ready to pass."""
        top = path.split("[", 1)[0]
        inference = next(
            (i for i in self.inferred if top == i.path or top.startswith(i.path + ".")), None
        )
        target = inference.path if inference is not None else top
        value = sample_at(observation, target) if observation is not None else MISSING
        shape = numeric_shape(value) if value is not MISSING else None
        if inference is not None:
            head = (
                f"Its space was taken from {inference.source} ({inference.value}); the field "
                "changes shape between observations"
            )
        elif shape is not None:
            head = "The field's shape is not its space's"
        else:
            head = "If the server's schema is imprecise, pin the field"
        if shape is not None and (inference is None or inference.option == "field_shapes"):
            pins = dict(self._pinned_shapes)
            for other in self.inferred:
                if other.option == "field_shapes":
                    pins[other.path] = tuple(ast.literal_eval(other.value))
            pins[target] = shape
            return (
                f"{head}. Pin the shape this observation has: observation_field_shapes={pins!r}"
                + self._exclude_advice(target)
            )
        name = target or "<field>"
        return (
            f"{head}: pass an explicit space that holds every observation: "
            f"observation_field_spaces={{{name!r}: space}}" + self._exclude_advice(name)
        )

    def _exclude_advice(self, path: str) -> str:
        """``", or leave it to info: observation_exclude=[...]"`` when other fields would
        still form a space (excluding the only one leaves none)."""
        first = path.split(".", 1)[0]
        others = set(self.space.spaces) - {first} if isinstance(self.space, spaces.Dict) else ()
        if self.key is not None or not others:
            return ""
        return f", or leave it to info: observation_exclude=[{first!r}]"

    @property
    def plain_extras(self) -> bool:
        """Whether :meth:`extras` are exactly the wire fields beside :attr:`key` (the key
        field maps its whole value: nothing nested in it goes to ``info``)."""
        return self.key is not None and (
            type(self._codec).collect_extras is FieldCodec.collect_extras
        )

    def extras(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        """The wire fields that are not in the space (nested ones under dotted paths)."""
        out: dict[str, Any] = {}
        if not isinstance(observation, Mapping):
            return out
        if self.key is None:
            self._codec.collect_extras(observation, "", out)
            return out
        for name, value in observation.items():
            if name == self.key:
                self._codec.collect_extras(value, name, out)
            else:
                out[name] = value
        return out

    def encode(self, value: Any) -> dict[str, Any]:
        """An element of :attr:`space` -> the wire observation fields (server side, tests).

        Raises:
            ObservationMismatchError: ``value`` is not an element of the space.
        """
        try:
            member = coerce(self.space, value, self.key or "")
        except CodecError as exc:
            raise ObservationMismatchError(
                f"observation {describe_value(value)} is not in the observation space "
                f"{describe_space(self.space)}: {exc}",
                field=exc.field,
            ) from exc
        wire = self._codec.encode(member, self.key or "")
        return {self.key: wire} if self.key is not None else wire

    def __repr__(self) -> str:
        return f"ObservationCodec({describe_space(self.space)})"


class ActionCodec:
    """The action space of an env and the conversions of its actions.

    Attributes:
        space: The action space.
        key: The wire field that is the whole action (a single-field action or
            ``x-action-key``), or ``None`` when the space is a ``Dict`` of fields.
    """

    def __init__(self, mapping: SchemaMapping) -> None:
        self._codec = mapping.codec
        self.space: spaces.Space[Any] = mapping.codec.space
        self.key: str | None = mapping.key
        self.inferred: tuple[Inference, ...] = mapping.inferred
        #: Fields with a default that cannot be mapped: never sent (path -> why).
        self.left_out: Mapping[str, str] = mapping.variable

    def encode(self, action: Any) -> dict[str, Any]:
        """A Gymnasium action -> the wire action object.

        Raises:
            ActionOutOfSpaceError: ``action`` is not an element of :attr:`space`; nothing
                should be sent.
        """
        codec = self._codec
        try:
            if isinstance(codec, ObjectCodec) and self.key is None and isinstance(action, Mapping):
                # Fields with defaults may be left out, nullable ones given as None.
                return codec.encode_partial(action, "")
            member = coerce(self.space, action, self.key or "")
        except CodecError as exc:
            raise ActionOutOfSpaceError(
                f"action {describe_value(action)} is not in the action space "
                f"{describe_space(self.space)}: {exc}. Use env.action_space.sample() to see a "
                "valid action",
                field=exc.field,
            ) from exc
        wire = self._codec.encode(member, self.key or "")
        return {self.key: wire} if self.key is not None else wire

    @property
    def maskable(self) -> bool:
        """Whether :meth:`mask` works: the action is one ``Discrete`` (or enum) field."""
        return isinstance(_unwrap(self._codec), DiscreteCodec | EnumCodec)

    def legal_mask(self, legal: Any, field: str) -> np.ndarray | None:
        """:meth:`mask` where there is one: ``None`` when the action is not maskable, no
        legal actions are known yet, or the server lists one outside the space (then
        :meth:`mask`, i.e. ``env.action_masks()``, raises the error naming the fix)."""
        if not self.maskable or legal is None:
            return None
        try:
            return self.mask(legal, field)
        except ActionOutOfSpaceError:
            return None

    def mask(self, legal: Any, field: str = "legal_actions") -> np.ndarray:
        """The ``bool`` mask over :attr:`space` of the legal wire values ``legal``.

        Raises:
            ActionOutOfSpaceError: ``legal`` is not a list, or names a value outside the
                space (the space was too small; pin it with ``action_field_spaces``).
        """
        codec = _unwrap(self._codec)
        if not isinstance(legal, list | tuple):
            raise ActionOutOfSpaceError(
                f"field {field!r}: expected a list of legal actions, got {describe_value(legal)}",
                field=field,
            )
        mask = np.zeros(int(self.space.n), dtype=np.bool_)  # type: ignore[attr-defined]
        for value in legal:
            try:
                index = int(codec.decode(value, field)) - int(self.space.start)  # type: ignore[attr-defined]
            except CodecError as exc:
                name = self.key or "<action>"
                raise ActionOutOfSpaceError(
                    f"the server lists {value!r} as a legal action, which is outside the action "
                    f"space {describe_space(self.space)}: {exc}. Pin a space that holds every "
                    f"action: action_field_spaces={{{name!r}: gymnasium.spaces.Discrete(n)}}",
                    field=field,
                ) from exc
            mask[index] = True
        return mask

    def encode_batch(
        self, actions: Any, count: int, legal: Sequence[Any] | None = None
    ) -> list[dict[str, Any]]:
        """A batch of ``count`` actions (an element of the batched action space) -> one wire
        action object per action, exactly as :meth:`encode` makes them. ``legal`` holds each
        sub-env's last legal actions (``None`` where unknown), for codecs whose wire action
        depends on the position (chess promotions); this one does not use it.

        A ``Discrete`` action field (plain integers, or the values of an ``Enum``/``Literal``)
        is checked and mapped for the whole batch at once.

        Raises:
            ActionOutOfSpaceError: An action is not in :attr:`space`; the message names its
                position in the batch. Nothing should be sent.
        """
        key, codec = self.key, self._codec
        if key is not None and isinstance(codec, DiscreteCodec | EnumCodec):
            array = np.asarray(actions)
            space = self.space
            assert isinstance(space, spaces.Discrete)  # both codecs map to Discrete
            start = int(space.start)
            if array.shape == (count,) and array.dtype.kind in "iu":
                chosen = array.tolist()  # min and max of a short list: cheaper than numpy's
                if count == 0 or (min(chosen) >= start and max(chosen) < start + int(space.n)):
                    if isinstance(codec, EnumCodec):
                        values = codec.values
                        return [{key: values[a - start]} for a in chosen]
                    return [{key: a} for a in chosen]
        try:
            per_action = list(iterate(batch_space(self.space, count), actions))
        except (TypeError, ValueError, IndexError, AssertionError) as exc:
            raise ActionOutOfSpaceError(
                f"expected a batch of {count} actions in {describe_space(self.space)}, got "
                f"{describe_value(actions)}"
            ) from exc
        if len(per_action) != count:
            raise ActionOutOfSpaceError(
                f"expected a batch of {count} actions in {describe_space(self.space)}, got "
                f"{len(per_action)}"
            )
        wires = []
        for k, action in enumerate(per_action):
            try:
                wires.append(self.encode(action))
            except ActionOutOfSpaceError as exc:
                raise ActionOutOfSpaceError(f"sub-env {k}: {exc}", field=exc.field) from exc
        return wires

    def decode(self, data: Mapping[str, Any]) -> Any:
        """A wire action object -> an element of :attr:`space` (server side).

        Fields the space does not hold (optional fields, ``metadata``) are ignored.

        Raises:
            ActionOutOfSpaceError: A field is missing or does not fit the space.
        """
        if not isinstance(data, Mapping):
            raise ActionOutOfSpaceError(
                f"expected the action as an object of fields, got {describe_value(data)}"
            )
        try:
            return _decode_object(self._codec, self.key, data, "action")
        except CodecError as exc:
            raise ActionOutOfSpaceError(
                f"the action does not fit the action space {describe_space(self.space)}: {exc}",
                field=exc.field,
            ) from exc

    def __repr__(self) -> str:
        return f"ActionCodec({describe_space(self.space)})"


def observation_codec(
    schema: Mapping[str, Any],
    *,
    field_spaces: Mapping[str, spaces.Space[Any]] | None = None,
    field_shapes: Mapping[str, Sequence[int]] | None = None,
    exclude: Collection[str] = (),
    sample: Mapping[str, Any] | None = None,
) -> ObservationCodec:
    """The observation codec for an observation JSON Schema.

    Args:
        schema: The ``observation`` entry of ``GET /schema`` (``model_json_schema()``).
        field_spaces: Explicit spaces by (dotted) field name; they win over the schema.
        field_shapes: Shapes for arrays without a fixed length (flat wire lists are reshaped).
        exclude: Fields left out of the space; they come back from :meth:`~ObservationCodec.extras`.
        sample: A wire observation (the reset observation) to take open shapes from.

    Raises:
        SpaceMappingError: A field cannot be mapped (the message names it and says what to
            pass), or an option names an unknown field.
    """
    return ObservationCodec(
        map_observation_schema(
            schema,
            field_spaces=field_spaces,
            field_shapes=field_shapes,
            exclude=exclude,
            sample=sample,
        )
    )


def action_codec(
    schema: Mapping[str, Any],
    *,
    field_spaces: Mapping[str, spaces.Space[Any]] | None = None,
    field_shapes: Mapping[str, Sequence[int]] | None = None,
    include: Collection[str] = (),
    hints: ActionHints | None = None,
) -> ActionCodec:
    """The action codec for an action JSON Schema.

    Args:
        schema: The ``action`` entry of ``GET /schema`` (``model_json_schema()``).
        field_spaces: Explicit spaces by (dotted) field name; they win over the schema, and an
            optional field given a space is part of the action.
        field_shapes: Shapes for arrays without a fixed length.
        include: Optional fields (with a server default) to make part of the action space.
        hints: The state's ``action_spec`` and declared action count, to close open action
            shapes; the legal actions at reset are only shown as observed (see
            :mod:`openenv_gym.spaces.inference`).

    Raises:
        SpaceMappingError: A field cannot be mapped (the message names it and says what to
            pass), or an option names an unknown field.
    """
    return ActionCodec(
        map_action_schema(
            schema,
            field_spaces=field_spaces,
            field_shapes=field_shapes,
            include=include,
            hints=hints,
        )
    )


def _decode_object(codec: FieldCodec, key: str | None, data: Mapping[str, Any], what: str) -> Any:
    """Decode the wire object ``data`` (an ``what``) with ``codec``: whole where ``key`` is
    ``None``, else its ``key`` field (a :class:`~openenv_gym.errors.CodecError` where
    ``data`` has none)."""
    if key is None:
        return codec.decode(data, "")
    if key not in data:
        raise CodecError(f"field {key!r}: missing; the {what} has fields {list(data)}", field=key)
    return codec.decode(data[key], key)


def _unwrap(codec: FieldCodec) -> FieldCodec:
    return codec.inner if isinstance(codec, OptionalCodec) else codec


def observation_codec_for_model(model: Any, **kwargs: Any) -> ObservationCodec:
    """:func:`observation_codec` for a Pydantic model class or a dataclass."""
    return observation_codec(model_schema(model, "observation"), **kwargs)


def action_codec_for_model(model: Any, **kwargs: Any) -> ActionCodec:
    """:func:`action_codec` for a Pydantic model class or a dataclass."""
    return action_codec(model_schema(model, "action"), **kwargs)
