"""The Gymnasium side of chess: ``gym.make("openenv/Chess-v0", ...)``.

:class:`ChessOpenEnvEnv` plays an OpenEnv chess server (ours, or an official one: the wire
schema is the same) with numeric spaces (see :mod:`openenv_gym.envs.chess.encoding`):
observations are ``Box(0, 1, (8, 8, 18))`` board planes, actions ``Discrete(4240)`` move
indices. ``info`` holds the raw ``fen``, ``legal_moves``, ``is_check``, ``result`` and the
server's metadata. :meth:`~ChessOpenEnvEnv.action_masks` gives the legal-move mask that
sb3-contrib's ``MaskablePPO`` asks for.

Example:
    >>> import gymnasium as gym
    >>> env = gym.make("openenv/Chess-v0", opponent="material")  # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)  # doctest: +SKIP
    >>> env.unwrapped.action_masks().sum(), info["fen"]  # doctest: +SKIP
    (np.int64(20), 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1')
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

import chess
import gymnasium as gym
import numpy as np

from openenv_gym.client import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_REPLY_TIMEOUT,
    SyncSession,
)
from openenv_gym.env import _close_session_soon
from openenv_gym.envs.chess import encoding
from openenv_gym.envs.chess.options import CHESS_OPTIONS, check_chess_options
from openenv_gym.errors import ActionOutOfSpaceError, OpenEnvGymError, SessionClosedError
from openenv_gym.providers import server_provider
from openenv_gym.providers.base import GivenServer, ServerProvider
from openenv_gym.wire.messages import ObservationReply, reset_message, step_message


class ChessOpenEnvEnv(gym.Env[np.ndarray, np.int64]):
    """A remote OpenEnv chess game as a Gymnasium env with planes and move indices.

    Args:
        base_url: The server; ``None`` with ``provider`` to start one.
        provider: Starts (and on :meth:`close` stops) the server.
        connect_timeout: Seconds to open the connection.
        reply_timeout: Seconds to wait for each reply.
        token: A bearer token for servers that require one (``--token``); default: the
            ``OPENENV_TOKEN`` environment variable.

    Raises:
        ServerConnectionError: The server cannot be reached.
        AuthenticationError: The server refused the token.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"]}

    def __init__(
        self,
        base_url: str | None = None,
        *,
        provider: ServerProvider | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        reply_timeout: float = DEFAULT_REPLY_TIMEOUT,
        render_mode: str | None = None,
        token: str | None = None,
    ) -> None:
        if base_url is None and provider is None:
            raise OpenEnvGymError(
                "no server given: pass base_url='http://HOST:PORT' of a chess OpenEnv server, "
                "or use gym.make('openenv/Chess-v0') to start an embedded one"
            )
        self.observation_space = encoding.observation_space()
        self.action_space = encoding.action_space()
        self.render_mode = render_mode
        self._provider: ServerProvider = provider or GivenServer(str(base_url))
        self._session: SyncSession | None = None
        self._closed = False
        self._board = chess.Board()
        self._mask = np.zeros(encoding.N_ACTIONS, bool)
        try:
            self.base_url = self._provider.start()
            self._session = SyncSession.connect(
                self.base_url,
                connect_timeout=connect_timeout,
                reply_timeout=reply_timeout,
                encoding="json",
                token=token,
            )
            weakref.finalize(self, _close_session_soon, self._session)
        except BaseException:
            self.close()
            raise

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """New game; ``seed`` seeds the server's opponent, ``options`` (e.g. ``fen``) are
        reset keys."""
        super().reset(seed=seed)
        reply = self._require_session().request_observation(
            reset_message(seed=seed, **(options or {}))
        )
        observation, info = self._read(reply)
        return observation, info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Play move index ``action`` (it may be illegal: the server's policy applies).

        Raises:
            ActionOutOfSpaceError: ``action`` is not an integer in ``[0, 4240)``.
        """
        if not self.action_space.contains(action) and not (
            isinstance(action, int | np.integer) and 0 <= int(action) < encoding.N_ACTIONS
        ):
            raise ActionOutOfSpaceError(
                f"action {action!r} is not in the action space Discrete({encoding.N_ACTIONS}); "
                "expected a move index (see openenv_gym.envs.chess.encoding)",
                field="move",
            )
        move = encoding.index_to_move(int(action), self._board)
        reply = self._require_session().request_observation(step_message({"move": move.uci()}))
        observation, info = self._read(reply)
        truncated = bool(info.get("truncated", False))
        terminated = bool(reply.done) and not truncated
        reward = 0.0 if reply.reward is None else float(reply.reward)
        return observation, reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """The legal moves of the current position as a ``bool`` mask (for MaskablePPO)."""
        return self._mask.copy()

    def render(self) -> str | None:  # type: ignore[override]
        """The board as text for ``render_mode="ansi"``."""
        return str(self._board) if self.render_mode == "ansi" else None

    @property
    def board(self) -> chess.Board:
        """A copy of the current position."""
        return self._board.copy()

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

    def _require_session(self) -> SyncSession:
        if self._closed or self._session is None or self._session.closed:
            raise SessionClosedError("this env is closed; create a new one to go on")
        return self._session

    def _read(self, reply: ObservationReply) -> tuple[np.ndarray, dict[str, Any]]:
        wire = reply.observation
        self._board = chess.Board(str(wire.get("fen") or chess.STARTING_FEN))
        legal = [chess.Move.from_uci(m) for m in wire.get("legal_moves") or []]
        self._mask = encoding.moves_mask(legal)
        info = {k: v for k, v in wire.items() if k != "metadata"}
        nested = wire.get("metadata")
        if isinstance(nested, dict):
            info.update(nested)
        info.update(reply.metadata)
        return encoding.board_planes(self._board), info


def make_chess_env(
    *,
    base_url: str | None = None,
    startup_timeout: float = 60.0,
    image: str | None = None,
    token: str | None = None,
    docker_kwargs: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> ChessOpenEnvEnv:
    """The ``openenv/Chess-v0`` entry point: a server at ``base_url``, or an embedded one.

    The chess options (:data:`~openenv_gym.envs.chess.options.CHESS_OPTIONS`: ``opponent``,
    ``illegal_move``, ``agent_color``, ``max_moves``, ``uci_engine``) configure the embedded
    server, passed as one mapping to ``openenv-gym serve chess``; with ``base_url`` they are
    the server's. ``image=`` runs the embedded server in that Docker image
    (``openenv-gym/chess:latest``) instead of a child process; ``token=`` is the bearer
    token the server requires.

    Raises:
        EnvConfigError: An option is invalid.
    """
    options, env_kwargs = CHESS_OPTIONS.split(kwargs)
    check_chess_options(options["opponent"], options["illegal_move"], options["agent_color"])
    if base_url is not None:
        return ChessOpenEnvEnv(base_url, token=token, **env_kwargs)
    if options["opponent"] == "uci":  # the embedded server runs here: fail early, clearly
        from openenv_gym.envs.chess.opponents import find_uci_engine

        find_uci_engine(options["uci_engine"])
    provider = server_provider(
        ["chess", *CHESS_OPTIONS.to_argv(options)],
        image=image,
        token=token,
        startup_timeout=startup_timeout,
        docker_kwargs=docker_kwargs,
    )
    return ChessOpenEnvEnv(provider=provider, token=token, **env_kwargs)


__all__ = ["ChessOpenEnvEnv", "make_chess_env"]
