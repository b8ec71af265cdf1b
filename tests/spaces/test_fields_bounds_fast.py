"""Bounds checks of Box fields: the fast paths decide exactly like the elementwise check."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from openenv_gym.errors import CodecError
from openenv_gym.spaces.fields import NumericArrayCodec


def test_flat_rows_of_a_batch_are_reshaped_like_a_single_decode() -> None:
    codec = NumericArrayCodec(spaces.Box(0, 255, (2, 3), np.uint8))
    flat = np.arange(12, dtype=np.uint8).reshape(2, 6)
    decoded = codec.decode_batch(flat, 2, "x")
    assert decoded.shape == (2, 2, 3)
    np.testing.assert_array_equal(decoded[1], codec.decode(flat[1], "x"))


@pytest.mark.parametrize(
    ("space", "value"),
    [
        (spaces.Box(0, 255, (3,), np.uint8), np.array([1, 256, 3])),  # int64 wire, not uint8
        (spaces.Box(0, 10, (3,), np.uint8), np.array([1, 11, 3], np.uint8)),
        (spaces.Box(-1.0, 1.0, (3,), np.float32), np.array([0.0, np.nan, 0.5])),
        (spaces.Box(np.array([0, 0, 0]), np.array([1, 2, 3]), (3,), np.int64), np.array([1, 2, 4])),
    ],
)
def test_out_of_bounds_values_still_raise_in_both_paths(
    space: spaces.Box, value: np.ndarray
) -> None:
    codec = NumericArrayCodec(space)
    with pytest.raises(CodecError, match="out of bounds"):
        codec.decode(value, "x")
    with pytest.raises(CodecError, match="out of bounds"):
        codec.decode_batch(np.stack([value, value]), 2, "x")


def test_full_range_uint8_batches_pass_and_are_not_copied() -> None:
    codec = NumericArrayCodec(spaces.Box(0, 255, (4,), np.uint8))
    batch = np.array([[0, 255, 7, 9], [1, 2, 3, 4]], np.uint8)
    decoded = codec.decode_batch(batch, 2, "x")
    np.testing.assert_array_equal(decoded, batch)
    assert np.shares_memory(decoded, batch)
