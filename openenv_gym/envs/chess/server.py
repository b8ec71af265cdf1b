"""chess_server: an :class:`~openenv_gym.server.OpenEnvServer` for chess.

Example:
    >>> server = chess_server(opponent="material")
    >>> sorted(server.routes.schema["observation"]["properties"])
    ['done', 'fen', 'is_check', 'legal_moves', 'metadata', 'result', 'reward']
"""

from __future__ import annotations

from typing import Any

from openenv_gym.envs.chess.environment import ChessEnvironment
from openenv_gym.envs.chess.models import ChessAction, ChessObservation, ChessState
from openenv_gym.envs.chess.options import DEFAULT_ILLEGAL_MOVE, DEFAULT_MAX_MOVES
from openenv_gym.server.app import OpenEnvServer


def chess_server(
    *,
    opponent: str = "random",
    illegal_move: str = DEFAULT_ILLEGAL_MOVE,
    agent_color: str = "white",
    max_moves: int = DEFAULT_MAX_MOVES,
    uci_engine: str | None = None,
    **server_kwargs: Any,
) -> OpenEnvServer:
    """Serve chess (see :class:`ChessEnvironment`); a probe environment checks the options.

    Raises:
        EnvConfigError: An option is invalid.
        UCIEngineNotFoundError: ``opponent="uci"`` and no engine was found.
    """
    options: dict[str, Any] = {
        "opponent": opponent,
        "illegal_move": illegal_move,
        "agent_color": agent_color,
        "max_moves": max_moves,
        "uci_engine": uci_engine,
    }
    probe = ChessEnvironment(**options)
    try:
        metadata = probe.get_metadata()
    finally:
        probe.close()

    def make_chess_environment() -> ChessEnvironment:
        return ChessEnvironment(**options)

    return OpenEnvServer(
        make_chess_environment,
        action_type=ChessAction,
        observation_type=ChessObservation,
        state_type=ChessState,
        metadata=metadata,
        **server_kwargs,
    )


__all__ = ["chess_server"]
