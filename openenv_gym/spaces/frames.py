"""Rendered frames on the wire: an RGB image as base64 raw bytes with its shape and dtype.

Our gymnasium servers render remotely: the observation schema lists the server's render
modes under :data:`X_RENDER_MODES`; a session whose reset sent :data:`RENDER_RESET_KEY`
gets ``frame`` (this form) in every ``state`` reply. Base64 of the raw bytes is a third of
the size of a JSON list of numbers and decodes without parsing one number at a time.

Example:
    >>> import numpy as np
    >>> image = np.arange(12, dtype=np.uint8).reshape(2, 2, 3)
    >>> wire = encode_frame(image)
    >>> wire["shape"], wire["dtype"]
    ([2, 2, 3], 'uint8')
    >>> bool((decode_frame(wire) == image).all())
    True
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, Final

import numpy as np

from openenv_gym.errors import CodecError

#: Top-level observation-schema key listing the render modes the server serves.
X_RENDER_MODES: Final = "x-render-modes"
#: The reset key a client sends (``true``) to have the episode's ``state`` carry ``frame``;
#: official servers drop unknown reset keys, so it is safe to send.
RENDER_RESET_KEY: Final = "openenv_gym_render"


def encode_frame(image: np.ndarray) -> dict[str, Any]:
    """An image -> ``{"shape": [...], "dtype": "uint8", "data": "<base64>"}``."""
    array = np.ascontiguousarray(image)
    return {
        "shape": list(array.shape),
        "dtype": array.dtype.name,
        "data": base64.b64encode(array.tobytes()).decode("ascii"),
    }


def decode_frame(wire: Any) -> np.ndarray:
    """The wire form of :func:`encode_frame` -> the image.

    Raises:
        CodecError: ``wire`` is not such a frame.
    """
    try:
        if not isinstance(wire, Mapping):
            raise TypeError(f"expected an object, got {type(wire).__name__}")
        dtype = np.dtype(str(wire["dtype"]))
        shape = tuple(int(n) for n in wire["shape"])
        data = base64.b64decode(wire["data"], validate=True)
        return np.frombuffer(data, dtype=dtype).reshape(shape).copy()
    except (KeyError, TypeError, ValueError) as exc:
        raise CodecError(
            "expected a rendered frame {'shape': [H, W, 3], 'dtype': 'uint8', 'data': base64}, "
            f"got something else: {exc}",
            field="frame",
        ) from exc


__all__ = ["RENDER_RESET_KEY", "X_RENDER_MODES", "decode_frame", "encode_frame"]
