"""The one step path: every sub-env's op sent, the replies collected in connection order.

:class:`~openenv_gym.vector.OpenEnvVectorEnv`'s ``step`` and the synchronous
:class:`~openenv_gym.vector.OpenEnvPool` (``batch_size == num_envs``) both step through a
:class:`StepPath`, so a fix to the step lands in one place:

* :meth:`StepPath.send` encodes the actions with each sub-env's last legal actions (a chess
  pawn's bare move to the last rank is a queen promotion), puts the ``NEXT_STEP`` reset in
  place of the action of each sub-env whose episode ended (``buffers.pending_resets``) and
  sends one frame per connection;
* :meth:`StepPath.collect` reads the replies in connection order, writes each one into the
  batch buffers as soon as it is read, reopens broken connections (``reconnect``) and marks
  their sub-envs' episodes truncated, and says which sub-envs the next step resets;
* :meth:`StepPath.round_trip` sends resets (sent again on a reopened connection).

The asynchronous pool adds only its subsets and arrival order
(:mod:`openenv_gym.vector.in_flight`), on the same buffers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from gymnasium.vector import AutoresetMode

from openenv_gym.client import DEFAULT_CONNECT_TIMEOUT
from openenv_gym.client.blocking import BlockingConnection
from openenv_gym.client.options import ConnectOptions
from openenv_gym.errors import OpenEnvGymError, VectorUsageError
from openenv_gym.providers.base import ServerProvider
from openenv_gym.providers.server_fleet import ServerFleet
from openenv_gym.vector.buffers import BatchBuffers
from openenv_gym.vector.channels import Channel
from openenv_gym.vector.connections import Connections, Pending
from openenv_gym.vector.infos import AddInfo, ResultRows
from openenv_gym.vector.options import SubEnvSpec, make_template, spread_over
from openenv_gym.vector.round_trip import Op
from openenv_gym.vector.steady_step import SteadyStep
from openenv_gym.wire.batch import BatchResult
from openenv_gym.wire.messages import reset_message

if TYPE_CHECKING:
    from openenv_gym.env import OpenEnvEnv
    from openenv_gym.spaces.codec import ActionCodec

#: Info key set (with its ``_reconnected`` mask) for a sub-env whose session was reopened.
RECONNECTED_KEY: Final = "reconnected"


class StepPath:
    """Steps every sub-env of ``connections`` and writes the replies into ``buffers``.

    Args:
        connections: The sub-envs' connections.
        buffers: The batch buffers the replies are written into (their ``add_info`` adds
            the reconnected flags too).
        template: The env whose spaces, action codec and reset options the sub-envs share.
        autoreset_mode: ``NEXT_STEP``, ``SAME_STEP`` or ``DISABLED``.
        reconnect: Reopen a broken connection instead of raising
            :class:`~openenv_gym.errors.SubEnvError`.
    """

    def __init__(
        self,
        connections: Connections,
        buffers: BatchBuffers,
        template: OpenEnvEnv,
        *,
        autoreset_mode: AutoresetMode,
        reconnect: bool,
    ) -> None:
        self.connections, self.buffers, self.template = connections, buffers, template
        self.action_codec = template.action_codec
        self.add_info: AddInfo = buffers.add_info
        self.autoreset_mode, self.reconnect = autoreset_mode, reconnect
        #: The data of a reset without seed (autoresets, reopened sessions).
        self.plain_reset: dict[str, Any] = reset_message(**template.reset_kwargs)["data"]
        self.num_envs = buffers.num_envs
        self._every = list(range(self.num_envs))
        #: Takes the steps whose replies are all plain batch results in one pass (``None``:
        #: this env's space or codec needs the general path every step).
        self.steady = SteadyStep(buffers) if SteadyStep.supports(buffers) else None
        # The step sent and not collected yet, and the sub-envs whose op was an autoreset.
        self._pending: tuple[Pending, frozenset[int] | None] | None = None
        #: The sub-envs whose connection the last :meth:`collect` reopened.
        self.reconnected: list[int] = []

    @property
    def pending(self) -> bool:
        """Whether a step was sent and not collected yet."""
        return self._pending is not None

    def encode(self, actions: Any, ids: Sequence[int]) -> list[dict[str, Any]]:
        """The wire actions of sub-envs ``ids`` (``actions`` in that order), each encoded
        with its sub-env's last legal actions.

        Raises:
            ActionOutOfSpaceError: An action is outside the action space.
        """
        legal = self.buffers.legal
        ids_legal = legal if len(ids) == self.num_envs and ids == self._every else None
        if ids_legal is None:
            ids_legal = [legal[i] for i in ids]
        return self.action_codec.encode_batch(actions, len(ids), ids_legal)

    def send(
        self,
        actions: Any,
        *,
        ids: Sequence[int] | None = None,
        max_episode_steps: int | None = None,
        defer: bool = False,
    ) -> None:
        """Send one step of every sub-env (``ids``: the order of ``actions``, a permutation
        of the sub-envs; ``None``: ``0..num_envs-1``); ``defer``: only build the frames,
        :meth:`collect` sends and reads them in one go.

        Raises:
            ActionOutOfSpaceError: An action is outside the action space (nothing is sent).
            VectorUsageError: ``DISABLED`` autoreset and a sub-env that ended was not reset.
        """
        buffers = self.buffers
        resetting = buffers.pending_resets
        mode = self.autoreset_mode
        if mode == AutoresetMode.DISABLED and resetting:
            raise VectorUsageError(
                f"sub-envs {resetting} ended at the last step and autoreset_mode is DISABLED: "
                "reset them with reset(options={'reset_mask': mask}) before stepping them"
            )
        order = self._every if ids is None else list(ids)
        try:
            wires = self.encode(actions, order)
        except OpenEnvGymError as exc:
            if ids is not None:
                exc.add_note(f"(the actions of sub-envs {order}, in that order)")
            raise
        if order == self._every:
            ops: list[Op | None] = [("step", wire) for wire in wires]
        else:
            ops = [None] * self.num_envs
            for i, wire in zip(order, wires, strict=True):
                ops[i] = ("step", wire)
        was_resetting: frozenset[int] | None = None
        if mode == AutoresetMode.NEXT_STEP and resetting:
            for i in resetting:
                ops[i] = ("reset", self.plain_reset)
            was_resetting = frozenset(resetting)
        same_step = mode == AutoresetMode.SAME_STEP
        last = None
        if same_step and max_episode_steps is not None:
            last = (buffers.elapsed + 1 >= max_episode_steps).tolist()
        pending = self.connections.send(
            ops, same_step_reset=self.plain_reset if same_step else None, last=last, defer=defer
        )
        self._pending = (pending, was_resetting)

    def collect(self) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
        """Collect the step of :meth:`send`: each reply is written as soon as it is read.

        Returns:
            The infos, and the ``SAME_STEP`` sub-envs that ended and were not reset by their
            server (sub-env -> its final info), to reset in one more round trip.

        Raises:
            SubEnvError: A connection broke (and ``reconnect`` is off or failed); the
                sub-envs whose reply was not taken are reset by the next step.
        """
        if self._pending is None:
            raise VectorUsageError("step_wait() was called without step_async(actions) first")
        (pending, was_resetting), self._pending = self._pending, None
        buffers = self.buffers
        raws = None
        steady = self.steady
        if was_resetting is None and steady is not None and steady.worth_trying():
            raws = self.connections.receive_at_once(pending)
            if raws is not None:
                try:
                    steady_infos = steady.take(pending.channels, raws)
                except BaseException:  # interrupted: no reply taken, each one remembered
                    for channel, raw in zip(pending.channels, raws, strict=True):
                        channel.skip(raw)
                    if self.autoreset_mode == AutoresetMode.NEXT_STEP:
                        buffers.end_step()
                        buffers.end_episodes(self._every)
                    raise
                if steady_infos is not None:
                    self.reconnected = []
                    buffers.finish()
                    return steady_infos, {}
        infos: dict[str, Any] = {}
        ended: dict[int, dict[str, Any]] = {}  # SAME_STEP: ended, not yet reset -> final_info
        taken: list[Channel] = []  # the channels whose reply was written (no numpy per reply)
        deferred: list[ResultRows] = []  # their infos, merged once for all channels
        self.reconnected = []

        def take(channel: Channel, result: BatchResult) -> None:
            # Each reply is decoded as soon as it is read: the next server may still step.
            nonlocal infos
            infos = buffers.take_steps(
                channel.indices, result, was_resetting, infos, ended, deferred
            )
            taken.append(channel)

        try:
            _, reconnected = self.connections.collect_or_reopen(
                pending, reconnect=self.reconnect, take=take, raws=raws
            )
        except BaseException:
            if self.autoreset_mode == AutoresetMode.NEXT_STEP:
                # The sub-envs whose reply was not taken go on by a reset, as those that ended.
                buffers.end_step()
                written = {i for channel in taken for i in channel.indices}
                buffers.end_episodes([i for i in self._every if i not in written])
            raise
        self.reconnected = reconnected
        infos = buffers.merge_deferred(infos, deferred)
        same_step = self.autoreset_mode == AutoresetMode.SAME_STEP
        for i in reconnected:  # the episode ends here, truncated
            buffers.mark_reconnected(i)
            info: dict[str, Any] = {RECONNECTED_KEY: True}
            if same_step:
                ended[i] = info
            else:
                infos = self.add_info(infos, info, i)
        buffers.finish()
        return infos, ended

    def round_trip(self, ops: list[Op | None]) -> list[tuple[Channel, BatchResult]]:
        """Send ``ops`` (resets) and collect; a broken connection is reopened and its resets
        sent again when ``reconnect`` is on.

        Raises:
            SubEnvError: A connection broke (and ``reconnect`` is off or failed).
        """
        results, _ = self.connections.collect_or_reopen(
            self.connections.send(ops),
            reconnect=self.reconnect,
            retry=ops,
            reset=("reset", self.plain_reset),
        )
        return results

    def drain(self) -> None:
        """Wait out a step nobody collected, so replies pair with their requests."""
        if self._pending is not None:
            (pending, _), self._pending = self._pending, None
            with contextlib.suppress(Exception):  # replies dropped: only their order matters
                self.connections.collect(pending)


def open_step_path(
    spec: SubEnvSpec,
    env_kwargs: Mapping[str, Any],
    add_info: AddInfo,
    *,
    autoreset_mode: AutoresetMode,
    reconnect: bool,
    server_fleet: ServerFleet | None = None,
    sessions_per_server: int | None = None,
    sessions_per_connection: int | None = None,
) -> StepPath:
    """Open the sessions of the sub-envs ``spec`` checked and return their step path.

    In order: the connections (the capacity of given ``spec.urls`` is checked before any
    session is open), the template env (:func:`~openenv_gym.vector.options.make_template`
    with ``env_kwargs``: it starts the embedded server when there are no ``urls``), the batch
    buffers, one more embedded server per ``sessions_per_server`` sessions (``None``: one
    for all), and every sub-env's session. On failure every connection and server is closed.

    Args:
        spec: The vector env's checked arguments (id, number, servers, encoding, time limit).
        env_kwargs: The template env's arguments (``connect_timeout`` and ``token`` too).
        add_info: Adds a sub-env's info keys to the batch's infos.
        autoreset_mode: ``NEXT_STEP``, ``SAME_STEP`` or ``DISABLED``.
        reconnect: Reopen a broken connection instead of raising.
        server_fleet: Where the embedded servers run (``None``: child processes here).
        sessions_per_connection: At most this many sub-envs on one batch connection (a
            pool's ``batch_size``); ``None``: as many as the workers' share.

    Raises:
        InsufficientCapacityError, ServerConnectionError: The sessions cannot be opened.
    """
    connections = Connections(
        spec.num_envs,
        encoding=spec.choice,
        server_fleet=server_fleet,
        sessions_per_connection=sessions_per_connection,
        connect_options=ConnectOptions(
            encoding=spec.encoding,
            connect_timeout=env_kwargs.get("connect_timeout", DEFAULT_CONNECT_TIMEOUT),
            token=env_kwargs.get("token"),
        ),
    )
    if spec.urls is not None:  # before any session is open: nothing of ours is counted yet
        connections.check_capacity(spread_over(spec.urls, spec.num_envs))
    template = make_template(spec.id, spec.urls, env_kwargs, spec.encoding, server_fleet)
    buffers = BatchBuffers(
        template.observation_codec,
        spec.num_envs,
        autoreset_mode=autoreset_mode,
        max_episode_steps=spec.max_episode_steps,
        add_info=add_info,
        where=connections.url_of,
    )
    # Rows of one array batch are copied into the buffer before the next request.
    connections.adopt(template, spec.urls, borrow_arrays=buffers.stacked)
    try:
        if sessions_per_server is not None and sessions_per_server < spec.num_envs:
            connections.start_more_servers(spec.id, env_kwargs, sessions_per_server)
        connections.open(range(spec.num_envs), check_capacity=spec.urls is None)
    except BaseException:
        connections.close()
        raise
    return StepPath(
        connections, buffers, template, autoreset_mode=autoreset_mode, reconnect=reconnect
    )


class SubEnvConnections:
    """What the vector env and the pool share over their step path: taking it over, and
    the properties of its ``_connections``."""

    _closed: bool
    _path: StepPath
    _connections: Connections
    _buffers: BatchBuffers
    _action_codec: ActionCodec
    _reset_kwargs: dict[str, Any]

    def _take_path(self, path: StepPath) -> OpenEnvEnv:
        """Step through ``path`` (from :func:`open_step_path`) from now on; this env is open.

        Returns:
            The template env, whose spaces this env takes.
        """
        self._path = path
        self._connections = path.connections
        self._buffers = path.buffers
        self._action_codec = path.action_codec
        self._reset_kwargs = path.template.reset_kwargs
        self._closed = False
        return path.template

    @property
    def servers(self) -> list[ServerProvider]:
        """The servers this env started (and stops on close), e.g. the embedded one."""
        return self._connections.providers

    @property
    def base_urls(self) -> list[str]:
        """The server URL of each sub-env."""
        return self._connections.urls

    @property
    def connections(self) -> list[BlockingConnection]:
        """The open WebSocket connections: one per server worker against our servers (the
        sessions multiplexed), one per session against an official server."""
        return self._connections.sessions


__all__ = ["RECONNECTED_KEY", "StepPath", "SubEnvConnections", "open_step_path"]
