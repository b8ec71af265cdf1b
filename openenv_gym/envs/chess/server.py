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
from openenv_gym.envs.chess.options import CHESS_OPTIONS
from openenv_gym.server.app import OpenEnvServer, probed_server


def chess_server(**kwargs: Any) -> OpenEnvServer:
    """Serve chess (see :class:`ChessEnvironment`); a probe environment checks the options.

    Args:
        **kwargs: The chess options (:data:`~openenv_gym.envs.chess.options.CHESS_OPTIONS`:
            ``opponent``, ``illegal_move``, ``agent_color``, ``max_moves``, ``uci_engine``)
            and :class:`OpenEnvServer` options (``max_sessions``, ...).

    Raises:
        EnvConfigError: An option is invalid.
        UCIEngineNotFoundError: ``opponent="uci"`` and no engine was found.
    """
    options, server_kwargs = CHESS_OPTIONS.split(kwargs)

    def make_chess_environment() -> ChessEnvironment:
        return ChessEnvironment(**options)

    return probed_server(
        make_chess_environment,
        action_type=ChessAction,
        observation_type=ChessObservation,
        state_type=ChessState,
        **server_kwargs,
    )


__all__ = ["chess_server"]
