"""``OpenEnvVectorEnv``: N remote OpenEnv sessions as one ``gymnasium.vector.VectorEnv``.

Against our servers, each connection carries several sessions (``openenv-gym.batch.v1``,
one connection per server worker): a ``step`` sends ONE frame per connection with the
actions of its sub-envs and gets one frame back (observation arrays stacked), autoreset
included; against official servers each sub-env has a plain session of its own. The
connections are blocking sockets used in the caller's thread (no event loop, no thread hop):
a ``step`` encodes the N actions with the action codec, sends every frame before awaiting
any reply (so the round trips overlap), and decodes the observations with the observation
codec into preallocated batch buffers. ``step`` is :meth:`~OpenEnvVectorEnv.step_async`
(send, return at once) followed by :meth:`~OpenEnvVectorEnv.step_wait` (collect), so a
learner may compute while the servers step. Sessions are spread round-robin over one or
several servers; before opening them the env checks that the servers can take them
(``GET /capacity``, or ``CAPACITY_REACHED`` while opening on official servers) and raises
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

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from openenv_gym.errors import (
    VectorUsageError,
)
from openenv_gym.providers.server_fleet import ServerFleet
from openenv_gym.vector.options import (
    check_autoreset_mode,
    check_fleet,
    check_reset_mask,
    check_sessions_per_server,
    check_sub_envs,
    seeds_for,
)
from openenv_gym.vector.round_trip import Op
from openenv_gym.vector.step_path import (
    RECONNECTED_KEY,
    StepPath,
    SubEnvConnections,
    open_step_path,
)
from openenv_gym.wire.encoding import DEFAULT_ENCODING, ENCODINGS
from openenv_gym.wire.messages import reset_message


class OpenEnvVectorEnv(SubEnvConnections, VectorEnv[Any, Any, Any]):
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
            :class:`~openenv_gym.providers.ServerFleet` such as
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
        fleet: str | ServerFleet | None = None,
        **env_kwargs: Any,
    ) -> None:
        self._closed = True  # until the sessions are open
        spec = check_sub_envs(id, num_envs, base_url, encoding, max_episode_steps)
        self.num_envs = spec.num_envs
        per_server = check_sessions_per_server(sessions_per_server, spec.urls, self.num_envs)
        server_fleet = check_fleet(fleet, spec.urls)
        self.autoreset_mode = check_autoreset_mode(autoreset_mode)
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}
        self.encoding = encoding
        self.reconnect = reconnect
        self.copy = copy
        self.render_mode = None
        self._max_episode_steps = max_episode_steps
        template = self._take_path(
            open_step_path(
                spec,
                env_kwargs,
                self._add_info,
                autoreset_mode=self.autoreset_mode,
                reconnect=reconnect,
                server_fleet=server_fleet,
                sessions_per_server=per_server,
            )
        )
        self._observation_codec = template.observation_codec

        self.single_observation_space = self._observation_codec.space
        self.single_action_space = self._action_codec.space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)

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
        seeds = seeds_for(seed, self.num_envs)
        if isinstance(seed, int):
            super().reset(seed=seed)
        options = dict(options or {})
        mask = check_reset_mask(options.pop("reset_mask", None), self.num_envs)
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
        path = self._check_open()
        path.drain()
        indices = list(indices)
        ops: list[Op | None] = [None] * self.num_envs
        for i, seed, extra in zip(indices, seeds, options, strict=True):
            data = reset_message(seed=seed, **{**self._reset_kwargs, **dict(extra)})["data"]
            ops[i] = ("reset", data)
        buffers = self._buffers
        infos: dict[str, Any] = {}
        for channel, result in path.round_trip(ops):
            infos = buffers.take_resets(channel.indices, result, infos)
        buffers.finish()
        buffers.mark_reset(indices)
        return self._buffers.batch_observations(copy=self.copy), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-env with its action; see the module doc for autoreset.

        Same as :meth:`step_async` then :meth:`step_wait`.

        Raises:
            ActionOutOfSpaceError: An action is outside the single action space (nothing
                is sent); the message names the sub-env.
            VectorUsageError: ``DISABLED`` autoreset and a sub-env that ended was not reset.
            SubEnvError: A sub-env's connection broke (and ``reconnect`` is off or failed).
        """
        self._start_step(actions, defer=True)  # sent and read in one go
        return self.step_wait()

    def step_async(self, actions: Any) -> None:
        """Send the actions (one frame per connection) and return at once.

        The learner may compute while the servers step; :meth:`step_wait` collects.

        Raises:
            ActionOutOfSpaceError: An action is outside the single action space (nothing sent).
            VectorUsageError: A step is already pending, or ``DISABLED`` autoreset and a
                sub-env that ended was not reset.
        """
        self._start_step(actions, defer=False)

    def _start_step(self, actions: Any, *, defer: bool) -> None:
        path = self._check_open()
        if path.pending:
            raise VectorUsageError("step_async() was called twice; call step_wait() first")
        path.send(actions, max_episode_steps=self._max_episode_steps, defer=defer)

    def step_wait(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Collect the replies of :meth:`step_async`; returns what :meth:`step` returns.

        Raises:
            VectorUsageError: No step is pending.
            SubEnvError: A sub-env's connection broke (and ``reconnect`` is off or failed).
        """
        infos, ended = self._check_open().collect()
        buffers = self._buffers
        if ended:
            infos = self._reset_ended_same_step(ended, infos)
        buffers.end_step()
        return (
            self._buffers.batch_observations(copy=self.copy),
            np.copy(buffers.rewards),
            np.copy(buffers.terminations),
            np.copy(buffers.truncations),
            infos,
        )

    def _reset_ended_same_step(
        self, final_infos: dict[int, dict[str, Any]], infos: dict[str, Any]
    ) -> dict[str, Any]:
        """SAME_STEP on connections whose server did not reset them (one more round trip)."""
        buffers, path = self._buffers, self._check_open()
        ended = sorted(final_infos)
        for i in ended:
            final = {"final_obs": buffers.observation_of(i), "final_info": final_infos[i]}
            infos = self._add_info(infos, final, i)
        ops: list[Op | None] = [None] * self.num_envs
        for i in ended:
            ops[i] = ("reset", path.plain_reset)
        for channel, result in path.round_trip(ops):
            infos = buffers.take_resets(channel.indices, result, infos)
        buffers.elapsed[ended] = 0
        buffers.finish()
        return infos

    def close_extras(self, **kwargs: Any) -> None:
        """Close every session and stop the servers this env started."""
        if self._closed:
            return
        self._path.drain()
        self._closed = True
        self._connections.close()

    # ------------------------------------------------------------------ extras

    @property
    def batched(self) -> bool:
        """Whether every sub-env shares a connection with others (``openenv-gym.batch.v1``:
        one frame per connection per step)."""
        return all(channel.batch for channel in self._connections.channels)

    def call_state(self) -> list[dict[str, Any]]:
        """The server-side state of every sub-env (the OpenEnv ``state`` message)."""
        self._check_open().drain()
        return self._connections.states()

    # ------------------------------------------------------------------ internals

    def _check_open(self) -> StepPath:
        """The step path of the open env."""
        if self._closed:
            raise VectorUsageError("this vector env is closed; create a new one to go on")
        return self._path

    def action_masks(self) -> np.ndarray:
        """The legal actions of each sub-env's last observation: ``(num_envs, n)`` ``bool``
        (sb3-contrib's ``MaskablePPO`` asks the SB3 adapter, which asks this).

        Raises:
            ActionMaskUnavailableError: The observations list no legal actions, the action
                space is not discrete, or a sub-env has not been reset yet.
        """
        return self._buffers.action_masks(self._action_codec)

    def __repr__(self) -> str:
        servers = sorted(set(self._connections.urls))
        return f"OpenEnvVectorEnv(num_envs={self.num_envs}, servers={servers})"


__all__ = ["ENCODINGS", "RECONNECTED_KEY", "OpenEnvVectorEnv"]
