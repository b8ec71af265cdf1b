"""Atari preprocessing where the emulator runs, with envpool's option names and meanings.

:class:`Preprocessing` holds the options (``frame_skip``, ``gray_scale``, ``img_height``,
``img_width``, ``stack_num``, ``noop_max``, ``use_fire_reset``, ``episodic_life``,
``reward_clip``, ``use_inter_area_resize``, ``zero_discount_on_life_loss``);
:class:`FramePipeline` runs them on one ``ale_py`` emulator stepped frame by frame, so only
the preprocessed frames leave the server. The order is OpenAI Baselines' (and SB3's
``AtariWrapper``): no-op reset, frame skip with a max-pool over the last two frames, life loss
as episode end, fire reset, grayscale and resize (``cv2.INTER_AREA``), reward clipping; then
envpool's frame stack, channel first: ``(stack_num, img_height, img_width)`` in grayscale,
``(3 * stack_num, img_height, img_width)`` in colour.

Where the references differ, this follows:

* grayscale: ALE's own luminance palette (``getScreenGrayscale``), as envpool and Gymnasium's
  ``AtariPreprocessing`` do (SB3's ``WarpFrame`` converts the RGB frame with ``cv2``; its
  values may differ by one level);
* the frame of a step that ends the game before the last frame of the skip: the last frames
  actually emulated (Gymnasium repeats the previous step's frame there);
* the reset after a life loss (``episodic_life``): one NOOP step, as SB3's ``EpisodicLifeEnv``;
  ``use_fire_reset``: then FIRE and the game's action 2, one step each, as SB3's
  ``FireResetEnv`` (envpool presses FIRE for one frame);
* ``zero_discount_on_life_loss`` changes only dm_env's discount in envpool; the Gymnasium API
  has none, so it changes nothing here either.

Example:
    >>> Preprocessing.from_options({}) is None  # no option given: raw ALE frames
    True
    >>> settings = Preprocessing.from_options({"stack_num": 4})
    >>> settings.frame_skip, settings.noop_max, settings.observation_shape
    (4, 30, (4, 84, 84))
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

import numpy as np

from openenv_gym.errors import EnvConfigError
from openenv_gym.extras import optional_imports

#: Raw ALE screen size.
_RAW_HEIGHT: Final = 210
_RAW_WIDTH: Final = 160


@dataclasses.dataclass(frozen=True)
class Preprocessing:
    """The preprocessing options; defaults are envpool's (``envpool.make("Pong-v5")``)."""

    frame_skip: int = 4
    gray_scale: bool = True
    img_height: int = 84
    img_width: int = 84
    stack_num: int = 4
    noop_max: int = 30
    use_fire_reset: bool = True
    episodic_life: bool = False
    reward_clip: bool = False
    use_inter_area_resize: bool = True
    zero_discount_on_life_loss: bool = False

    @classmethod
    def from_options(cls, options: Mapping[str, Any], frameskip: int = 4) -> Preprocessing | None:
        """The settings of the given options (``None`` values are unset), or ``None`` when
        none is set (the server then sends raw ALE frames, as ``ALE/<Game>-v5``).

        An unset ``frame_skip`` takes ``frameskip`` (the ALE option, default 4); the other
        unset options take envpool's defaults.

        Raises:
            EnvConfigError: An option has the wrong type or is out of range.
        """
        given = {f.name: options[f.name] for f in FIELDS if options.get(f.name) is not None}
        if not given:
            return None
        given.setdefault("frame_skip", frameskip)
        for name, value in given.items():
            _check(name, value)
        return cls(**given)

    @property
    def channels(self) -> int:
        """Channels of one frame: 1 in grayscale, 3 in colour."""
        return 1 if self.gray_scale else 3

    @property
    def observation_shape(self) -> tuple[int, int, int]:
        """What each observation is: ``(channels * stack_num, img_height, img_width)``."""
        return (self.channels * self.stack_num, self.img_height, self.img_width)


#: SB3's ``AtariWrapper`` defaults (+ ``VecFrameStack(n_stack=4)``) as these options:
#: ``gym.make("openenv/Atari-v0", game="pong", **ATARI_WRAPPER_OPTIONS)``.
ATARI_WRAPPER_OPTIONS: Final[Mapping[str, Any]] = MappingProxyType(
    {
        "noop_max": 30,
        "frame_skip": 4,
        "episodic_life": True,
        "use_fire_reset": True,
        "reward_clip": True,
        "img_height": 84,
        "img_width": 84,
        "gray_scale": True,
        "stack_num": 4,
    }
)

#: The fields of :class:`Preprocessing`, in order.
FIELDS: Final = dataclasses.fields(Preprocessing)
#: Their names: the server options that turn preprocessing on.
PREPROCESSING_NAMES: Final = tuple(f.name for f in FIELDS)
_MINIMUM: Final = {"frame_skip": 1, "img_height": 1, "img_width": 1, "stack_num": 1, "noop_max": 0}


def _check(name: str, value: Any) -> None:
    if name in _MINIMUM:
        low = _MINIMUM[name]
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise EnvConfigError(
                f"expected {name} to be an integer >= {low}, got {value!r}; e.g. "
                f"gym.make('openenv/Atari-v0', {name}={max(low, 4)})"
            )
    elif not isinstance(value, bool | np.bool_):
        raise EnvConfigError(
            f"expected {name} to be True or False, got {value!r}; e.g. "
            f"gym.make('openenv/Atari-v0', {name}=True)"
        )


class FramePipeline:
    """One emulator (``ale_py.env.AtariEnv`` with ``frameskip=1``) behind the preprocessing.

    Args:
        env: The emulator env; it must skip no frames itself.
        settings: The preprocessing.

    Example:
        >>> from ale_py.env import AtariEnv
        >>> pipeline = FramePipeline(
        ...     AtariEnv("pong", frameskip=1, repeat_action_probability=0.0),
        ...     Preprocessing(noop_max=0),
        ... )
        >>> frames, info = pipeline.reset(seed=0)
        >>> frames.shape, frames.dtype, info["lives"]
        ((4, 84, 84), dtype('uint8'), 0)
        >>> frames, reward, done, info = pipeline.step(0)
        >>> reward, done, info["game_over"]
        (0.0, False, False)
    """

    def __init__(self, env: Any, settings: Preprocessing) -> None:
        with optional_imports("Atari preprocessing (resizing frames)"):
            import cv2
        self._cv2 = cv2
        self._env = env
        ale = self._ale = env.ale
        self.settings = settings
        # Bound once: an agent step calls them a dozen times.
        self._act_frame = ale.act
        self._is_over = ale.game_over
        self._grab_screen = ale.getScreenGrayscale if settings.gray_scale else ale.getScreenRGB
        self._actions = list(env.ale.getMinimalActionSet())
        if len(env.get_action_meanings()) != len(self._actions):
            self._actions = list(env.ale.getLegalActionSet())
        meanings = env.get_action_meanings()
        self._fire = settings.use_fire_reset and len(meanings) >= 3 and meanings[1] == "FIRE"
        raw = (_RAW_HEIGHT, _RAW_WIDTH) if settings.gray_scale else (_RAW_HEIGHT, _RAW_WIDTH, 3)
        self._raw = [np.zeros(raw, np.uint8), np.zeros(raw, np.uint8)]
        self._pooled = np.zeros(raw, np.uint8)  # the max of the two, written in place
        small = (settings.img_height, settings.img_width)
        #: ``cv2.resize``'s (width, height), or ``None``: frames keep ALE's size.
        self._resize_to = None if small == (_RAW_HEIGHT, _RAW_WIDTH) else small[::-1]
        self._frame_shape = (settings.channels, *small)
        self._small = np.zeros(small if settings.gray_scale else (*small, 3), np.uint8)
        #: The frame stack last handed out. Each push writes a new array (the old frames
        #: shifted, the new one last), so an observation handed out is never written again:
        #: no copy per step, and a final observation outlives the reset after it.
        self._stack = np.zeros(settings.observation_shape, np.uint8)
        self._interpolation = cv2.INTER_AREA if settings.use_inter_area_resize else cv2.INTER_LINEAR
        self._lives = 0
        self._game_over = True

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode: a new game (seeded if ``seed``), then the no-ops and the fire
        reset; with ``episodic_life`` after a life loss, go on with the same game instead.

        Returns:
            The stacked frames and the info (``lives``, frame numbers, ``game_over``,
            ``raw_reward``).
        """
        s = self.settings
        new_game = not s.episodic_life or self._game_over or seed is not None
        if new_game:
            self._env.reset(seed=seed)
            noops = int(self._env.np_random.integers(1, s.noop_max + 1)) if s.noop_max else 0
            for _ in range(noops):
                self._ale.act(self._actions[0])
                if self._ale.game_over():
                    self._env.reset()
            self._grab(self._raw[0])
            frame = self._raw[0]
        else:
            frame, _, _ = self._skip(0)
        if self._fire:
            for action in (1, 2):
                frame, _, _ = self._skip(action)
                if self._ale.game_over():
                    self._env.reset()
                    frame = self._grab(self._raw[0])
        self._lives = self._ale.lives()
        self._game_over = False
        self._push(frame, fill=new_game)
        return self._stack, self._info(0.0, self._lives, bool(self._ale.game_over()))

    def step(self, action: int) -> tuple[np.ndarray, float, bool, dict[str, Any]]:
        """One agent step: ``frame_skip`` frames of ``action``.

        Returns:
            The stacked frames, the reward (clipped with ``reward_clip``), done (game over,
            or a life lost with ``episodic_life``), and the info (``raw_reward`` the unclipped
            reward, ``game_over`` the real end of the game).
        """
        frame, reward, over = self._skip(action)
        lives = self._ale.lives()
        life_lost = self.settings.episodic_life and 0 < lives < self._lives
        self._lives = lives
        self._game_over = over
        self._push(frame, fill=False)
        clipped = float((reward > 0) - (reward < 0)) if self.settings.reward_clip else reward
        return self._stack, clipped, over or life_lost, self._info(reward, lives, over)

    def _skip(self, action: int) -> tuple[np.ndarray, float, bool]:
        """Repeat ``action`` for ``frame_skip`` frames (fewer if the game ends): the max of
        the last two frames emulated (one if only one was), the summed reward, and whether
        the game is over."""
        act, is_over, grab = self._act_frame, self._is_over, self._grab_screen
        first, second = self._raw
        ale_action = self._actions[action]
        skip = self.settings.frame_skip
        reward = 0
        over = False
        grabbed = 0
        for t in range(skip):
            reward += act(ale_action)
            over = bool(is_over())
            if over or t >= skip - 2:
                grab(second if grabbed else first)  # at most two: the last two frames
                grabbed += 1
            if over:
                break
        if grabbed == 1:
            return first, float(reward), over
        return np.maximum(first, second, out=self._pooled), float(reward), over

    def _grab(self, out: np.ndarray) -> np.ndarray:
        self._grab_screen(out)
        return out

    def _push(self, frame: np.ndarray, *, fill: bool) -> None:
        """Resize ``frame`` and push it onto a new stack (into every slot with ``fill``)."""
        s = self.settings
        if self._resize_to is not None:
            frame = self._cv2.resize(
                frame, self._resize_to, dst=self._small, interpolation=self._interpolation
            )
        if not s.gray_scale:
            frame = frame.transpose(2, 0, 1)
        if fill:
            self._stack = np.tile(frame.reshape(self._frame_shape), (s.stack_num, 1, 1))
            return
        old = self._stack
        stack = self._stack = np.empty_like(old)
        c = self._frame_shape[0]
        stack[:-c] = old[c:]
        stack[-c:] = frame.reshape(self._frame_shape)

    def _info(self, raw_reward: float, lives: int, game_over: bool) -> dict[str, Any]:
        """The info of a reset or step; ``lives`` and ``game_over`` as the caller read them
        (a step has them already: no second call into the emulator)."""
        ale = self._ale
        return {
            "lives": int(lives),
            "episode_frame_number": int(ale.getEpisodeFrameNumber()),
            "frame_number": int(ale.getFrameNumber()),
            "raw_reward": float(raw_reward),
            "game_over": game_over,
        }


__all__ = [
    "ATARI_WRAPPER_OPTIONS",
    "FIELDS",
    "PREPROCESSING_NAMES",
    "FramePipeline",
    "Preprocessing",
]
