"""``OpenEnvEnv``: one remote OpenEnv session as a ``gymnasium.Env``.

The env talks to ``{base_url}/ws`` over one WebSocket (one server-side env instance).
Its spaces come from the Pydantic models when given, else from the server's
``GET /schema`` (see :mod:`openenv_gym.spaces`). Actions are checked against the action
space before anything is sent; observations are decoded to exactly the observation space.

Wire -> Gymnasium mapping:

* ``done`` -> ``terminated``; ``truncated`` comes from the field the schema names with
  ``x-truncated-key`` (our gymnasium servers send one), else it is ``False`` and a
  ``TimeLimit`` wrapper may add it.
* ``reward`` -> ``float`` (``0.0`` when the server sends ``null``, e.g. after reset).
* ``info`` -> the observation's ``metadata``, the reply's top-level ``metadata`` and
  the observation fields left out of the space.

Example:
    >>> import gymnasium as gym
    >>> import openenv_gym  # registers the ids  # doctest: +SKIP
    >>> env = gym.make("openenv/CartPole-v1")  # starts an embedded server  # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)  # doctest: +SKIP
    >>> env.close()  # doctest: +SKIP
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from pydantic import BaseModel

from openenv_gym.client import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_ENCODING,
    DEFAULT_MAX_MESSAGE_SIZE,
    DEFAULT_REPLY_TIMEOUT,
    SyncSession,
    check_encoding,
    fetch_schema,
    get_json,
    resolve_token,
)
from openenv_gym.errors import (
    OpenEnvGymError,
    RenderModeUnavailableError,
    SessionClosedError,
)
from openenv_gym.providers.base import GivenServer, ServerProvider
from openenv_gym.spaces import (
    ActionCodec,
    ObservationCodec,
    action_codec,
    action_codec_for_model,
    observation_codec,
    observation_codec_for_model,
)
from openenv_gym.wire.messages import (
    METADATA_PATH,
    ObservationReply,
    StateReply,
    reset_message,
    state_message,
    step_message,
)

_ENVELOPE_INFO_KEY: Final = "metadata"


def _close_session_soon(session: SyncSession) -> None:
    """Finalizer: close a forgotten env's session (and its loop)."""
    session.close()


class OpenEnvEnv(gym.Env[Any, Any]):
    """A remote OpenEnv environment as a Gymnasium env.

    Args:
        base_url: The server, e.g. ``"http://127.0.0.1:8000"``. Leave it ``None`` and pass
            ``provider`` to have a server started (and stopped on :meth:`close`).
        provider: Starts the server (e.g. :class:`~openenv_gym.providers.LocalServerProcess`).
            The env owns it: :meth:`close` stops it.
        action_model: The server's Pydantic action class; when given with
            ``observation_model``, ``GET /schema`` is not needed.
        observation_model: The server's Pydantic observation class.
        action_field_spaces: Explicit spaces for action fields the schema cannot describe
            (e.g. ``{"action_id": Discrete(6)}``).
        observation_field_spaces: Explicit spaces for observation fields.
        observation_field_shapes: Shapes for variable-length list fields
            (e.g. ``{"screen": (210, 160, 3)}``).
        observation_exclude: Observation fields to leave out of the space (they go to info).
        action_include: Optional action fields (with defaults) to put into the action space.
        reset_kwargs: Extra keys sent with every reset (``options`` are merged over them).
        connect_timeout: Seconds to open the connection.
        reply_timeout: Seconds to wait for each reply.
        max_message_size: Largest reply frame accepted, in bytes.
        headers: Extra HTTP headers for the WebSocket handshake.
        token: A bearer token for servers that require one (``--token``); default: the
            ``OPENENV_TOKEN`` environment variable. A wrong or missing one raises
            :class:`~openenv_gym.errors.AuthenticationError`.
        render_mode: ``None`` or ``"rgb_array"`` (served when the observation holds an
            RGB image, a ``uint8`` Box of shape ``(H, W, 3)``).
        encoding: ``"auto"`` (raw-byte observation arrays when the server supports the
            ``openenv-gym.binary.v1`` subprotocol, JSON otherwise), ``"json"``, or
            ``"binary"`` (required; :class:`~openenv_gym.errors.BinaryEncodingRefusedError`
            if the server refuses it).
        open_session: ``False`` builds the spaces (and starts the server) without opening a
            session; :class:`~openenv_gym.vector.OpenEnvVectorEnv` takes them with
            :meth:`detach`.

    Raises:
        ServerConnectionError: The server cannot be reached.
        NotAnOpenEnvServerError: The URL does not serve the OpenEnv protocol.
        SpaceMappingError: A schema field has no Gymnasium space; pass one explicitly.
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(
        self,
        base_url: str | None = None,
        *,
        provider: ServerProvider | None = None,
        action_model: type[BaseModel] | None = None,
        observation_model: type[BaseModel] | None = None,
        action_field_spaces: Mapping[str, spaces.Space[Any]] | None = None,
        observation_field_spaces: Mapping[str, spaces.Space[Any]] | None = None,
        observation_field_shapes: Mapping[str, Sequence[int]] | None = None,
        observation_exclude: Collection[str] = (),
        action_include: Collection[str] = (),
        reset_kwargs: Mapping[str, Any] | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        reply_timeout: float = DEFAULT_REPLY_TIMEOUT,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        headers: Mapping[str, str] | None = None,
        render_mode: str | None = None,
        encoding: str = DEFAULT_ENCODING,
        token: str | None = None,
        open_session: bool = True,
    ) -> None:
        if base_url is None and provider is None:
            raise OpenEnvGymError(
                "no server given: pass base_url='http://HOST:PORT' of a running OpenEnv server "
                "(e.g. gym.make('openenv/Remote-v0', base_url=...)), or use an id that starts "
                "an embedded server such as 'openenv/CartPole-v1'"
            )
        self._session: SyncSession | None = None
        self._provider: ServerProvider = provider or GivenServer(str(base_url))
        self._closed = False
        self._last_observation: Any = None
        self.encoding = check_encoding(encoding)
        self._token = resolve_token(token)
        try:
            self.base_url = self._provider.start()
            self._action_codec, self._observation_codec = self._build_codecs(
                action_model=action_model,
                observation_model=observation_model,
                action_field_spaces=action_field_spaces,
                observation_field_spaces=observation_field_spaces,
                observation_field_shapes=observation_field_shapes,
                observation_exclude=observation_exclude,
                action_include=action_include,
                timeout=connect_timeout,
            )
            self.action_space = self._action_codec.space
            self.observation_space = self._observation_codec.space
            self._image_path = _find_rgb_image(self.observation_space)
            if render_mode is not None and (render_mode != "rgb_array" or self._image_path is None):
                raise RenderModeUnavailableError(
                    f"render_mode={render_mode!r} is not available here: expected None, or "
                    "'rgb_array' for an env whose observation holds a uint8 (H, W, 3) image; "
                    f"this env's observation space is {self.observation_space}"
                )
            self.render_mode = render_mode
            self._reset_kwargs = dict(reset_kwargs or {})
            self._connect_options: dict[str, Any] = {
                "connect_timeout": connect_timeout,
                "reply_timeout": reply_timeout,
                "max_message_size": max_message_size,
                "headers": dict(headers or {}),
                "token": self._token,
            }
            if open_session:
                self._session = SyncSession.connect(
                    self.base_url,
                    connect_timeout=connect_timeout,
                    reply_timeout=reply_timeout,
                    max_message_size=max_message_size,
                    headers=headers,
                    encoding=encoding,
                    token=self._token,
                )
                weakref.finalize(self, _close_session_soon, self._session)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ set-up

    def _build_codecs(
        self,
        *,
        action_model: type[BaseModel] | None,
        observation_model: type[BaseModel] | None,
        action_field_spaces: Mapping[str, spaces.Space[Any]] | None,
        observation_field_spaces: Mapping[str, spaces.Space[Any]] | None,
        observation_field_shapes: Mapping[str, Sequence[int]] | None,
        observation_exclude: Collection[str],
        action_include: Collection[str],
        timeout: float,
    ) -> tuple[ActionCodec, ObservationCodec]:
        needs_schema = action_model is None or observation_model is None
        schema = (
            self._adapt_schema(fetch_schema(self.base_url, timeout=timeout, token=self._token))
            if needs_schema
            else {}
        )
        if action_model is not None:
            act = action_codec_for_model(
                action_model, field_spaces=action_field_spaces, include=action_include
            )
        else:
            act = action_codec(
                schema["action"], field_spaces=action_field_spaces, include=action_include
            )
        obs_kwargs: dict[str, Any] = {
            "field_spaces": observation_field_spaces,
            "field_shapes": observation_field_shapes,
            "exclude": observation_exclude,
        }
        if observation_model is not None:
            obs = observation_codec_for_model(observation_model, **obs_kwargs)
        else:
            obs = observation_codec(schema["observation"], **obs_kwargs)
        return act, obs

    def _adapt_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        """Hook for subclasses that know a server family: complete ``GET /schema`` (e.g.
        add ``x-space`` hints an official server does not publish). Identity by default."""
        return schema

    @property
    def binary(self) -> bool:
        """Whether this session receives observation arrays as raw bytes."""
        return self._session is not None and self._session.session.binary

    # ------------------------------------------------------------------ gymnasium API

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode. ``seed`` is sent on the wire; ``options`` become reset keys.

        Official servers drop reset keys their environment does not accept.
        """
        super().reset(seed=seed)
        session = self._require_session()
        data = {**self._reset_kwargs, **(options or {})}
        reply = session.request_observation(reset_message(seed=seed, **data))
        observation = self._observation_codec.decode(reply.observation)
        self._last_observation = observation
        return observation, self._info(reply)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Send one action; return ``(obs, reward, terminated, truncated, info)``.

        Raises:
            ActionOutOfSpaceError: ``action`` is not in ``action_space`` (nothing is sent).
        """
        wire_action = self._action_codec.encode(action)
        session = self._require_session()
        reply = session.request_observation(step_message(wire_action))
        observation = self._observation_codec.decode(reply.observation)
        self._last_observation = observation
        key = self._observation_codec.truncated_key
        truncated = bool(reply.observation.get(key, False)) if key else False
        terminated = bool(reply.done) and not truncated
        reward = 0.0 if reply.reward is None else float(reply.reward)
        return observation, reward, terminated, truncated, self._info(reply)

    def render(self) -> np.ndarray | None:  # type: ignore[override]
        """The last observation's RGB image for ``render_mode="rgb_array"``, else ``None``."""
        if self.render_mode != "rgb_array" or self._last_observation is None:
            return None
        value = self._last_observation
        for key in self._image_path or ():
            value = value[key]
        return np.asarray(value)

    def close(self) -> None:
        """End the session and stop the server if this env started it. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._session is not None:
                self._session.close()
        finally:
            self._provider.stop()

    # ------------------------------------------------------------------ extras

    def state(self) -> dict[str, Any]:
        """The server-side state of this session (the OpenEnv ``state`` message)."""
        reply = self._require_session().request(state_message())
        if isinstance(reply, StateReply):
            return reply.state
        return dict(reply.observation)

    @property
    def server_metadata(self) -> dict[str, Any]:
        """The server's ``GET /metadata`` (name, description, version, ...)."""
        body = get_json(self.base_url, METADATA_PATH, token=self._token)
        return body if isinstance(body, dict) else {}

    @property
    def provider(self) -> ServerProvider:
        """Where the server comes from (and who stops it)."""
        return self._provider

    @property
    def action_codec(self) -> ActionCodec:
        """The action space and its wire encoding."""
        return self._action_codec

    @property
    def observation_codec(self) -> ObservationCodec:
        """The observation space and its wire decoding."""
        return self._observation_codec

    @property
    def reset_kwargs(self) -> dict[str, Any]:
        """The extra keys sent with every reset."""
        return dict(self._reset_kwargs)

    @property
    def connect_options(self) -> dict[str, Any]:
        """The options the session was opened with (timeouts, message size, headers, token)."""
        return dict(self._connect_options)

    def detach(self) -> ServerProvider:
        """Hand the server provider over to the caller and close this env, but not the server.

        :class:`~openenv_gym.vector.OpenEnvVectorEnv` builds its spaces and servers on an env
        made with ``open_session=False`` this way; it then owns (and stops) the server.
        """
        self._closed = True
        if self._session is not None:
            self._session.close()
            self._session = None
        return self._provider

    def _require_session(self) -> SyncSession:
        if self._closed or self._session is None:
            raise SessionClosedError(
                "this env is closed; create a new one with gym.make(...) to go on"
            )
        if self._session.closed:
            raise SessionClosedError(
                f"the session to {self._session.url} was closed after an earlier error; "
                "create a new env to go on"
            )
        return self._session

    def _info(self, reply: ObservationReply) -> dict[str, Any]:
        return reply_info(self._observation_codec, reply)

    def __repr__(self) -> str:
        where = getattr(self, "base_url", None) or "not connected"
        return f"<OpenEnvEnv {where}>"


def reply_info(codec: ObservationCodec, reply: ObservationReply) -> dict[str, Any]:
    """The Gymnasium ``info`` of a reply: the fields outside the space, ``metadata`` merged."""
    extras = codec.extras(reply.observation)
    truncated_key = codec.truncated_key
    info = {k: v for k, v in extras.items() if k not in (_ENVELOPE_INFO_KEY, truncated_key)}
    nested = extras.get(_ENVELOPE_INFO_KEY)
    if isinstance(nested, dict):
        info.update(nested)
    info.update(reply.metadata)
    return info


def _find_rgb_image(space: spaces.Space[Any]) -> tuple[str, ...] | None:
    """The key path of a ``uint8`` ``(H, W, 3)`` Box in ``space`` (``()`` for the root)."""
    if isinstance(space, spaces.Box):
        if space.dtype == np.uint8 and len(space.shape) == 3 and space.shape[-1] == 3:
            return ()
        return None
    if isinstance(space, spaces.Dict):
        for key, sub in space.spaces.items():
            path = _find_rgb_image(sub)
            if path is not None:
                return (key, *path)
    return None
