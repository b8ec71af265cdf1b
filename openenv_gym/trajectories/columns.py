"""How spaces become Parquet columns, and back: one fixed-shape array column per leaf.

A ``Box`` observation is one column ``observation`` (its shape and dtype kept); a ``Dict``
observation is one column per entry, ``observation.<key>``. ``Discrete`` values are int64,
``MultiDiscrete`` and ``MultiBinary`` keep their space's dtype. Array columns carry the
Arrow extension types of ``datasets`` (``Array2D``..``Array5D``) or fixed-size lists, so
``datasets`` restores shape and dtype by itself; :func:`column_to_numpy` does the same
without ``datasets``.

Example:
    >>> from gymnasium import spaces
    >>> space = spaces.Dict([("pos", spaces.Box(0, 1, (2,))), ("n", spaces.Discrete(3))])
    >>> [(f.name, f.shape, f.dtype) for f in space_fields("observation", space)]
    [('observation.pos', (2,), 'float32'), ('observation.n', (), 'int64')]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from openenv_gym.errors import TrajectoryFormatError

__all__ = ["ArrayField", "column_to_numpy", "join_fields", "space_fields", "split_value"]


@dataclass(frozen=True)
class ArrayField:
    """One recorded column holding arrays of a fixed shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    def feature(self) -> dict[str, Any]:
        """The ``datasets`` feature (as ``Features.to_dict()`` writes it)."""
        value = {"dtype": self.dtype, "_type": "Value"}
        if not self.shape:
            return value
        if len(self.shape) == 1:
            return {"feature": value, "length": self.shape[0], "_type": "List"}
        if len(self.shape) <= 5:
            return {
                "shape": list(self.shape),
                "dtype": self.dtype,
                "_type": f"Array{len(self.shape)}D",
            }
        return {"feature": value, "_type": "List"}  # stored flat; trajectory_arrays reshapes


def space_fields(prefix: str, space: spaces.Space[Any]) -> list[ArrayField]:
    """The columns a space is recorded in (``Dict`` entries become ``prefix.key``).

    Raises:
        TrajectoryFormatError: The space is not Box, Discrete, MultiDiscrete, MultiBinary
            or a Dict of those.
    """
    if isinstance(space, spaces.Box):
        return [ArrayField(prefix, tuple(space.shape), np.dtype(space.dtype).name)]
    if isinstance(space, spaces.Discrete):
        return [ArrayField(prefix, (), "int64")]
    if isinstance(space, spaces.MultiDiscrete):
        return [ArrayField(prefix, tuple(space.nvec.shape), np.dtype(space.dtype).name)]
    if isinstance(space, spaces.MultiBinary):
        shape = tuple(np.atleast_1d(space.n).tolist())
        return [ArrayField(prefix, shape, np.dtype(space.dtype).name)]
    if isinstance(space, spaces.Dict):
        return [f for k, sub in space.spaces.items() for f in space_fields(f"{prefix}.{k}", sub)]
    raise TrajectoryFormatError(
        f"cannot record {prefix} of space {space}: expected Box, Discrete, MultiDiscrete, "
        "MultiBinary or a Dict of those; record a flattened view "
        "(gymnasium.wrappers.FlattenObservation) instead"
    )


def split_value(prefix: str, value: Any, fields: Sequence[ArrayField]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for field in fields:
        item = value
        for key in field.name[len(prefix) :].split(".")[1:]:
            item = item[key]
        out[field.name] = np.asarray(item, dtype=field.dtype).reshape(field.shape)
    return out


def datasets_array_types() -> dict[int, Any]:
    """``datasets``' Array2D..Array5D Arrow extension types by rank, or ``{}`` without it.

    Writing array columns with these types lets ``datasets`` restore ``ArrayND`` features
    (shape and dtype) from the Parquet files; without ``datasets`` the columns are plain
    nested lists, which :func:`trajectory_arrays` reshapes the same way.
    """
    try:
        from datasets.features import features as hf
    except ImportError:
        return {}
    return {
        2: hf.Array2DExtensionType,
        3: hf.Array3DExtensionType,
        4: hf.Array4DExtensionType,
        5: hf.Array5DExtensionType,
    }


def arrow_column(batch: np.ndarray, field: ArrayField, array_types: Mapping[int, Any]) -> Any:
    import pyarrow as pa

    flat = pa.array(batch.reshape(-1))
    if not field.shape:
        return flat
    if len(field.shape) == 1:
        return pa.FixedSizeListArray.from_arrays(flat, field.shape[0])
    if len(field.shape) > 5:
        size = int(np.prod(field.shape))
        offsets = np.arange(0, len(batch) * size + 1, size, dtype=np.int32)
        return pa.ListArray.from_arrays(pa.array(offsets), flat)
    array: Any = flat
    count = batch.shape[0] * int(np.prod(field.shape))
    for dim in reversed(field.shape):
        count //= dim
        offsets = np.arange(0, (count + 1) * dim, dim, dtype=np.int32)
        array = pa.ListArray.from_arrays(pa.array(offsets), array)
    array_type = array_types.get(len(field.shape))
    if array_type is not None:
        array = pa.ExtensionArray.from_storage(array_type(field.shape, field.dtype), array)
    return array


def column_to_numpy(column: Any, shape: Sequence[int], dtype: str) -> np.ndarray:
    import pyarrow as pa

    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if isinstance(array.type, pa.ExtensionType):
        array = array.storage
    while pa.types.is_list(array.type) or pa.types.is_fixed_size_list(array.type):
        array = array.flatten()
    values = array.to_numpy(zero_copy_only=False).astype(dtype, copy=False)
    return values.reshape((-1, *shape))


def join_fields(prefix: str, space: spaces.Space[Any], arrays: Mapping[str, np.ndarray]) -> Any:
    """The batched value of ``space`` from its columns (a dict of arrays for ``Dict``).

    The inverse of :func:`split_value` over a batch: ``arrays`` maps column names (as
    :func:`space_fields` names them) to arrays with a leading batch axis.
    """
    if isinstance(space, spaces.Dict):
        return {
            key: join_fields(f"{prefix}.{key}", sub, arrays) for key, sub in space.spaces.items()
        }
    return arrays[prefix]
