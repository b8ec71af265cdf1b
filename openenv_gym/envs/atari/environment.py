"""AtariEnvironment: an ALE game (``ale_py.env.AtariEnv``) as an OpenEnv environment.

It speaks the official OpenEnv Atari schema (see :mod:`openenv_gym.envs.atari.models`)
and runs the same ``ale_py`` environment as ``gymnasium.make("ALE/<Game>-v5")``, so with
the same settings, seed and actions the frames, rewards and ends are identical.

Defaults are those of the ``ALE/...-v5`` ids: ``frameskip=4``,
``repeat_action_probability=0.25`` (sticky actions), the minimal action set and at most
108,000 frames per episode. (The official OpenEnv server defaults to no sticky actions:
pass ``repeat_action_probability=0.0`` for that.)

Differences from the official server, all additive: ``reset(seed=...)`` seeds the
emulator (same seed + same actions = same frames); an ``action_id`` outside the action
set is answered ``VALIDATION_ERROR`` (the official server answers ``EXECUTION_ERROR``);
``done`` is also set when the episode is truncated by the frame limit; the reset key
``preprocessing`` (envpool's options, published as ``x-session-preprocessing`` in the
schema; official servers drop it) gives a session its own preprocessing, fixed at its first
reset.

Example:
    >>> env = AtariEnvironment("pong", repeat_action_probability=0.0)
    >>> first = env.reset(seed=0)
    >>> first.screen_shape, len(first.legal_actions), env.action_meanings[:2]
    ([210, 160, 3], 6, ['NOOP', 'FIRE'])
    >>> env.step(env.action_model(action_id=0)).episode_frame_number
    4
    >>> env.close()
    >>> env = AtariEnvironment("pong")  # raw frames by default; this session chooses its own
    >>> env.reset(seed=0, preprocessing={"stack_num": 4}).screen_shape
    [4, 84, 84]
    >>> env.close()
"""

from __future__ import annotations

import dataclasses
import random
import re
import uuid
import warnings
from collections.abc import Mapping
from typing import Any, Final

import numpy as np

from openenv_gym.envs.atari.models import (
    OBS_TYPES,
    PREPROCESSING_RESET_KEY,
    AtariAction,
    AtariObservation,
    AtariState,
    atari_models,
    screen_shape,
)
from openenv_gym.envs.atari.options import (
    DEFAULT_FRAMESKIP,
    DEFAULT_GAME,
    DEFAULT_MAX_FRAMES,
    DEFAULT_OBS_TYPE,
    DEFAULT_REPEAT_ACTION_PROBABILITY,
)
from openenv_gym.envs.atari.preprocessing import (
    PREPROCESSING_NAMES,
    FramePipeline,
    Preprocessing,
)
from openenv_gym.envs.gymnasium.environment import construct_trusted
from openenv_gym.errors import ActionOutOfSpaceError, EnvConfigError
from openenv_gym.extras import optional_imports
from openenv_gym.server.environment import Environment
from openenv_gym.server.models import EnvironmentMetadata
from openenv_gym.wire.messages import observation_message

DOCUMENTATION_URL: Final = "https://ale.farama.org/"
#: Who needs ale-py, in the error when it is missing.
ATARI_PURPOSE: Final = (
    "the Atari server (openenv-gym serve atari, or openenv/Atari-v0 without base_url)"
)


def rom_id(game: str) -> str:
    """The ALE ROM id of a game name: ``"Pong"``, ``"pong"`` -> ``"pong"``;
    ``"SpaceInvaders"``, ``"space-invaders"`` -> ``"space_invaders"``.

    Raises:
        EnvConfigError: No such game in ``ale_py`` (the message lists a few near names).
    """
    with optional_imports(ATARI_PURPOSE):
        from ale_py import roms

    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", game.strip()).replace("-", "_").lower()
    known = roms.get_all_rom_ids()
    if snake in known:
        return snake
    close = [name for name in known if name.startswith(snake[:3])][:8]
    hint = f" Similar: {', '.join(close)}." if close else ""
    raise EnvConfigError(
        f"unknown Atari game {game!r}: expected one of the {len(known)} ALE ROM ids such as "
        f"'pong', 'breakout', 'space_invaders' (ale_py.roms.get_all_rom_ids()).{hint}"
    )


def check_atari_options(obs_type: str, frameskip: int, repeat_action_probability: float) -> None:
    """Validate the numeric and enum options.

    Raises:
        EnvConfigError: An option is out of range.
    """
    if obs_type not in OBS_TYPES:
        raise EnvConfigError(f"expected obs_type 'rgb', 'grayscale' or 'ram', got {obs_type!r}")
    if isinstance(frameskip, bool) or not isinstance(frameskip, int) or frameskip < 1:
        raise EnvConfigError(f"expected frameskip to be an integer >= 1, got {frameskip!r}")
    if not 0.0 <= float(repeat_action_probability) <= 1.0:
        raise EnvConfigError(
            f"expected repeat_action_probability in [0, 1], got {repeat_action_probability!r}"
        )


def _describe(settings: Preprocessing | None, other: Preprocessing | None) -> str:
    """``settings`` where they differ from ``other``: ``"raw ALE frames"``, or
    ``"frames preprocessed with stack_num=2, noop_max=0"``."""
    if settings is None:
        return "raw ALE frames"
    theirs = {} if other is None else dataclasses.asdict(other)
    differ = [f"{k}={v!r}" for k, v in dataclasses.asdict(settings).items() if theirs.get(k) != v]
    return f"frames preprocessed with {', '.join(differ)}"


class AtariEnvironment(Environment[AtariAction, AtariObservation, AtariState]):
    """One ALE game, served over OpenEnv.

    Args:
        game: ALE ROM id or game name (``"pong"``, ``"Breakout"``, ``"space_invaders"``).
        obs_type: ``"rgb"`` (210x160x3), ``"grayscale"`` (210x160) or ``"ram"`` (128 bytes).
        frameskip: Emulator frames per step (the action is repeated, rewards summed).
        repeat_action_probability: Sticky-action probability.
        full_action_space: All 18 actions instead of the game's minimal set.
        mode: Game mode (``None``: the default mode).
        difficulty: Game difficulty (``None``: the default).
        max_num_frames_per_episode: Truncate episodes after this many frames.
        **preprocessing: envpool's preprocessing options (``stack_num``, ``frame_skip``,
            ``episodic_life``, ...; see :mod:`~openenv_gym.envs.atari.preprocessing`); any
            one given (not ``None``) turns preprocessing on, in place of ``obs_type`` and
            ``frameskip``.

    Raises:
        EnvConfigError: Unknown game, bad option, or a mode/difficulty the game lacks.
    """

    def __init__(
        self,
        game: str = DEFAULT_GAME,
        obs_type: str = DEFAULT_OBS_TYPE,
        frameskip: int = DEFAULT_FRAMESKIP,
        repeat_action_probability: float = DEFAULT_REPEAT_ACTION_PROBABILITY,
        full_action_space: bool = False,
        mode: int | None = None,
        difficulty: int | None = None,
        max_num_frames_per_episode: int | None = DEFAULT_MAX_FRAMES,
        **preprocessing: Any,
    ) -> None:
        check_atari_options(obs_type, frameskip, repeat_action_probability)
        unknown = sorted(set(preprocessing) - set(PREPROCESSING_NAMES))
        if unknown:
            raise EnvConfigError(
                f"unknown Atari option(s) {unknown}: expected some of {list(PREPROCESSING_NAMES)}"
            )
        settings = Preprocessing.from_options(preprocessing, frameskip)
        if settings is not None and obs_type == "ram":
            raise EnvConfigError(
                "obs_type='ram' has no frames to preprocess: drop the preprocessing options "
                f"{sorted(k for k, v in preprocessing.items() if v is not None)} or use "
                "obs_type='rgb'"
            )
        self.game = rom_id(game)
        self.obs_type = obs_type
        self._emulator_options: dict[str, Any] = {
            "game": self.game,
            "mode": mode,
            "difficulty": difficulty,
            "repeat_action_probability": float(repeat_action_probability),
            "full_action_space": full_action_space,
            "max_num_frames_per_episode": max_num_frames_per_episode,
        }
        self._frameskip = frameskip
        self._env = (
            self._emulator(obs_type, frameskip) if settings is None else self._emulator("rgb", 1)
        )
        self.action_meanings: list[str] = list(self._env.get_action_meanings())
        self._n_actions = len(self.action_meanings)
        self._legal_actions = list(range(self._n_actions))
        self._state = AtariState(
            game_name=self.game,
            obs_type=obs_type,  # type: ignore[arg-type]
            full_action_space=full_action_space,
            mode=mode,
            difficulty=difficulty,
            repeat_action_probability=float(repeat_action_probability),
        )
        self._use(settings)
        #: Whether the session's preprocessing is chosen: at its first reset, for good.
        self._chosen = False
        self._steps = 0

    def _emulator(self, obs_type: str, frameskip: int) -> Any:
        """A new ``ale_py`` emulator with this server's game settings.

        Raises:
            EnvConfigError: ALE refuses the settings (e.g. a mode the game lacks).
        """
        with optional_imports(ATARI_PURPOSE):
            from ale_py.env import AtariEnv

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return AtariEnv(
                    obs_type=obs_type,  # type: ignore[arg-type]
                    frameskip=frameskip,
                    **self._emulator_options,
                )
        except Exception as exc:
            raise EnvConfigError(f"cannot start Atari game {self.game!r}: {exc}") from exc

    def _use(self, settings: Preprocessing | None) -> None:
        """Send frames preprocessed with ``settings`` (``None``: raw ALE frames) from now on:
        the shape, the pipeline, the models and the state's frame skip."""
        self.preprocessing = settings
        self.shape: tuple[int, ...] = (
            screen_shape(self.obs_type) if settings is None else settings.observation_shape
        )
        self._shape_list = list(self.shape)
        self._pipeline = None if settings is None else FramePipeline(self._env, settings)
        self.action_model, self.observation_model = atari_models(
            self.shape,
            self.action_meanings,
            preprocessed=settings is not None,
            preprocessing=None if settings is None else dataclasses.asdict(settings),
        )
        self._state.frameskip = self._frameskip if settings is None else settings.frame_skip
        self._steps = 0

    def _choose(self, requested: Any) -> None:
        """Take a session's own preprocessing (the ``preprocessing`` reset key) at its first
        reset; a later reset may only repeat it.

        Raises:
            EnvConfigError: ``requested`` is not an object of envpool options, a value is
                bad, or it differs from what the session chose at its first reset.
        """
        if requested is None:
            self._chosen = True
            return
        if not isinstance(requested, Mapping):
            raise EnvConfigError(
                f"expected the reset key {PREPROCESSING_RESET_KEY!r} to be an object of "
                f"envpool options such as {{'stack_num': 4}}, got {requested!r}"
            )
        unknown = sorted(set(requested) - set(PREPROCESSING_NAMES))
        if unknown:
            raise EnvConfigError(
                f"unknown preprocessing option(s) {unknown} in the reset key "
                f"{PREPROCESSING_RESET_KEY!r}: expected some of {list(PREPROCESSING_NAMES)}"
            )
        settings = Preprocessing.from_options(requested, self._frameskip) or self.preprocessing
        if settings == self.preprocessing:
            self._chosen = True
            return
        if self._chosen:
            raise EnvConfigError(
                "this session's preprocessing is fixed at its first reset: it sends "
                f"{_describe(self.preprocessing, settings)}; this reset asks for "
                f"{_describe(settings, self.preprocessing)}. "
                "Open a new env for other options: gym.make('openenv/Atari-v0', "
                "base_url=..., <the options>)"
            )
        if self._pipeline is None:  # raw frames so far: the pipeline needs RGB, no skipping
            emulator = self._emulator("rgb", 1)
            self._env.close()
            self._env = emulator
        self._use(settings)
        self._chosen = True

    @property
    def ale(self) -> Any:
        """The ``ale_py.ALEInterface`` (for tests and advanced use)."""
        return self._env.ale

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        preprocessing: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> AtariObservation:
        """Start an episode; ``seed`` seeds the emulator (and sticky actions).

        Args:
            seed: Seeds the emulator.
            episode_id: The episode's id (default: a new UUID).
            preprocessing: This session's own preprocessing (envpool's options, e.g.
                ``{"stack_num": 4}``), taken at its first reset and fixed from then on.
            **kwargs: Other reset keys (ignored).

        Raises:
            EnvConfigError: ``preprocessing`` is malformed, has a bad value, or differs
                from what an earlier reset of the session chose.
        """
        if preprocessing is not None or not self._chosen:
            self._choose(preprocessing)
        info: Mapping[str, Any]
        if self._pipeline is not None:
            screen, info = self._pipeline.reset(seed)
        else:
            screen, info = self._env.reset(seed=seed)
        self._state.episode_id = episode_id if episode_id is not None else str(uuid.uuid4())
        self._steps = 0
        return self._observation(screen, info, 0.0, False)

    def step(self, action: AtariAction) -> AtariObservation:
        """Apply ``action.action_id`` for ``frameskip`` frames.

        Raises:
            ActionOutOfSpaceError: ``action_id`` is not in ``legal_actions``.
        """
        screen, reward, done, info = self._act(action.action_id)
        return self._observation(screen, info, reward, done)

    def step_reply(self, data: dict[str, Any]) -> dict[str, Any] | None:
        """The fast path for ``{"action_id": <int>}`` (what our client sends): the reply
        :meth:`step` and the server's serialization would give, without building and
        dumping the pydantic observation; anything else goes through validation."""
        action_id = data.get("action_id")
        if type(action_id) is not int or len(data) != 1:
            return None
        screen, reward, done, info = self._act(action_id)
        metadata = self._metadata()
        fields = {"metadata": metadata, **self._fields(screen, info)}
        return observation_message(fields, reward, done, metadata)

    def _act(self, action_id: int) -> tuple[np.ndarray, float, bool, Mapping[str, Any]]:
        """One step of the emulator: screen, reward, done, info.

        Raises:
            ActionOutOfSpaceError: ``action_id`` is not in ``legal_actions``.
        """
        if not 0 <= action_id < self._n_actions:
            raise ActionOutOfSpaceError(
                f"action_id {action_id} is not a legal action of {self.game}: expected an "
                f"integer in 0..{self._n_actions - 1} ({', '.join(self.action_meanings)})",
                field="action_id",
            )
        self._steps += 1  # a plain int: a validated pydantic assignment costs µs per step
        if self._pipeline is not None:
            return self._pipeline.step(action_id)
        screen, reward, terminated, truncated, info = self._env.step(action_id)
        return screen, float(reward), bool(terminated or truncated), info

    def _metadata(self) -> dict[str, Any]:
        """The ``metadata`` of every observation: the game and its action meanings."""
        return {"game_name": self.game, "action_meanings": list(self.action_meanings)}

    def _fields(self, screen: np.ndarray, info: Mapping[str, Any]) -> dict[str, Any]:
        """The observation fields after ``metadata``, in the schema's order."""
        fields = {
            "screen": screen.reshape(-1),
            "screen_shape": list(self._shape_list),
            "legal_actions": list(self._legal_actions),
            "lives": int(info.get("lives", 0)),
            "episode_frame_number": int(info.get("episode_frame_number", 0)),
            "frame_number": int(info.get("frame_number", 0)),
        }
        if self._pipeline is not None:
            fields["raw_reward"] = info["raw_reward"]
            fields["game_over"] = info["game_over"]
        return fields

    def sample_action(self) -> dict[str, Any]:
        """A random legal action, as ``step`` data (for :mod:`openenv_gym.server.step_cost`)."""
        return {"action_id": random.randrange(self._n_actions)}

    def _observation(
        self, screen: np.ndarray, info: Mapping[str, Any], reward: float, done: bool
    ) -> AtariObservation:
        # The screen stays a numpy array: JSON replies list it, binary ones send its bytes.
        return construct_trusted(
            self.observation_model,
            {
                "done": done,
                "reward": reward,
                "metadata": self._metadata(),
                **self._fields(screen, info),
            },
        )

    @property
    def state(self) -> AtariState:
        """The game configuration, episode id and step count."""
        self._state.step_count = self._steps
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        """Name the game and its settings."""
        return EnvironmentMetadata(
            name=f"Atari {self.game}",
            description=(
                f"ALE {self.game} served over OpenEnv: "
                f"{self.obs_type if self.preprocessing is None else 'preprocessed'} observations "
                f"{list(self.shape)}, {self._n_actions} actions ({', '.join(self.action_meanings)})"
            ),
            version="1.0.0",
            documentation_url=DOCUMENTATION_URL,
        )

    def close(self) -> None:
        """Close the emulator."""
        self._env.close()


__all__ = [
    "AtariEnvironment",
    "check_atari_options",
    "rom_id",
]
