"""Image observations as RLlib's convolutional models take them: float32, channels last.

RLlib's new API stack builds a CNN encoder for rank-3 observations and feeds it the
observations as they come. Two things about Atari frames stop it:

* they are ``uint8``: PyTorch's ``conv2d`` refuses a byte input with float weights
  (``RuntimeError: Input type (unsigned char) and bias type (float) should be the same``);
* preprocessed frames are channel first, ``(stack_num, 84, 84)`` as envpool sends them, while
  RLlib's encoder reads ``(height, width, channels)``.

:class:`ImageObservations` is an env-to-module connector piece that turns each ``uint8``
image into ``float32`` in ``[0, 1]`` with its channels last (a 2-D grayscale screen gets one
channel); any other observation space goes through untouched. RLlib writes the converted
observations back into the episodes, so the learner trains on what the module saw.
:func:`~openenv_gym.integrations.rllib.openenv_config` adds it for the Atari ids.

Example:
    >>> import gymnasium as gym, numpy as np
    >>> piece = ImageObservations()
    >>> piece.recompute_output_observation_space(
    ...     gym.spaces.Box(0, 255, (4, 84, 84), np.uint8), gym.spaces.Discrete(6)
    ... )
    Box(0.0, 1.0, (84, 84, 4), float32)
    >>> piece.preprocess(np.full((4, 84, 84), 255, np.uint8), None).max()
    np.float32(1.0)
"""

from __future__ import annotations

from typing import Any, Final

import gymnasium as gym
import numpy as np

from openenv_gym.extras import optional_imports

with optional_imports("openenv_gym.integrations.rllib_images"):
    from ray.rllib.connectors.env_to_module.observation_preprocessor import (
        SingleAgentObservationPreprocessor,
    )

#: A rank-3 image whose first axis is at most this long, and shorter than the other two, is
#: channel first (a stack of up to 16 frames, or 3 colour channels of up to 5 frames).
MAX_LEADING_CHANNELS: Final = 16


def image_layout(space: gym.Space[Any]) -> str | None:
    """How an observation space holds an image: ``"chw"`` (channel first), ``"hwc"``,
    ``"hw"`` (one grayscale screen), or ``None`` when it is no ``uint8`` image.

    Example:
        >>> image_layout(gym.spaces.Box(0, 255, (210, 160, 3), np.uint8))
        'hwc'
        >>> image_layout(gym.spaces.Box(-1.0, 1.0, (4,), np.float32)) is None
        True
    """
    if not isinstance(space, gym.spaces.Box) or space.dtype != np.uint8:
        return None
    shape = space.shape
    if len(shape) == 2:
        return "hw"
    if len(shape) != 3:
        return None
    first, height, width = shape
    return "chw" if first <= MAX_LEADING_CHANNELS and first < min(height, width) else "hwc"


class ImageObservations(SingleAgentObservationPreprocessor):
    """``uint8`` images -> ``float32`` in ``[0, 1]``, channels last; other spaces pass."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._layout: str | None = None

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space[Any], input_action_space: gym.Space[Any]
    ) -> gym.Space[Any]:
        """The space the module sees: ``Box(0, 1, (height, width, channels), float32)``."""
        self._layout = image_layout(input_observation_space)
        if self._layout is None:
            return input_observation_space
        shape = input_observation_space.shape
        assert shape is not None  # a Box (image_layout checked it)
        if self._layout == "chw":
            shape = (shape[1], shape[2], shape[0])
        elif self._layout == "hw":
            shape = (*shape, 1)
        return gym.spaces.Box(0.0, 1.0, shape, np.float32)

    def preprocess(self, observation: Any, episode: Any) -> Any:
        """One observation, converted (or as it came, for a space that is no image)."""
        layout = self._layout
        if layout is None:
            return observation
        image = np.asarray(observation)
        if layout == "chw":
            image = np.moveaxis(image, 0, -1)
        elif layout == "hw":
            image = image[..., np.newaxis]
        return image.astype(np.float32) * np.float32(1 / 255)

    def __call__(self, **kwargs: Any) -> Any:
        """Convert the episodes' last observations (nothing to do for other spaces)."""
        if self._layout is None:
            return kwargs["batch"]
        return super().__call__(**kwargs)


def image_connector(env: Any = None, spaces: Any = None, device: Any = None) -> ImageObservations:
    """An ``env_to_module_connector`` for ``config.env_runners(...)``: one
    :class:`ImageObservations` piece (RLlib calls it with the env, spaces and device)."""
    return ImageObservations()


__all__ = ["MAX_LEADING_CHANNELS", "ImageObservations", "image_connector", "image_layout"]
