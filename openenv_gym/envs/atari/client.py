"""The Gymnasium side of Atari: ``gym.make("openenv/Atari-v0", ...)``.

:class:`AtariOpenEnvEnv` is an :class:`~openenv_gym.env.OpenEnvEnv` that knows the OpenEnv
Atari schema. Against our server it reads the exact spaces and action meanings from the
``x-`` keys of ``GET /schema``; against an official OpenEnv Atari server (no ``x-`` keys)
it derives them from ``game``, ``obs_type`` and ``full_action_space`` (which must then
match the server's settings) with a local ``ale_py``:

* observation: ``Box(0, 255, (210, 160, 3), uint8)`` for ``rgb``, ``(210, 160)`` for
  ``grayscale``, ``(128,)`` for ``ram``; the other fields (``lives``, frame numbers, ...)
  go to ``info``;
* action: ``Discrete(n)`` over the action set; :meth:`get_action_meanings` names them;
* ``env.unwrapped.ale.lives()`` answers the lives of the last observation, which is what
  Stable-Baselines3's ``AtariWrapper`` (``EpisodicLifeEnv``) asks.

Example:
    >>> import gymnasium as gym
    >>> env = gym.make("openenv/Atari-v0", game="pong")
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, env.unwrapped.get_action_meanings()
    ((210, 160, 3), ['NOOP', 'FIRE', 'RIGHT', 'LEFT', 'RIGHTFIRE', 'LEFTFIRE'])
    >>> env.close()
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Mapping
from typing import Any, Final

import numpy as np

from openenv_gym.env import OpenEnvEnv
from openenv_gym.envs.atari.environment import check_atari_options
from openenv_gym.envs.atari.models import (
    PREPROCESSING_RESET_KEY,
    SCREEN_FIELD,
    SCREEN_HEIGHT,
    SCREEN_WIDTH,
    X_ACTION_MEANINGS,
    X_PREPROCESSING,
    X_SESSION_PREPROCESSING,
    normalize_meaning,
    screen_shape,
    screen_space,
)
from openenv_gym.envs.atari.options import ATARI_OPTIONS, DEFAULT_GAME, DEFAULT_OBS_TYPE
from openenv_gym.envs.atari.preprocessing import PREPROCESSING_NAMES, Preprocessing
from openenv_gym.errors import EnvConfigError, OpenEnvGymError, ServerMismatchError
from openenv_gym.extras import optional_imports
from openenv_gym.providers import ServerSpec, server_provider
from openenv_gym.providers.base import ServerProvider
from openenv_gym.providers.spec import takes_server_keywords
from openenv_gym.spaces.serialization import X_OBSERVATION_KEY, X_SPACE, space_to_json
from openenv_gym.wire.encoding import DEFAULT_ENCODING

ACTION_FIELD: Final = "action_id"


#: ALE's luminance weights (``ColourManager``: the grayscale palette of the NTSC colours).
_GRAY_WEIGHTS: Final = np.array([0.2989, 0.5870, 0.1140], dtype=np.float64)


class RemoteALE:
    """The part of ``ale_py.ALEInterface`` that wrappers read, from the last observation.

    ``lives()`` is what SB3's ``AtariWrapper`` asks; ``getScreenRGB`` and
    ``getScreenGrayscale`` (filling a given buffer, as ALE does) are what Gymnasium's
    ``AtariPreprocessing`` asks. The screens are those of the last observation: RGB for
    ``obs_type="rgb"`` (grayscale computed with ALE's luminance weights), grayscale for
    ``obs_type="grayscale"``.
    """

    def __init__(self) -> None:
        self._lives = 0
        self._screen: np.ndarray | None = None

    def lives(self) -> int:
        """Lives left, as of the last ``reset``/``step``."""
        return self._lives

    def update(self, lives: int, screen: Any = None) -> None:
        """Record the lives (and the screen) of a new observation."""
        self._lives = lives
        if screen is not None:
            self._screen = np.asarray(screen)

    def getScreenRGB(self, out: np.ndarray | None = None) -> np.ndarray:  # noqa: N802 (ALE's name)
        """The last RGB screen ``(210, 160, 3)`` ``uint8``, written into ``out`` if given.

        Raises:
            EnvConfigError: The env observes grayscale or RAM, which hold no colours.
        """
        screen = self._require_screen()
        if screen.ndim == 3 and screen.shape != (SCREEN_HEIGHT, SCREEN_WIDTH, 3):
            raise _preprocessed(screen, "getScreenRGB")
        if screen.ndim != 3:
            raise EnvConfigError(
                "getScreenRGB needs obs_type='rgb'; this env observes "
                f"{'grayscale' if screen.ndim == 2 else 'RAM'} (use grayscale_obs=True in "
                "AtariPreprocessing, or gym.make('openenv/Atari-v0', obs_type='rgb'))"
            )
        return _fill(out, screen)

    def getScreenGrayscale(self, out: np.ndarray | None = None) -> np.ndarray:  # noqa: N802
        """The last screen as ``(210, 160)`` ``uint8`` luminance, written into ``out`` if given.

        Raises:
            EnvConfigError: The env observes RAM, which holds no screen.
        """
        screen = self._require_screen()
        if screen.ndim == 3 and screen.shape != (SCREEN_HEIGHT, SCREEN_WIDTH, 3):
            raise _preprocessed(screen, "getScreenGrayscale")
        if screen.ndim == 3:
            gray = np.rint(screen.astype(np.float64) @ _GRAY_WEIGHTS).astype(np.uint8)
        elif screen.ndim == 2:
            gray = screen
        else:
            raise EnvConfigError(
                "getScreenGrayscale needs obs_type='rgb' or 'grayscale'; this env observes RAM"
            )
        return _fill(out, gray)

    def _require_screen(self) -> np.ndarray:
        if self._screen is None:
            raise EnvConfigError("no screen yet: call reset() first")
        return self._screen


def _preprocessed(screen: np.ndarray, method: str) -> EnvConfigError:
    """The error for a raw-screen request on frames the server preprocessed."""
    return EnvConfigError(
        f"{method} needs the raw 210x160 screen; this server sends {screen.shape} frames it "
        "preprocessed itself (stack_num, img_height, ...): drop the client-side "
        "AtariPreprocessing / AtariWrapper, or make the env without the preprocessing options"
    )


def _fill(out: np.ndarray | None, screen: np.ndarray) -> np.ndarray:
    if out is None:
        return screen.copy()
    out[...] = screen.reshape(out.shape)
    return out


def _game_key(name: str) -> str:
    """``"SpaceInvaders"``, ``"space_invaders"``, ``"space-invaders"`` -> one key."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def local_action_meanings(game: str, full_action_space: bool) -> list[str]:
    """The action meanings ``ale_py`` gives ``game`` (needs ``ale-py`` installed).

    Raises:
        MissingExtraError: ``ale-py`` is missing.
        EnvConfigError: The game is unknown.
    """
    purpose = "deriving the Atari action set from game= (an official server does not publish it)"
    with optional_imports(purpose):
        from ale_py.env import AtariEnv
    from openenv_gym.envs.atari.environment import rom_id

    env = AtariEnv(game=rom_id(game), full_action_space=full_action_space)
    try:
        return list(env.get_action_meanings())
    finally:
        env.close()


class AtariOpenEnvEnv(OpenEnvEnv):
    """A remote OpenEnv Atari game as a Gymnasium env.

    Args:
        base_url: The server; ``None`` with ``provider`` to start one.
        provider: Starts (and on :meth:`close` stops) the server.
        game: The game; used for the spaces only against an official server.
        obs_type: ``"rgb"``, ``"grayscale"`` or ``"ram"``; likewise.
        full_action_space: Likewise.
        check_game: Raise at ``reset`` when the server says it plays another game
            (``metadata.game_name``); always on against an official server, whose spaces
            come from ``game``. A server whose ``legal_actions`` do not fit the action space
            always raises.
        preprocessing: This env's own preprocessing, on a server whose schema says it
            takes it per session (``x-session-preprocessing``) and whose own settings
            differ: sent with every reset (reset key ``preprocessing``), and the observation
            space is its shape. Elsewhere nothing is sent (``make_atari_env`` then checks
            that the server's frames fit).
        **kwargs: :class:`~openenv_gym.env.OpenEnvEnv` options (``encoding``, timeouts,
            ``render_mode``, ...).

    Raises:
        EnvConfigError: An option is invalid.
        ServerConnectionError: The server cannot be reached.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        provider: ServerProvider | None = None,
        game: str = DEFAULT_GAME,
        obs_type: str = DEFAULT_OBS_TYPE,
        full_action_space: bool = False,
        check_game: bool = False,
        preprocessing: Preprocessing | None = None,
        **kwargs: Any,
    ) -> None:
        self._wanted = preprocessing
        #: The preprocessing this env's sessions ask the server for (``None``: the server's
        #: own frames).
        self.session_preprocessing: dict[str, Any] | None = None
        self._game = game
        self._obs_type = obs_type
        self._full_action_space = bool(full_action_space)
        self._meanings: list[str] | None = None
        self._check_game = check_game
        self._checked = False
        self.ale = RemoteALE()
        #: The server's preprocessing options, from its observation schema: ``{}`` for raw
        #: frames; ``None`` when it does not say (an official or an older server).
        self.server_preprocessing: dict[str, Any] | None = None
        super().__init__(base_url, provider=provider, **kwargs)
        try:
            state = self.state()
        except OpenEnvGymError:
            state = {}
        frameskip = state.get("frameskip")
        if self.session_preprocessing is not None:
            frameskip = self.session_preprocessing["frame_skip"]
        # The server's frame skip (the official Atari state carries it). Gymnasium's
        # AtariPreprocessing reads ``env.unwrapped._frameskip`` and refuses to skip frames
        # on top of an env that already does; this is that attribute.
        self._frameskip: int | None = frameskip if isinstance(frameskip, int) else None

    @property
    def frameskip(self) -> int | None:
        """Emulator frames per step on the server (``None`` if it does not say)."""
        return self._frameskip

    def _adapt_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        """Add the exact spaces when the server (an official one) does not publish them."""
        schema = copy.deepcopy(schema)
        observation = schema["observation"]
        published = observation.get(X_PREPROCESSING)
        if isinstance(published, dict):
            self.server_preprocessing = published
        screen = observation.get("properties", {}).get(SCREEN_FIELD)
        if isinstance(screen, dict):
            observation.setdefault(X_OBSERVATION_KEY, SCREEN_FIELD)
            if self._ask_session_preprocessing(observation):
                assert self._wanted is not None  # asked only for given options
                screen[X_SPACE] = space_to_json(screen_space(self._wanted.observation_shape))
            elif X_SPACE not in screen:
                space = screen_space(screen_shape(self._obs_type))
                screen[X_SPACE] = space_to_json(space)
        action_id = schema["action"].get("properties", {}).get(ACTION_FIELD)
        if isinstance(action_id, dict):
            meanings = action_id.get(X_ACTION_MEANINGS)
            if not isinstance(meanings, list):
                meanings = local_action_meanings(self._game, self._full_action_space)
                self._check_game = True  # the spaces come from game=: it must be the server's
            self._meanings = [normalize_meaning(str(m)) for m in meanings]
            if X_SPACE not in action_id:
                action_id[X_SPACE] = {"type": "Discrete", "n": len(self._meanings), "start": 0}
        return schema

    def _ask_session_preprocessing(self, observation: dict[str, Any]) -> bool:
        """Whether this env's sessions ask for their own preprocessing: options were given,
        the server takes them per session, and its own settings differ. If so, they go with
        every reset from now on (a vector env's and a reopened session's too)."""
        wanted = self._wanted
        accepted = observation.get(X_SESSION_PREPROCESSING)
        if wanted is None or not isinstance(accepted, list):
            return False
        options = dataclasses.asdict(wanted)
        if self.server_preprocessing == options or not set(options) <= set(accepted):
            return False
        self.session_preprocessing = options
        self._reset_kwargs[PREPROCESSING_RESET_KEY] = options
        properties = observation.setdefault("properties", {})
        properties.setdefault("raw_reward", {"type": "number", "title": "Raw Reward"})
        properties.setdefault("game_over", {"type": "boolean", "title": "Game Over"})
        return True

    def get_action_meanings(self) -> list[str]:
        """The meaning of each action index: ``["NOOP", "FIRE", ...]``."""
        return list(self._meanings or [])

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """See :meth:`OpenEnvEnv.reset`; also records lives and the action meanings."""
        observation, info = super().reset(seed=seed, options=options)
        self._record(info, observation)
        if not self._checked:
            self._check_server(info)
            self._checked = True
        return observation, info

    def _check_server(self, info: Mapping[str, Any]) -> None:
        """Raise when the server plays another game or has another action set."""
        said: list[str] = []
        game_name = info.get("game_name")
        if (
            self._check_game
            and isinstance(game_name, str)
            and _game_key(game_name) != _game_key(self._game)
        ):
            said.append(f"metadata.game_name={game_name!r}")
        legal = info.get("legal_actions")
        n = int(getattr(self.action_space, "n", 0))
        if (
            isinstance(legal, list)
            and legal
            and all(isinstance(a, int) for a in legal)
            and (len(legal) != n or max(legal) >= n or min(legal) < 0)
        ):
            said.append(f"legal_actions={legal} ({len(legal)} actions)")
        if said:
            raise ServerMismatchError(
                f"the Atari server at {self.base_url} does not play what this env was made for "
                f"(game={self._game!r}, full_action_space={self._full_action_space}: "
                f"Discrete({n}) actions {self.get_action_meanings()}); the server said "
                f"{'; '.join(said)}. Make the env with the server's settings, e.g. "
                f"gym.make('openenv/Atari-v0', base_url={self.base_url!r}, "
                f"game={game_name if isinstance(game_name, str) else self._game!r}"
                + (
                    ", full_action_space=True)"
                    if isinstance(legal, list) and len(legal) == 18
                    else ")"
                )
            )

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """See :meth:`OpenEnvEnv.step`; also records lives for :attr:`ale`."""
        result = super().step(action)
        self._record(result[4], result[0])
        return result

    def _record(self, info: dict[str, Any], screen: Any) -> None:
        lives = info.get("lives")
        self.ale.update(lives if isinstance(lives, int) else self.ale.lives(), screen)
        meanings = info.get("action_meanings")
        if self._meanings is None and isinstance(meanings, list):
            self._meanings = [normalize_meaning(str(m)) for m in meanings]


def _check_preprocessing(env: AtariOpenEnvEnv, options: Mapping[str, Any]) -> None:
    """With ``base_url`` and a server that takes no preprocessing per session (an official
    or an older one), its preprocessing is fixed when it starts: the options given must
    describe the frames it sends (their shape, and every option where the server's schema
    says what it does).

    Raises:
        ServerMismatchError: The server sends frames of another shape, or preprocesses
            with other options.
    """
    settings = Preprocessing.from_options(options, options["frameskip"])
    if settings is None or env.session_preprocessing is not None:
        return
    given = {k: v for k, v in options.items() if k in PREPROCESSING_NAMES and v is not None}
    fix = (
        "this server takes no preprocessing per session (its schema has no "
        f"{X_SESSION_PREPROCESSING!r}: an official or an older server), so its preprocessing "
        "is fixed when it starts. Start it with `openenv-gym serve "
        f"atari {' '.join(ATARI_OPTIONS.to_argv(given))}`, or drop base_url to start one with "
        "these options"
    )
    sent = env.observation_space.shape
    if sent != settings.observation_shape:
        raise ServerMismatchError(
            f"the Atari server at {env.base_url} sends {sent} frames, not the "
            f"{settings.observation_shape} that {given} give: {fix}"
        )
    served = env.server_preprocessing
    if served is None:  # the server does not say: the shape is all there is to check
        return
    differ = {k: v for k, v in dataclasses.asdict(settings).items() if served.get(k) != v}
    if differ:
        theirs = ", ".join(f"{k}={served.get(k)!r}" for k in differ)
        ours = ", ".join(f"{k}={v!r}" for k, v in differ.items())
        raise ServerMismatchError(
            f"the Atari server at {env.base_url} preprocesses with {theirs}, not the {ours} "
            f"that {given} give: {fix}"
        )


@takes_server_keywords
def make_atari_env(
    game: str | None = None,
    /,
    *,
    base_url: str | None = None,
    encoding: str = DEFAULT_ENCODING,
    **kwargs: Any,
) -> AtariOpenEnvEnv:
    """The ``openenv/Atari-v0`` entry point: a server at ``base_url``, or an embedded one.

    The Atari options (:data:`~openenv_gym.envs.atari.options.ATARI_OPTIONS`: ``game``,
    ``obs_type``, ``frameskip``, ``repeat_action_probability``, ``full_action_space``,
    ``mode``, ``difficulty``, ``max_num_frames_per_episode``; defaults as
    ``ALE/<Game>-v5``; and envpool's preprocessing options ``stack_num``, ``frame_skip``,
    ``episodic_life``, ``reward_clip``, ``noop_max``, ``use_fire_reset``, ``gray_scale``,
    ``img_height``, ``img_width``, ``use_inter_area_resize``, any of which makes the server
    send preprocessed frames, see :mod:`openenv_gym.envs.atari.preprocessing`) are passed as
    one mapping to ``openenv-gym serve atari``, started in a child process and stopped on
    ``close()``. With ``base_url`` the server's settings are
    fixed when it starts; ``game``, ``obs_type`` and ``full_action_space`` then only tell
    the client the spaces of an official server. The preprocessing options are the
    exception on our server (its schema lists them under ``x-session-preprocessing``): a
    session takes its own with its first reset, so one raw ``openenv-gym serve atari``
    serves raw and preprocessed envs at once. An official or an older server must have
    been started with them (else :class:`~openenv_gym.errors.ServerMismatchError`).

    Args:
        game: The game, positionally (or ``game=``).
        **kwargs: The embedded server's keywords (:class:`~openenv_gym.providers.ServerSpec`:
            ``image`` runs it in ``openenv-gym/atari:latest``, which ``openenv-gym build``
            makes, instead of a child process; ``token``, the bearer token the server
            requires; ``startup_timeout``, ``docker_kwargs``, ``workers``, ``unix_socket``),
            the Atari options, then :class:`AtariOpenEnvEnv` /
            :class:`~openenv_gym.env.OpenEnvEnv` options.

    Raises:
        EnvConfigError: An option is invalid.
        ServerMismatchError: With ``base_url``, preprocessing options that a server without
            per-session preprocessing does not apply.
    """
    server = ServerSpec.take(kwargs)
    token = server.token
    if game is not None:
        kwargs["game"] = game
    check_game = "game" in kwargs
    options, env_kwargs = ATARI_OPTIONS.split(kwargs)
    check_atari_options(
        options["obs_type"], options["frameskip"], options["repeat_action_probability"]
    )
    settings = {name: options[name] for name in ("game", "obs_type", "full_action_space")}
    if base_url is not None:
        env = AtariOpenEnvEnv(
            base_url,
            token=token,
            encoding=encoding,
            check_game=check_game,
            preprocessing=Preprocessing.from_options(options, options["frameskip"]),
            **settings,
            **env_kwargs,
        )
        try:
            _check_preprocessing(env, options)
        except ServerMismatchError:
            env.close()
            raise
        return env
    from openenv_gym.envs.atari.environment import rom_id

    # The embedded server runs here: fail early, with this process's error.
    options["game"] = settings["game"] = rom_id(options["game"])
    provider = server_provider(["atari", *ATARI_OPTIONS.to_argv(options)], server)
    return AtariOpenEnvEnv(
        provider=provider, token=token, encoding=encoding, **settings, **env_kwargs
    )


__all__ = ["AtariOpenEnvEnv", "RemoteALE", "local_action_meanings", "make_atari_env"]
