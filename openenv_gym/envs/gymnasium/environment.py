"""GymnasiumEnvironment: any Gymnasium env id as an OpenEnv :class:`Environment`.

``reset(seed, episode_id, **options)`` calls ``env.reset(seed=seed, options=options or
None)``; ``step`` decodes the wire action with the action space's exact dtype and shape,
refuses actions outside the space, and reports ``done = terminated or truncated``, the exact
``terminated`` and ``truncated`` (both may be true), a float reward and the ``info`` dict
(made JSON-safe) as ``metadata``. An env id that renders ``rgb_array`` is made with that
render mode when it can draw here (classic-control envs need pygame, the ``render`` extra;
see :mod:`~openenv_gym.envs.gymnasium.render_support`) and ``state.frame`` carries the
current frame.
Seeded episodes reproduce plain ``gymnasium.make(env_id)`` exactly. Array observations
(Box, MultiDiscrete, MultiBinary) stay numpy arrays in the observation model: JSON replies
list them, sessions that negotiated ``openenv-gym.binary.v1`` get their raw bytes.

Example:
    >>> env = GymnasiumEnvironment("CartPole-v1")
    >>> first = env.reset(seed=0)
    >>> len(first.observation), first.done
    (4, False)
    >>> after = env.step(env.action_model(action=1))
    >>> after.reward, after.terminated, after.truncated, env.state.step_count
    (1.0, False, False, 1)
    >>> env.close()
"""

from __future__ import annotations

import math
import os
import uuid
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from pydantic import BaseModel

from openenv_gym.envs.gymnasium.models import (
    GymnasiumAction,
    GymnasiumObservation,
    GymnasiumState,
    describe_space,
    gymnasium_models,
)
from openenv_gym.envs.gymnasium.render_support import served_render_modes
from openenv_gym.errors import ActionOutOfSpaceError
from openenv_gym.extras import missing_extra
from openenv_gym.server.environment import Environment
from openenv_gym.server.models import EnvironmentMetadata
from openenv_gym.spaces.frames import RENDER_RESET_KEY, encode_frame
from openenv_gym.spaces.serialization import from_wire, to_wire
from openenv_gym.wire.messages import observation_message

DOCUMENTATION_URL = "https://gymnasium.farama.org/"
ModelT = TypeVar("ModelT", bound=BaseModel)
_setattr = object.__setattr__


def json_safe(value: Any) -> Any:
    """A copy of ``value`` that ``json.dumps`` accepts: numpy arrays become lists, numpy
    scalars python numbers, tuples/sets lists, dict keys strings; other objects their ``str``.

    Example:
        >>> json_safe({"x": np.arange(3), 1: (np.float32(0.5), None)})
        {'x': [0, 1, 2], '1': [0.5, None]}
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, np.generic):
        return json_safe(value.item())
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(v) for v in value]
    return str(value)


def construct_trusted(model: type[ModelT], values: dict[str, Any]) -> ModelT:
    """Build ``model`` from values known to be valid, without validation.

    The same object :meth:`pydantic.BaseModel.model_construct` builds, for models without
    private attributes or extras, at a fraction of its cost: this runs on every step.
    ``values`` must hold every field, in declaration order.
    """
    instance = model.__new__(model)
    _setattr(instance, "__dict__", values)
    _setattr(instance, "__pydantic_fields_set__", set(values))
    _setattr(instance, "__pydantic_extra__", None)
    _setattr(instance, "__pydantic_private__", None)
    return instance


class GymnasiumEnvironment(Environment[GymnasiumAction, GymnasiumObservation, GymnasiumState]):
    """A Gymnasium env served as OpenEnv.

    Args:
        env_id: Any registered Gymnasium id (``"CartPole-v1"``, ``"Pendulum-v1"``, ...).
        **make_kwargs: Passed to ``gymnasium.make``.

    Attributes:
        action_model: The pydantic action model of this env id (one field, ``action``).
        observation_model: The pydantic observation model (``observation``, ``truncated``).

    Raises:
        gymnasium.error.Error: ``gymnasium.make`` failed (unknown id, bad kwargs).
        SpaceMappingError: A space is not Box, Discrete, MultiDiscrete or MultiBinary.
    """

    def __init__(self, env_id: str, **make_kwargs: Any) -> None:
        self.env_id = env_id
        # rgb_array only when it can be drawn here (pygame for classic control): a client
        # then sees render_modes == [] and check_env's defaults pass on the base install.
        if "render_mode" not in make_kwargs and served_render_modes(env_id):
            make_kwargs = {**make_kwargs, "render_mode": "rgb_array"}
        self._env = gym.make(env_id, **make_kwargs)
        self.render_modes: tuple[str, ...] = (
            ("rgb_array",) if self._env.render_mode == "rgb_array" else ()
        )
        try:
            self.action_space = self._env.action_space
            self.observation_space = self._env.observation_space
            self.action_model, self.observation_model = gymnasium_models(
                env_id, self.action_space, self.observation_space, self.render_modes
            )
        except BaseException:
            self._env.close()
            raise
        self._episode_id: str | None = None
        self._send_frames = False
        self._step_count = 0
        self._array_observation = isinstance(
            self.observation_space, spaces.Box | spaces.MultiDiscrete | spaces.MultiBinary
        )
        if isinstance(self.action_space, spaces.Discrete):
            start = int(self.action_space.start)
            self._discrete_range: range | None = range(start, start + int(self.action_space.n))
        else:
            self._discrete_range = None

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> GymnasiumObservation:
        """Reset with ``seed``; other keys become the Gymnasium reset ``options``."""
        self._send_frames = bool(kwargs.pop(RENDER_RESET_KEY, False)) and bool(self.render_modes)
        observation, info = self._env.reset(seed=seed, options=kwargs or None)
        self._episode_id = episode_id if episode_id is not None else str(uuid.uuid4())
        self._step_count = 0
        return construct_trusted(
            self.observation_model,
            {
                "done": False,
                "reward": None,
                "metadata": json_safe(info) if info else {},
                "observation": self._wire_observation(observation),
                "truncated": False,
                "terminated": False,
            },
        )

    def step(self, action: GymnasiumAction) -> GymnasiumObservation:
        """Apply ``action.action`` (a wire value of the action space).

        Raises:
            ActionOutOfSpaceError: The action is not an element of the action space (the
                server answers ``VALIDATION_ERROR``).
        """
        return construct_trusted(self.observation_model, self._step_fields(action.action))  # type: ignore[attr-defined]

    def step_reply(self, data: dict[str, Any]) -> dict[str, Any] | None:
        """The fast path for a discrete action sent as a plain int (see
        :meth:`Environment.step_reply`); anything else goes through validation."""
        if self._discrete_range is None or len(data) != 1:
            return None
        wire = data.get("action")
        if type(wire) is not int:
            return None
        observation, reward, terminated, truncated, info = self._env.step(self._decode_action(wire))
        self._step_count += 1
        metadata = json_safe(info) if info else {}
        fields = {
            "metadata": metadata,
            "observation": self._wire_observation(observation),
            "truncated": bool(truncated),
            "terminated": bool(terminated),
        }
        return observation_message(fields, float(reward), bool(terminated or truncated), metadata)

    def sample_action(self) -> dict[str, Any]:
        """A random action of the action space, as ``step`` data (for
        :mod:`openenv_gym.server.step_cost`)."""
        return {"action": to_wire(self.action_space, self.action_space.sample())}

    def _step_fields(self, wire: Any) -> dict[str, Any]:
        value = self._decode_action(wire)
        observation, reward, terminated, truncated, info = self._env.step(value)
        self._step_count += 1
        return {
            "done": bool(terminated or truncated),
            "reward": float(reward),
            "metadata": json_safe(info) if info else {},
            "observation": self._wire_observation(observation),
            "truncated": bool(truncated),
            "terminated": bool(terminated),
        }

    def _wire_observation(self, observation: Any) -> Any:
        """The observation as it goes into the model: arrays as arrays, else wire values."""
        if self._array_observation:
            return np.asarray(observation)
        return to_wire(self.observation_space, observation)

    def _decode_action(self, wire: Any) -> Any:
        """The wire action as an element of the action space, or ActionOutOfSpaceError."""
        discrete = self._discrete_range
        if discrete is not None and type(wire) is int:  # the common case, checked cheaply
            if wire in discrete:
                return np.int64(wire)
        else:
            value = from_wire(self.action_space, wire, field="action")
            if self.action_space.contains(value):
                return value
        raise ActionOutOfSpaceError(
            f"action {wire!r} is not an element of the action space {self.action_space} "
            f"of {self.env_id}; send a value inside the space",
            field="action",
        )

    @property
    def state(self) -> GymnasiumState:
        """Episode id, step count, env id and (when the env renders) the current frame."""
        state = GymnasiumState(
            episode_id=self._episode_id, step_count=self._step_count, env_id=self.env_id
        )
        if self._send_frames:
            # Headless: pygame-drawn envs need no display and no sound card.
            os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
            os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
            try:
                image: Any = self._env.render()
            except gym.error.DependencyNotInstalled as exc:
                if "pygame" not in str(exc):
                    raise
                # The install that fixes it, on the server's side (the embedded server runs
                # in the client's environment).
                raise missing_extra("pygame", f"rendering {self.env_id}") from exc
            if image is not None:
                state.frame = encode_frame(np.asarray(image, dtype=np.uint8))  # type: ignore[attr-defined]
        return state

    def get_metadata(self) -> EnvironmentMetadata:
        """Name the env id and its spaces."""
        return EnvironmentMetadata(
            name=self.env_id,
            description=(
                f"Gymnasium {self.env_id} served over OpenEnv: "
                f"{describe_space(self.action_space)} actions, "
                f"{describe_space(self.observation_space)} observations"
            ),
            documentation_url=DOCUMENTATION_URL,
        )

    def close(self) -> None:
        """Close the Gymnasium env."""
        self._env.close()


__all__ = ["GymnasiumEnvironment", "construct_trusted", "json_safe"]
