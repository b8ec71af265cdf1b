"""The Gymnasium side of chess: ``gym.make("openenv/Chess-v0", ...)``.

:class:`ChessOpenEnvEnv` plays an OpenEnv chess server (ours, or an official one: the wire
schema is the same) with numeric spaces (see :mod:`openenv_gym.envs.chess.encoding`):
observations are ``Box(0, 1, (8, 8, 18))`` board planes, actions ``Discrete(4240)`` move
indices. ``info`` holds the raw ``fen``, ``legal_moves``, ``is_check``, ``result`` and the
server's metadata. :meth:`~ChessOpenEnvEnv.action_masks` gives the legal-move mask that
sb3-contrib's ``MaskablePPO`` asks for.

It is an :class:`~openenv_gym.env.OpenEnvEnv` whose codecs are the chess ones
(:mod:`openenv_gym.envs.chess.codec`), so ``gym.make_vec("openenv/Chess-v0", num_envs=8)``
is a native :class:`~openenv_gym.vector.OpenEnvVectorEnv` (one event loop, one embedded
server) whose ``action_masks()`` gives one mask per sub-env.

Example:
    >>> import gymnasium as gym
    >>> env = gym.make("openenv/Chess-v0", opponent="material")
    >>> obs, info = env.reset(seed=0)
    >>> int(env.unwrapped.action_masks().sum()), info["fen"]
    (20, 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1')
    >>> env.close()
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from openenv_gym.env import OpenEnvEnv
from openenv_gym.envs.chess.codec import FEN_FIELD, ChessBoardCodec, ChessMoveCodec
from openenv_gym.envs.chess.options import CHESS_OPTIONS, CHESS_PURPOSE, check_chess_options
from openenv_gym.errors import RenderModeUnavailableError
from openenv_gym.extras import optional_imports
from openenv_gym.providers import ServerSpec, server_provider
from openenv_gym.providers.base import ServerProvider
from openenv_gym.providers.spec import takes_server_keywords
from openenv_gym.spaces import ActionCodec, ObservationCodec

with optional_imports(CHESS_PURPOSE):
    import chess


class ChessOpenEnvEnv(OpenEnvEnv):
    """A remote OpenEnv chess game as a Gymnasium env with planes and move indices.

    Args:
        base_url: The server; ``None`` with ``provider`` to start one.
        provider: Starts (and on :meth:`close` stops) the server.
        render_mode: ``None`` or ``"ansi"`` (the board as text).
        **kwargs: :class:`~openenv_gym.env.OpenEnvEnv` options (timeouts, ``token``, ...).

    Raises:
        ServerConnectionError: The server cannot be reached.
        AuthenticationError: The server refused the token.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        base_url: str | None = None,
        *,
        provider: ServerProvider | None = None,
        render_mode: str | None = None,
        **kwargs: Any,
    ) -> None:
        if render_mode not in (None, "ansi"):
            raise RenderModeUnavailableError(
                f"render_mode={render_mode!r} is not available: chess renders 'ansi' (or None)"
            )
        self._board = chess.Board()
        kwargs.setdefault("encoding", "json")
        super().__init__(base_url, provider=provider, **kwargs)
        self.metadata = {**type(self).metadata}
        self.render_mode = render_mode

    def _build_codecs(self, schema: Mapping[str, Any]) -> tuple[ActionCodec, ObservationCodec]:
        """The chess codecs, whatever the schema says (it is the official chess schema)."""
        return ChessMoveCodec(), ChessBoardCodec()

    def _encode_action(self, action: Any) -> dict[str, Any]:
        """The UCI move of index ``action`` in the current position (exact promotions)."""
        codec = self._action_codec
        assert isinstance(codec, ChessMoveCodec)  # set in _build_codecs
        return codec.encode(action, self._board)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """New game; ``seed`` seeds the server's opponent, ``options`` (e.g. ``fen``) are
        reset keys."""
        observation, info = super().reset(seed=seed, options=options)
        self._board = chess.Board(str(info.get(FEN_FIELD) or chess.STARTING_FEN))
        return observation, info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Play move index ``action`` (it may be illegal: the server's policy applies).

        A game called a draw after ``max_moves`` half-moves is truncated, not terminated
        (:meth:`~openenv_gym.envs.chess.codec.ChessBoardCodec.truncates`).

        Raises:
            ActionOutOfSpaceError: ``action`` is not an integer in ``[0, 4240)``.
        """
        observation, reward, terminated, truncated, info = super().step(action)
        self._board = chess.Board(str(info.get(FEN_FIELD) or chess.STARTING_FEN))
        return observation, reward, terminated, truncated, info

    def render(self) -> str | None:  # type: ignore[override]
        """The board as text for ``render_mode="ansi"``."""
        return str(self._board) if self.render_mode == "ansi" else None

    @property
    def board(self) -> chess.Board:
        """A copy of the current position."""
        return self._board.copy()


@takes_server_keywords
def make_chess_env(*, base_url: str | None = None, **kwargs: Any) -> ChessOpenEnvEnv:
    """The ``openenv/Chess-v0`` entry point: a server at ``base_url``, or an embedded one.

    The chess options (:data:`~openenv_gym.envs.chess.options.CHESS_OPTIONS`: ``opponent``,
    ``illegal_move``, ``agent_color``, ``max_moves``, ``uci_engine``) configure the embedded
    server, passed as one mapping to ``openenv-gym serve chess``; with ``base_url`` they are
    the server's. The embedded server's keywords are those of every embedded server
    (:class:`~openenv_gym.providers.ServerSpec`: ``image=`` runs it in that Docker image,
    ``openenv-gym/chess:latest``, instead of a child process; ``token=`` is the bearer token
    the server requires; ``startup_timeout``, ``docker_kwargs``, ``workers``,
    ``unix_socket``).

    Raises:
        EnvConfigError: An option is invalid.
    """
    server = ServerSpec.take(kwargs)
    token = server.token
    options, env_kwargs = CHESS_OPTIONS.split(kwargs)
    check_chess_options(options["opponent"], options["illegal_move"], options["agent_color"])
    if base_url is not None:
        return ChessOpenEnvEnv(base_url, token=token, **env_kwargs)
    if options["opponent"] == "uci":  # the embedded server runs here: fail early, clearly
        from openenv_gym.envs.chess.opponents import find_uci_engine

        find_uci_engine(options["uci_engine"])
    provider = server_provider(["chess", *CHESS_OPTIONS.to_argv(options)], server)
    return ChessOpenEnvEnv(provider=provider, token=token, **env_kwargs)


__all__ = ["ChessOpenEnvEnv", "make_chess_env"]
