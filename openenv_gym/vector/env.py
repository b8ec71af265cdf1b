"""``OpenEnvVectorEnv``: N remote OpenEnv sessions as one ``gymnasium.vector.VectorEnv``.

All N sessions live on the process's one background event loop
(:func:`openenv_gym.client.background_loop`). A ``step`` encodes the N actions, hands
the whole batch to the loop thread in ONE hop, sends every frame before awaiting any
reply (so the N round trips overlap), and writes the decoded observations into
preallocated batch buffers. ``step`` is :meth:`~OpenEnvVectorEnv.step_async` (send, return at
once) followed by :meth:`~OpenEnvVectorEnv.step_wait` (collect), so a learner may compute
while the servers step. Sessions are spread round-robin over one or several servers; before
opening them the env checks that the servers can take them (``GET /capacity``, or
``CAPACITY_REACHED`` while opening on official servers) and raises
:class:`~openenv_gym.errors.InsufficientCapacityError` otherwise.

Autoreset follows Gymnasium's :class:`~gymnasium.vector.AutoresetMode`, exactly like
:class:`~gymnasium.vector.SyncVectorEnv`:

* ``NEXT_STEP`` (default): a sub-env that ended is reset on the following ``step`` (its
  action is ignored; reward 0, not terminated, not truncated).
* ``SAME_STEP``: it is reset in the same ``step``; ``info["final_obs"]`` and
  ``info["final_info"]`` hold the last observation and info of the episode.
* ``DISABLED``: reset sub-envs yourself with ``reset(options={"reset_mask": mask})``.

Wire -> Gymnasium mapping, as in :class:`~openenv_gym.env.OpenEnvEnv`: ``done`` ->
``terminated`` unless the server's truncation field (``x-truncated-key``) is set, in which
case it is ``truncated``.

Faults: a sub-env whose connection closes or whose reply does not come within
``reply_timeout`` raises :class:`~openenv_gym.errors.SubEnvError` naming its index and URL.
With ``reconnect=True`` its session is reopened instead (an embedded server this env started
is restarted if it died); the broken episode ends as truncated and
``info["reconnected"]`` says so for that sub-env.

Example:
    >>> import openenv_gym
    >>> envs = openenv_gym.OpenEnvVectorEnv("openenv/CartPole-v1", num_envs=4)  # doctest: +SKIP
    >>> obs, info = envs.reset(seed=0)  # doctest: +SKIP
    >>> obs, rewards, terminations, truncations, infos = envs.step(  # doctest: +SKIP
    ...     envs.action_space.sample()
    ... )
    >>> envs.close()  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from openenv_gym.client import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_ENCODING,
    ENCODINGS,
    background_loop,
    exchange_many,
    run_sync,
)
from openenv_gym.env import reply_info
from openenv_gym.errors import (
    ActionOutOfSpaceError,
    OpenEnvGymError,
    ProtocolError,
    ServerReplyError,
    SubEnvError,
    VectorUsageError,
)
from openenv_gym.providers.base import ServerProvider
from openenv_gym.providers.fleet import FleetProvider
from openenv_gym.vector.fleet import (
    STATE_FRAME,
    Fleet,
    check_base_urls,
    check_fleet,
    check_num_envs,
    check_sessions_per_server,
    make_template,
)
from openenv_gym.wire.binary import parse_frame
from openenv_gym.wire.messages import (
    ObservationReply,
    encode_message,
    reset_message,
    step_message,
)

#: Info key set (with its ``_reconnected`` mask) for a sub-env whose session was reopened.
RECONNECTED_KEY: Final = "reconnected"


class OpenEnvVectorEnv(VectorEnv[Any, Any, Any]):
    """N sessions of one OpenEnv environment, stepped together.

    Args:
        id: A registered id whose env is an :class:`~openenv_gym.env.OpenEnvEnv` (e.g.
            ``"openenv/CartPole-v1"``); ``None`` for any server at ``base_url`` (spaces from
            its ``GET /schema``). One env is made with ``gymnasium.make(id, **env_kwargs)``
            (which starts the embedded server when ``base_url`` is ``None``); the vector env
            takes over its session, spaces and server.
        num_envs: The number of sub-environments (sessions).
        base_url: A server URL, or a list of them (sessions spread round-robin); ``None``
            starts an embedded server (needs ``id``).
        encoding: ``"auto"`` (raw-byte observation arrays when the server supports the
            ``openenv-gym.binary.v1`` subprotocol, plain OpenEnv JSON otherwise), ``"json"``
            or ``"binary"`` (required: a server that refuses it raises
            :class:`~openenv_gym.errors.BinaryEncodingRefusedError`).
        autoreset_mode: ``NEXT_STEP`` (default), ``SAME_STEP`` or ``DISABLED``.
        reconnect: Reopen a sub-env's session when its connection breaks (see module doc)
            instead of raising :class:`~openenv_gym.errors.SubEnvError`.
        max_episode_steps: Truncate episodes after this many steps (client-side TimeLimit).
        copy: Return a copy of the observation buffer (``True``) or the buffer itself.
        sessions_per_server: With no ``base_url``, start one embedded server (child process,
            or container with ``image=``) per this many sessions instead of one for all:
            ``num_envs=16, sessions_per_server=4`` runs 4 servers. ``None``: one server.
        fleet: Where the embedded servers run: ``None`` or ``"local"`` (child processes of
            this machine), ``"ray"`` (Ray actors spread over the nodes of the cluster this
            process joined with ``ray.init(address=...)``), or a
            :class:`~openenv_gym.providers.FleetProvider` such as
            ``RayFleet(num_cpus=2)`` (:mod:`openenv_gym.providers.ray`).
        **env_kwargs: Passed to ``gymnasium.make(id, ...)`` or to
            :class:`~openenv_gym.env.OpenEnvEnv` (timeouts, field spaces, reset_kwargs, ...).

    Raises:
        VectorUsageError: ``num_envs``, ``base_url``, ``encoding`` or ``autoreset_mode`` is
            invalid.
        InsufficientCapacityError: The servers cannot take ``num_envs`` sessions.
        ServerConnectionError: A server cannot be reached.
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(
        self,
        id: str | None = None,
        num_envs: int = 1,
        *,
        base_url: str | Sequence[str] | None = None,
        encoding: str = DEFAULT_ENCODING,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        reconnect: bool = False,
        max_episode_steps: int | None = None,
        copy: bool = True,
        sessions_per_server: int | None = None,
        fleet: str | FleetProvider | None = None,
        **env_kwargs: Any,
    ) -> None:
        self._closed = True  # until the sessions are open
        self._pending: tuple[concurrent.futures.Future[list[Any]], np.ndarray | None] | None = None
        self.num_envs = check_num_envs(num_envs)
        urls = check_base_urls(base_url)
        per_server = check_sessions_per_server(sessions_per_server, urls, self.num_envs)
        server_fleet = check_fleet(fleet, urls)
        if urls is None and id is None:
            raise VectorUsageError(
                "no server given: pass base_url='http://HOST:PORT' (or a list of URLs), or an "
                "id that starts an embedded server such as 'openenv/CartPole-v1'"
            )
        if encoding not in ENCODINGS:
            raise VectorUsageError(
                f"expected encoding to be one of {list(ENCODINGS)}, got {encoding!r}"
            )
        try:
            self.autoreset_mode = AutoresetMode(autoreset_mode)
        except ValueError:
            raise VectorUsageError(
                f"expected autoreset_mode to be one of {[m.value for m in AutoresetMode]}, "
                f"got {autoreset_mode!r}"
            ) from None
        if max_episode_steps is not None and max_episode_steps < 1:
            raise VectorUsageError(f"expected max_episode_steps >= 1, got {max_episode_steps}")
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}
        self.encoding = encoding
        self.reconnect = reconnect
        self.copy = copy
        self.render_mode = None
        self._max_episode_steps = max_episode_steps
        servers = self._fleet = Fleet(
            self.num_envs,
            encoding=encoding,
            server_fleet=server_fleet,
            connect_options={
                "connect_timeout": env_kwargs.get("connect_timeout", DEFAULT_CONNECT_TIMEOUT),
                "token": env_kwargs.get("token"),
            },
        )

        if urls is not None:  # before any session is open: nothing of ours is counted yet
            needed: dict[str, int] = {}
            for i in range(num_envs):
                url = urls[i % len(urls)].rstrip("/")
                needed[url] = needed.get(url, 0) + 1
            servers.check_capacity(needed, {})
        template = make_template(id, urls, env_kwargs, encoding, server_fleet)
        session, provider = template.detach()
        first_url = template.base_url
        if provider.owns_server:
            servers.providers[first_url] = provider
        servers.urls = [
            (urls[i % len(urls)] if urls else first_url).rstrip("/") for i in range(num_envs)
        ]
        servers.urls[0] = first_url
        if per_server < num_envs:
            try:
                servers.start_more_servers(id, env_kwargs, encoding, per_server)
            except BaseException:
                session.close()
                for started in servers.providers.values():
                    started.stop()
                raise
        self._action_codec = template.action_codec
        self._observation_codec = template.observation_codec
        self._reset_kwargs = template.reset_kwargs
        servers.set_options(template.connect_options)
        servers.sessions = [session.session]
        self._closed = False
        try:
            servers.open_sessions(range(1, num_envs), check_capacity=urls is None, verify=[0])
        except BaseException:
            self.close()
            raise

        self.single_observation_space = self._observation_codec.space
        self.single_action_space = self._action_codec.space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._observations: Any = create_empty_array(
            self.single_observation_space, num_envs, fn=np.zeros
        )
        self._env_obs: list[Any] = [None] * num_envs
        self._rewards = np.zeros(num_envs, dtype=np.float64)
        self._terminations = np.zeros(num_envs, dtype=np.bool_)
        self._truncations = np.zeros(num_envs, dtype=np.bool_)
        self._autoreset_envs = np.zeros(num_envs, dtype=np.bool_)
        self._elapsed = np.zeros(num_envs, dtype=np.int64)
        self._setup_fast_paths()

    # ------------------------------------------------------------------ set-up

    def _setup_fast_paths(self) -> None:
        obs_space, obs_key = self.single_observation_space, self._observation_codec.key
        self._row_length: int | None = None
        if (
            isinstance(obs_space, spaces.Box)
            and len(obs_space.shape) == 1
            and obs_key is not None
            and isinstance(self._observations, np.ndarray)
        ):
            self._row_length = int(obs_space.shape[0])
        act_space, act_key = self.single_action_space, self._action_codec.key
        self._discrete_n: int | None = None
        if isinstance(act_space, spaces.Discrete) and int(act_space.start) == 0 and act_key:
            self._discrete_n = int(act_space.n)
            self._step_prefix = '{"type":"step","data":{' + json.dumps(act_key) + ":"
        reset_frame = encode_message(reset_message(**self._reset_kwargs))
        self._plain_reset_frame = reset_frame
        key = self._observation_codec.truncated_key
        self._truncated_key = key
        # The fields of a reply that carry no info (the observation, truncation, empty metadata).
        self._quiet_fields = frozenset(k for k in (obs_key, key, "metadata") if k)

    # ------------------------------------------------------------------ gymnasium API

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every sub-env (or those in ``options["reset_mask"]``).

        Args:
            seed: ``None``; an int (sub-env i gets ``seed + i``); or one seed per sub-env.
            options: Sent as reset keys to every sub-env; ``"reset_mask"`` (a bool array of
                shape ``(num_envs,)``) resets only those sub-envs.

        Raises:
            VectorUsageError: The seeds or the mask do not fit ``num_envs``.
            SubEnvError: A sub-env's connection broke (and ``reconnect`` is off or failed).
        """
        self._check_open()
        seeds = self._seeds(seed)
        if isinstance(seed, int):
            super().reset(seed=seed)
        options = dict(options or {})
        mask = self._reset_mask(options.pop("reset_mask", None))
        indices = [i for i in range(self.num_envs) if mask is None or mask[i]]
        return self.reset_each(indices, [seeds[i] for i in indices], [options] * len(indices))

    def reset_each(
        self,
        indices: Sequence[int],
        seeds: Sequence[int | None],
        options: Sequence[Mapping[str, Any]],
    ) -> tuple[Any, dict[str, Any]]:
        """Reset the sub-envs ``indices``, each with its own seed and options (one batch).

        The other sub-envs keep their observation. Used by the SB3 adapter, whose
        ``set_options`` gives every sub-env its own options.
        """
        self._check_open()
        self._drain_pending()
        indices = list(indices)
        frames = [
            encode_message(reset_message(seed=seed, **{**self._reset_kwargs, **dict(extra)}))
            for seed, extra in zip(seeds, options, strict=True)
        ]
        replies = self._exchange(indices, frames, retry_frames=frames)
        infos: dict[str, Any] = {}
        for i, reply in zip(indices, replies, strict=True):
            assert reply is not None  # resets are retried after a reconnect
            self._write_observation(i, reply)
            info = self._info(reply)
            if info:
                infos = self._add_info(infos, info, i)
        self._finish_observations()
        self._terminations[indices] = False
        self._truncations[indices] = False
        self._autoreset_envs[indices] = False
        self._elapsed[indices] = 0
        return self._result_observations(), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-env with its action; see the module doc for autoreset.

        Same as :meth:`step_async` then :meth:`step_wait`.

        Raises:
            ActionOutOfSpaceError: An action is outside the single action space (nothing
                is sent); the message names the sub-env.
            VectorUsageError: ``DISABLED`` autoreset and a sub-env that ended was not reset.
            SubEnvError: A sub-env's connection broke (and ``reconnect`` is off or failed).
        """
        self.step_async(actions)
        return self.step_wait()

    def step_async(self, actions: Any) -> None:
        """Send the N actions (one hop to the event loop) and return at once.

        The learner may compute while the servers step; :meth:`step_wait` collects.

        Raises:
            ActionOutOfSpaceError: An action is outside the single action space (nothing sent).
            VectorUsageError: A step is already pending, or ``DISABLED`` autoreset and a
                sub-env that ended was not reset.
        """
        self._check_open()
        if self._pending is not None:
            raise VectorUsageError("step_async() was called twice; call step_wait() first")
        resetting = self._autoreset_envs
        if self.autoreset_mode == AutoresetMode.DISABLED and resetting.any():
            ended = np.flatnonzero(resetting).tolist()
            raise VectorUsageError(
                f"sub-envs {ended} ended at the last step and autoreset_mode is DISABLED: "
                "reset them with reset(options={'reset_mask': mask}) before stepping them"
            )
        frames = self._step_frames(actions)
        was_resetting: np.ndarray | None = None
        if self.autoreset_mode == AutoresetMode.NEXT_STEP and resetting.any():
            for i in np.flatnonzero(resetting).tolist():
                frames[i] = self._plain_reset_frame
            was_resetting = resetting.copy()
        future = asyncio.run_coroutine_threadsafe(
            exchange_many(self._fleet.sessions, frames, self._fleet.reply_timeout),
            background_loop(),
        )
        self._pending = (future, was_resetting)

    def step_wait(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Collect the replies of :meth:`step_async`; returns what :meth:`step` returns.

        Raises:
            VectorUsageError: No step is pending.
            SubEnvError: A sub-env's connection broke (and ``reconnect`` is off or failed).
        """
        self._check_open()
        if self._pending is None:
            raise VectorUsageError("step_wait() was called without step_async(actions) first")
        future, was_resetting = self._pending
        self._pending = None
        n = self.num_envs
        indices = list(range(n))
        replies = self._exchange(indices, [], retry_frames=None, pending=future)
        infos: dict[str, Any] = {}
        final_infos: dict[int, dict[str, Any]] = {}
        same_step = self.autoreset_mode == AutoresetMode.SAME_STEP
        rewards, terminations, truncations = self._rewards, self._terminations, self._truncations
        truncated_key = self._truncated_key
        elapsed = self._elapsed
        limit = self._max_episode_steps
        for i in indices:
            reply = replies[i]
            if reply is None:  # reconnected: the episode ends here, truncated
                rewards[i] = 0.0
                terminations[i] = False
                truncations[i] = True
                info: dict[str, Any] = {RECONNECTED_KEY: True}
            else:
                self._write_observation(i, reply)
                if was_resetting is not None and was_resetting[i]:
                    rewards[i] = 0.0
                    terminations[i] = False
                    truncations[i] = False
                    elapsed[i] = 0
                else:
                    observation = reply.observation
                    truncated = bool(observation.get(truncated_key)) if truncated_key else False
                    elapsed[i] += 1
                    if limit is not None and elapsed[i] >= limit:
                        truncated = True
                    rewards[i] = 0.0 if reply.reward is None else reply.reward
                    terminations[i] = reply.done and not truncated
                    truncations[i] = truncated
                info = self._info(reply)
            if same_step and (terminations[i] or truncations[i]):
                final_infos[i] = info
            elif info:
                infos = self._add_info(infos, info, i)
        self._finish_observations()
        if final_infos:
            infos = self._reset_ended_same_step(final_infos, infos)
            self._autoreset_envs = np.zeros(n, dtype=np.bool_)
        else:
            self._autoreset_envs = np.logical_or(terminations, truncations)
        return (
            self._result_observations(),
            np.copy(rewards),
            np.copy(terminations),
            np.copy(truncations),
            infos,
        )

    def _reset_ended_same_step(
        self, final_infos: dict[int, dict[str, Any]], infos: dict[str, Any]
    ) -> dict[str, Any]:
        """SAME_STEP: reset the sub-envs that ended, in one more batch round trip."""
        ended = sorted(final_infos)
        for i in ended:
            final = {"final_obs": self._observation_of(i), "final_info": final_infos[i]}
            infos = self._add_info(infos, final, i)
        frames = [self._plain_reset_frame] * len(ended)
        replies = self._exchange(ended, frames, retry_frames=frames)
        for i, reply in zip(ended, replies, strict=True):
            assert reply is not None  # resets are retried after a reconnect
            self._write_observation(i, reply)
            info = self._info(reply)
            if info:
                infos = self._add_info(infos, info, i)
            self._elapsed[i] = 0
        self._finish_observations()
        return infos

    def _drain_pending(self) -> None:
        """Wait out a step_async() nobody collected, so replies pair with their requests."""
        if self._pending is not None:
            future, _ = self._pending
            self._pending = None
            with contextlib.suppress(Exception):
                future.result(self._fleet.call_timeout)

    def close_extras(self, **kwargs: Any) -> None:
        """Close every session and stop the servers this env started."""
        if self._closed:
            return
        self._drain_pending()
        self._closed = True
        self._fleet.close()

    # ------------------------------------------------------------------ extras

    @property
    def servers(self) -> list[ServerProvider]:
        """The servers this env started (and stops on close), e.g. the embedded one."""
        return list(self._fleet.providers.values())

    @property
    def base_urls(self) -> list[str]:
        """The server URL of each sub-env."""
        return list(self._fleet.urls)

    def call_state(self) -> list[dict[str, Any]]:
        """The server-side state of every sub-env (the OpenEnv ``state`` message)."""
        self._check_open()
        self._drain_pending()
        indices = list(range(self.num_envs))
        raws = run_sync(
            exchange_many(
                self._fleet.sessions, [STATE_FRAME] * self.num_envs, self._fleet.reply_timeout
            ),
            self._fleet.call_timeout,
        )
        states = []
        for i in indices:
            raw = raws[i]
            if isinstance(raw, OpenEnvGymError):
                raise self._sub_env_error(i, raw) from raw
            reply = parse_frame(raw, url=self._fleet.sessions[i].url)
            states.append(getattr(reply, "state", None) or dict(getattr(reply, "observation", {})))
        return states

    # ------------------------------------------------------------------ internals

    def _check_open(self) -> None:
        if self._closed:
            raise VectorUsageError(
                "this vector env is closed; create a new one to go on",
            )

    def _seeds(self, seed: int | Sequence[int | None] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, int | np.integer) and not isinstance(seed, bool):
            return [int(seed) + i for i in range(self.num_envs)]
        if isinstance(seed, Sequence) and not isinstance(seed, str):
            if len(seed) != self.num_envs:
                raise VectorUsageError(
                    f"expected one seed per sub-env ({self.num_envs}), got {len(seed)} seeds"
                )
            return [None if s is None else int(s) for s in seed]
        raise VectorUsageError(
            f"expected seed to be None, an int or a list of {self.num_envs} ints, got {seed!r}"
        )

    def _reset_mask(self, mask: Any) -> np.ndarray | None:
        if mask is None:
            return None
        if not (
            isinstance(mask, np.ndarray)
            and mask.dtype == np.bool_
            and mask.shape == (self.num_envs,)
        ):
            raise VectorUsageError(
                f"expected options['reset_mask'] to be a numpy bool array of shape "
                f"({self.num_envs},), got {mask!r}"
            )
        if not mask.any():
            raise VectorUsageError("options['reset_mask'] selects no sub-env; set at least one")
        return mask

    def _step_frames(self, actions: Any) -> list[str]:
        n = self.num_envs
        discrete_n = self._discrete_n
        if discrete_n is not None:
            array = np.asarray(actions)
            if (
                array.shape == (n,)
                and array.dtype.kind in "iu"
                and (n == 0 or (int(array.min()) >= 0 and int(array.max()) < discrete_n))
            ):
                prefix = self._step_prefix
                return [f"{prefix}{a}}}}}" for a in array.tolist()]
        try:
            per_env = list(iterate(self.action_space, actions))
        except (TypeError, ValueError, IndexError, AssertionError) as exc:
            raise ActionOutOfSpaceError(
                f"expected a batch of {n} actions in {self.action_space}, got {actions!r:.200}"
            ) from exc
        if len(per_env) != n:
            raise ActionOutOfSpaceError(
                f"expected a batch of {n} actions in {self.action_space}, got {len(per_env)}"
            )
        frames = []
        for i, action in enumerate(per_env):
            try:
                wire = self._action_codec.encode(action)
            except ActionOutOfSpaceError as exc:
                raise ActionOutOfSpaceError(f"sub-env {i}: {exc}", field=exc.field) from exc
            frames.append(encode_message(step_message(wire)))
        return frames

    def _exchange(
        self,
        indices: list[int],
        frames: list[str],
        *,
        retry_frames: list[str] | None,
        pending: concurrent.futures.Future[list[Any]] | None = None,
    ) -> list[ObservationReply | None]:
        """One batch round trip for ``indices``; ``None`` marks a reconnected sub-env.

        With ``retry_frames`` (resets) the frame is sent again on the reopened session.
        With ``pending`` the frames were already sent (:meth:`step_async`): collect only.
        """
        sessions = self._fleet.sessions
        if pending is None:
            raws = run_sync(
                exchange_many([sessions[i] for i in indices], frames, self._fleet.reply_timeout),
                self._fleet.call_timeout,
            )
        else:
            raws = pending.result(self._fleet.call_timeout)
        replies: list[ObservationReply | None] = []
        broken: list[int] = []
        for k, (i, raw) in enumerate(zip(indices, raws, strict=True)):
            if isinstance(raw, OpenEnvGymError):
                if not self.reconnect:
                    raise self._sub_env_error(i, raw) from raw
                broken.append(k)
                replies.append(None)
                continue
            replies.append(self._parse(i, raw))
        if broken:
            self._fleet.reconnect([indices[k] for k in broken])
            if retry_frames is not None:
                again = self._exchange(
                    [indices[k] for k in broken],
                    [retry_frames[k] for k in broken],
                    retry_frames=None,
                )
                for k, reply in zip(broken, again, strict=True):
                    if reply is None:
                        raise self._sub_env_error(indices[k], raws[k])  # type: ignore[arg-type]
                    replies[k] = reply
        return replies

    def _parse(self, index: int, raw: str | bytes) -> ObservationReply:
        url = self._fleet.sessions[index].url
        try:
            reply = parse_frame(raw, url=url)
        except (ServerReplyError, ProtocolError) as exc:
            exc.add_note(f"(from sub-env {index} of the vector env, at {url})")
            raise
        if not isinstance(reply, ObservationReply):
            raise ProtocolError(
                f"expected an 'observation' reply from sub-env {index} at {url}, got a 'state' "
                "reply",
                received=reply,
            )
        return reply

    def _sub_env_error(self, index: int, cause: BaseException) -> SubEnvError:
        return self._fleet.sub_env_error(index, cause, reconnect=self.reconnect)

    def _write_observation(self, index: int, reply: ObservationReply) -> None:
        row = self._row_length
        if row is not None:
            value = reply.observation.get(self._observation_codec.key)  # type: ignore[arg-type]
            if (type(value) is list or type(value) is np.ndarray) and len(value) == row:
                try:
                    self._observations[index] = value
                    return
                except (TypeError, ValueError):
                    pass  # the codec names the problem below
            self._observations[index] = self._decode(index, reply)
            return
        self._env_obs[index] = self._decode(index, reply)

    def _decode(self, index: int, reply: ObservationReply) -> Any:
        try:
            return self._observation_codec.decode(reply.observation)
        except OpenEnvGymError as exc:
            exc.add_note(f"(from sub-env {index} of the vector env, at {self._fleet.urls[index]})")
            raise

    def _finish_observations(self) -> None:
        if self._row_length is None and all(o is not None for o in self._env_obs):
            self._observations = concatenate(
                self.single_observation_space, self._env_obs, self._observations
            )

    def _observation_of(self, index: int) -> Any:
        if self._row_length is not None:
            return np.array(self._observations[index])
        return copy.deepcopy(self._env_obs[index])

    def _result_observations(self) -> Any:
        return copy.deepcopy(self._observations) if self.copy else self._observations

    def _info(self, reply: ObservationReply) -> dict[str, Any]:
        observation = reply.observation
        if (
            not reply.metadata
            and self._quiet_fields.issuperset(observation)
            and not observation.get("metadata")
        ):
            return {}
        return reply_info(self._observation_codec, reply)

    def __repr__(self) -> str:
        servers = sorted(set(self._fleet.urls)) if self._fleet.urls else []
        return f"OpenEnvVectorEnv(num_envs={self.num_envs}, servers={servers})"


class VectorEntryPoint:
    """A picklable ``vector_entry_point`` for one registered id: ``gym.make_vec`` builds an
    :class:`OpenEnvVectorEnv` natively (no Sync/Async copies of single envs).

    Example:
        >>> VectorEntryPoint("openenv/CartPole-v1")
        VectorEntryPoint('openenv/CartPole-v1')
    """

    def __init__(self, id: str) -> None:
        self.id = id

    def __call__(self, num_envs: int = 1, **kwargs: Any) -> OpenEnvVectorEnv:
        return OpenEnvVectorEnv(self.id, num_envs, **kwargs)

    def __repr__(self) -> str:
        return f"VectorEntryPoint({self.id!r})"


__all__ = ["ENCODINGS", "RECONNECTED_KEY", "OpenEnvVectorEnv", "VectorEntryPoint"]
