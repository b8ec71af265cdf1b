"""``OpenEnvEnv``: one remote OpenEnv session as a ``gymnasium.Env``.

The env talks to ``{base_url}/ws`` over one WebSocket (one server-side env instance), or over
HTTP where the server has no ``/ws``; ``env.form`` says which (:mod:`openenv_gym.client.session`).
Its spaces come from the models when given, else from the server's ``GET /schema``, else its
``GET /openapi.json`` (:mod:`openenv_gym.spaces.sources`; :attr:`space_sources` names them).
Actions are checked against the action space before anything is sent; observations are
decoded to exactly the observation space.

Wire -> Gymnasium mapping:

* ``done`` -> ``terminated``; ``truncated`` comes from the field the schema names with
  ``x-truncated-key`` (our gymnasium servers send one), else it is ``False`` and a
  ``TimeLimit`` wrapper may add it. With ``x-terminated-key`` (our gymnasium servers) both
  flags are exact, and both may be true (an episode ending on its last allowed step).
* ``reward`` -> ``float`` (``0.0`` when the server sends ``null``, e.g. after reset).
* ``info`` -> the observation's ``metadata``, the reply's top-level ``metadata`` and
  the observation fields left out of the space (e.g. variable-length ``legal_moves``).

Open shapes (``list[float]`` of unstated length, ``dict[str, list[float]]``, an unbounded
``int`` action beside ``legal_actions``) come from one reset while the env is built (and an
``action_spec`` from the state; :mod:`openenv_gym.spaces.inference`): see
:attr:`OpenEnvEnv.inferred_spaces` and :meth:`OpenEnvEnv.pinning_kwargs`. Fields no space
fits are reported in ONE :class:`~openenv_gym.errors.SpaceMappingError`, with the call to paste.
A same-host server is reached through its Unix socket (:attr:`OpenEnvEnv.unix_path`).

Example:
    >>> import gymnasium as gym
    >>> import openenv_gym  # registers the ids
    >>> env = gym.make("openenv/CartPole-v1")  # starts an embedded server
    >>> obs, info = env.reset(seed=0)
    >>> env.close()
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from openenv_gym.busy_poll import DEFAULT_CLIENT_BUSY_POLL, check_busy_poll
from openenv_gym.client import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_REPLY_TIMEOUT,
    ConnectOptions,
    Session,
    get_json,
    open_session,
    resolve_token,
    with_server_shape,
)
from openenv_gym.env_mapping import (
    SpaceMapper,
    episode_flags,
    find_rgb_image,
    probe_session,
    reply_info,
)
from openenv_gym.errors import (
    ActionMaskUnavailableError,
    EnvNotPicklableError,
    OpenEnvGymError,
    RenderModeUnavailableError,
    SessionClosedError,
)
from openenv_gym.providers.base import GivenServer, ServerProvider
from openenv_gym.spaces import (
    ActionCodec,
    ObservationCodec,
)
from openenv_gym.spaces.frames import RENDER_RESET_KEY, X_RENDER_MODES, decode_frame
from openenv_gym.spaces.inference import (
    Inference,
    sample_at,
)
from openenv_gym.spaces.problems import ENV_KEYWORDS
from openenv_gym.spaces.tool_list import ToolSpec
from openenv_gym.wire.compressed import DEFAULT_COMPRESSION, check_compression
from openenv_gym.wire.encoding import DEFAULT_ENCODING, check_encoding
from openenv_gym.wire.messages import (
    CLIENT_INBOUND_LIMIT,
    METADATA_PATH,
    ObservationReply,
    StateReply,
    reset_message,
    state_message,
    step_message,
)

#: The state field our servers put a rendered frame in (see :mod:`openenv_gym.spaces.frames`).
FRAME_STATE_KEY: Final = "frame"


def _close_session_soon(session: Session) -> None:
    """Finalizer: close a forgotten env's session (and its loop)."""
    session.close()


class OpenEnvEnv(gym.Env[Any, Any]):
    """A remote OpenEnv environment as a Gymnasium env.

    Args:
        base_url: The server, e.g. ``"http://127.0.0.1:8000"``. Leave it ``None`` and pass
            ``provider`` to have a server started (and stopped on :meth:`close`).
        provider: Starts the server (e.g. :class:`~openenv_gym.providers.LocalServerProcess`),
            which :meth:`close` stops; a same-host one is reached through its Unix socket.
        action_model: The server's action class (Pydantic or a dataclass: the env's own
            ``models.py``); used whatever the server serves. Without it the action comes
            from ``GET /schema``, else ``GET /openapi.json`` (:attr:`space_sources`).
        observation_model: The server's observation class (Pydantic or a dataclass); without
            it, ``GET /schema``, ``GET /openapi.json``, else the first observation.
        action_field_spaces: Explicit spaces for action fields the schema cannot describe
            (e.g. ``{"action_id": Discrete(6)}``).
        observation_field_spaces: Explicit spaces for observation fields.
        observation_field_shapes: Shapes for variable-length list fields
            (e.g. ``{"screen": (210, 160, 3)}``); for a ``dict[str, list]`` field, one entry
            per key (``{"observations.position": (4,)}``). Pins shapes otherwise taken from
            the reset observation.
        action_field_shapes: Shapes for action arrays of unstated length
            (e.g. ``{"values": (6,)}``); otherwise taken from the state's ``action_spec``.
        observation_exclude: Observation fields to leave out of the space (they go to info).
        action_include: Optional action fields (with defaults) to put into the action space.
        reset_kwargs: Extra keys sent with every reset (``options`` are merged over them).
        connect_timeout: Seconds to open the connection.
        reply_timeout: Seconds to wait for each reply.
        busy_poll: Seconds to wait for a reply awake (spinning, yielding the core) before
            sleeping: it saves a VM's wake-up cost of a fast reply, and pauses by itself
            where it does not pay (:mod:`openenv_gym.busy_poll`). ``0`` sleeps at once.
        max_message_size: Largest reply frame accepted, in bytes.
        headers: Extra HTTP headers for the WebSocket handshake.
        token: A bearer token for servers that require one (``--token``; default:
            ``$OPENENV_TOKEN``); a wrong or missing one: ``AuthenticationError``.
        render_mode: ``None`` or ``"rgb_array"``: the observation's ``uint8`` ``(H, W, 3)``
            image, else a frame the server renders (``metadata["render_modes"]``).
        encoding: ``"auto"`` (raw-byte observation arrays where the server agrees to
            ``openenv-gym.binary.v1``, else JSON), ``"json"``, or ``"binary"`` (required:
            :class:`~openenv_gym.errors.BinaryEncodingRefusedError` if refused).
        compression: ``"auto"`` (packed or raw observation frames, whichever measures
            cheaper step by step, whatever the server's address), ``"zstd"`` (packed where
            they shrink) or ``"off"`` (:mod:`openenv_gym.wire.compressed`; our servers only).
        open_session: ``False`` builds the spaces (and starts the server) without keeping a
            session open; :class:`~openenv_gym.vector.OpenEnvVectorEnv` takes them with
            :meth:`detach`.

    Raises:
        ServerConnectionError: The server cannot be reached.
        NotAnOpenEnvServerError: The URL does not serve the OpenEnv protocol.
        SpaceMappingError: Schema fields have no Gymnasium space; the message lists every
            one (action and observation) and the keyword arguments to pass.
        RenderModeUnavailableError: ``render_mode`` is not in this env's render modes.
    """

    # The modes an instance may have: gym.make reads them before any server is known (and
    # warns about a render_mode outside them). Each instance narrows them to what its server
    # offers, and refuses the others (RenderModeUnavailableError).
    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(
        self,
        base_url: str | None = None,
        *,
        provider: ServerProvider | None = None,
        action_model: type[Any] | None = None,
        observation_model: type[Any] | None = None,
        action_field_spaces: Mapping[str, spaces.Space[Any]] | None = None,
        observation_field_spaces: Mapping[str, spaces.Space[Any]] | None = None,
        observation_field_shapes: Mapping[str, Sequence[int]] | None = None,
        observation_exclude: Collection[str] = (),
        action_include: Collection[str] = (),
        action_field_shapes: Mapping[str, Sequence[int]] | None = None,
        reset_kwargs: Mapping[str, Any] | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        reply_timeout: float = DEFAULT_REPLY_TIMEOUT,
        busy_poll: float = DEFAULT_CLIENT_BUSY_POLL,
        max_message_size: int = CLIENT_INBOUND_LIMIT,
        headers: Mapping[str, str] | None = None,
        render_mode: str | None = None,
        encoding: str = DEFAULT_ENCODING,
        token: str | None = None,
        compression: str = DEFAULT_COMPRESSION,
        open_session: bool = True,
    ) -> None:
        if base_url is None and provider is None:
            raise OpenEnvGymError(
                "no server given: pass base_url='http://HOST:PORT' of a running OpenEnv server "
                "(e.g. gym.make('openenv/Remote-v0', base_url=...)), or use an id that starts "
                "an embedded server such as 'openenv/CartPole-v1'"
            )
        self._session: Session | None = None
        #: The protocol form agreed (:mod:`openenv_gym.client.session`), once a session opened.
        self.form: str | None = None
        self._provider: ServerProvider = provider or GivenServer(str(base_url))
        self._closed = False
        self._last_observation: Any = None
        #: The tools of an MCP tool env, in the server's order (empty for other envs).
        self.tools: tuple[ToolSpec, ...] = ()
        self._legal: Any = None
        self.metadata = dict(type(self).metadata)  # render modes are per instance
        self.encoding = check_encoding(encoding)
        check_compression(compression)
        self._token = resolve_token(token)
        self._mapping_options: dict[str, Any] = {
            "action_field_spaces": dict(action_field_spaces or {}),
            "action_field_shapes": dict(action_field_shapes or {}),
            "action_include": list(action_include),
            "observation_field_spaces": dict(observation_field_spaces or {}),
            "observation_field_shapes": dict(observation_field_shapes or {}),
            "observation_exclude": list(observation_exclude),
        }
        try:
            self.base_url = self._provider.start()
            if self._token is None:  # a server whose provider chose its token (a Ray fleet's)
                self._token = self._provider.token
            self._reset_kwargs = dict(reset_kwargs or {})
            self._connect_options = ConnectOptions(
                encoding=self.encoding,
                connect_timeout=connect_timeout,
                reply_timeout=reply_timeout,
                busy_poll=check_busy_poll(busy_poll),
                max_message_size=max_message_size,
                headers=dict(headers or {}),
                token=self._token,
                compression=compression,
            )
            found = self._mapper().find_schemas(action_model, observation_model, self._adapt_schema)
            #: Where the action and observation schemas came from (``.describe()``).
            self.space_sources = found.sources
            self._connect_options = with_server_shape(
                self._session,
                self._connect_options,
                step_body=found.sources.step_body,
                form=found.form,
                session_fields=found.sources.session_fields,
            )
            schema = found.schema
            self._action_codec, self._observation_codec = self._build_codecs(schema)
            self.action_space = self._action_codec.space
            self.observation_space = self._observation_codec.space
            self._image_path = find_rgb_image(self.observation_space)
            remote_modes = schema["observation"].get(X_RENDER_MODES) or []
            self._remote_render = self._image_path is None and "rgb_array" in remote_modes
            render_modes = (
                ["rgb_array"] if self._image_path is not None or self._remote_render else []
            )
            self.metadata["render_modes"] = render_modes
            if render_mode is not None and render_mode not in render_modes:
                raise RenderModeUnavailableError(
                    f"render_mode={render_mode!r} is not available here: this env's render "
                    f"modes are {render_modes} (metadata['render_modes']): 'rgb_array' needs an "
                    "observation holding a uint8 (H, W, 3) image or a server that renders "
                    f"frames; this env's observation space is {self.observation_space}. A "
                    "gymnasium server draws classic-control envs with pygame: pip install "
                    "'openenv-gym[render]' where it runs (the embedded server: here)"
                )
            self.render_mode = render_mode
            if open_session:
                self._open_session()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ set-up

    def _open_session(self) -> Session:
        if self._session is None:
            self._session = open_session(
                self.base_url, self._connect_options, unix_sockets=self._provider.unix_sockets
            )
            self.form = self._session.form
            weakref.finalize(self, _close_session_soon, self._session)
        return self._session

    def _mapper(self) -> SpaceMapper:
        reset_kwargs = self._reset_kwargs
        return SpaceMapper(
            self.base_url,
            token=self._token,
            timeout=self._connect_options.connect_timeout,
            options=self._mapping_options,
            probe=lambda schema: probe_session(self._open_session(), schema, reset_kwargs),
            probe_key=repr(sorted(reset_kwargs.items())),
        )

    def _build_codecs(self, schema: Mapping[str, Any]) -> tuple[ActionCodec, ObservationCodec]:
        """Map both schemas (:mod:`openenv_gym.env_mapping`); sets :attr:`tools` for an
        MCP tool env. A hook for clients that know their server's codecs."""
        act, obs, self.tools = self._mapper().codecs(schema)
        return act, obs

    def _adapt_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        """Hook for subclasses that know a server family: complete ``GET /schema`` (e.g.
        add ``x-space`` hints an official server does not publish). Identity by default."""
        return schema

    @property
    def binary(self) -> bool:
        """Whether this session receives observation arrays as raw bytes."""
        return self._session is not None and self._session.binary

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
        if self._remote_render and self.render_mode == "rgb_array":
            data[RENDER_RESET_KEY] = True
        reply = session.request_observation(reset_message(seed=seed, **data))
        observation = self._observation_codec.decode(reply.observation)
        self._last_observation = observation
        self._record_legal(reply)
        return observation, self._info(reply)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Send one action; return ``(obs, reward, terminated, truncated, info)``.

        Raises:
            ActionOutOfSpaceError: ``action`` is not in ``action_space`` (nothing is sent).
        """
        wire_action = self._encode_action(action)
        session = self._require_session()
        reply = session.request_observation(step_message(wire_action))
        observation = self._observation_codec.decode(reply.observation)
        self._last_observation = observation
        self._record_legal(reply)
        terminated, truncated = episode_flags(
            self._observation_codec, reply.observation, bool(reply.done), reply.stated_flags
        )
        reward = 0.0 if reply.reward is None else float(reply.reward)
        return observation, reward, terminated, truncated, self._info(reply)

    def _encode_action(self, action: Any) -> dict[str, Any]:
        """The wire action of ``action`` (a hook for envs that know their game's state)."""
        return self._action_codec.encode(action)

    def render(self) -> np.ndarray | None:  # type: ignore[override]
        """For ``render_mode="rgb_array"``: the last observation's RGB image, or the frame
        the server renders (asked with a ``state`` message); else ``None``."""
        if self.render_mode != "rgb_array" or self._last_observation is None:
            return None
        if self._remote_render:
            frame = self.state().get(FRAME_STATE_KEY)
            return None if frame is None else decode_frame(frame)
        value = self._last_observation
        for key in self._image_path or ():
            value = value[key]
        return np.asarray(value)

    def action_masks(self) -> np.ndarray:
        """The legal actions of the last observation as a ``bool`` mask over the action space
        (what sb3-contrib's ``MaskablePPO`` asks for).

        Raises:
            ActionMaskUnavailableError: The observation lists no legal actions, or the action
                space is not ``Discrete``.
        """
        legal_key = self._observation_codec.legal_key
        if legal_key is None or not self._action_codec.maskable:
            raise ActionMaskUnavailableError(
                "this env has no action mask: it needs a Discrete action space (or an enum) and "
                "an observation field listing the legal actions (legal_actions, legal_moves, "
                f"valid_actions, ...); action space {self.action_space}, legal field {legal_key!r}"
            )
        if self._legal is None:
            raise ActionMaskUnavailableError("call reset() before action_masks()")
        return self._action_codec.mask(self._legal, legal_key)

    def _record_legal(self, reply: ObservationReply) -> None:
        legal_key = self._observation_codec.legal_key
        if legal_key is not None:
            self._legal = sample_at(reply.observation, legal_key)

    @property
    def inferred_spaces(self) -> tuple[Inference, ...]:
        """The spaces taken from the data (reset observation, state) rather than the schema."""
        return (*self._action_codec.inferred, *self._observation_codec.inferred)

    def pinning_kwargs(self) -> str:
        """The keyword arguments that pin :attr:`inferred_spaces`, as Python source."""
        grouped: dict[str, list[str]] = {}
        for inference in self.inferred_spaces:
            keyword = ENV_KEYWORDS[(inference.role, inference.option)]  # type: ignore[index]
            grouped.setdefault(keyword, []).append(f"{inference.path!r}: {inference.value}")
        return ", ".join(f"{k}={{{', '.join(v)}}}" for k, v in grouped.items())

    def __getstate__(self) -> Any:
        """An env holds a live session: refuse, and say how to ship a creator instead."""
        spec = getattr(self, "spec", None)
        if spec is not None:
            kwargs = ", ".join(f"{k}={v!r}" for k, v in spec.kwargs.items())
            creator = f"lambda: gym.make({spec.id!r}{', ' if kwargs else ''}{kwargs})"
        else:
            creator = f"lambda: gym.make('openenv/Remote-v0', base_url={self.base_url!r})"
        raise EnvNotPicklableError(
            f"{type(self).__name__} holds a live WebSocket session to a server and cannot be "
            "pickled or copied. Pass a creator instead, which each process calls to open its "
            f"own session: {creator} (e.g. SubprocVecEnv([creator] * n), "
            "gym.make_vec(id, num_envs=n, **kwargs), or RLlib's register_env(name, creator))"
        )

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
    def unix_path(self) -> str | None:
        """The Unix socket the session goes through (a same-host server's: see
        :mod:`openenv_gym.client.local_sockets`), or ``None``: TCP, or no session open."""
        return None if self._closed or self._session is None else self._session.unix_path

    @property
    def connect_options(self) -> ConnectOptions:
        """The options the session was opened with (timeouts, message size, headers, token)."""
        return self._connect_options

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

    def _require_session(self) -> Session:
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
        legal_key = self._observation_codec.legal_key  # the mask: as action_masks() gives it
        mask = None if legal_key is None else self._action_codec.legal_mask(self._legal, legal_key)
        return reply_info(self._observation_codec, reply, mask)

    def __repr__(self) -> str:
        where = getattr(self, "base_url", None) or "not connected"
        form = getattr(self, "form", None)
        return f"<OpenEnvEnv {where}{f' ({form})' if form else ''}>"
