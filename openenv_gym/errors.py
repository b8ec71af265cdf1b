"""The exception hierarchy of openenv-gym.

Every error this package raises on purpose derives from :class:`OpenEnvGymError`, so
``except OpenEnvGymError`` catches them all. Each class also derives from the closest
built-in exception (``ConnectionError``, ``TimeoutError``, ``ValueError``, ...) so code
written against the standard library keeps working.

Messages follow one pattern: what was expected, what arrived, and what to do about it.

Example:
    >>> from openenv_gym.errors import ServerReplyError, OpenEnvGymError
    >>> err = ServerReplyError("bad action", code="VALIDATION_ERROR", url="ws://127.0.0.1:1/ws")
    >>> isinstance(err, OpenEnvGymError), err.code
    (True, 'VALIDATION_ERROR')
"""

from __future__ import annotations

from typing import Any

from openenv_gym.picklable_error import PicklableError


class OpenEnvGymError(PicklableError):
    """Base class of every error raised by openenv-gym."""


# --------------------------------------------------------------------------- transport


class ServerConnectionError(OpenEnvGymError, ConnectionError):
    """The server could not be reached, or the connection broke.

    Attributes:
        url: The URL that was tried.
    """

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url


class NotAnOpenEnvServerError(ServerConnectionError):
    """Something answered at the URL, but it does not speak the OpenEnv protocol."""


class NoWebSocketEndpointError(NotAnOpenEnvServerError):
    """The server refused the WebSocket upgrade at ``/ws`` (HTTP 403 or 404) with no sign of
    authentication: it has no OpenEnv WebSocket endpoint (a first-release ``openenv-core``
    0.1 server or a plain FastAPI app). A single env falls back to HTTP sessions."""


class NoStateRouteError(OpenEnvGymError, NotImplementedError):
    """An HTTP-form server answered ``GET /state`` with 404 or 405: it has no state route
    (reset and step work without one). ``url``: the URL tried."""

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url


class ConnectionLostError(ServerConnectionError):
    """An open session's connection closed before the reply arrived."""


class ReplyTimeoutError(OpenEnvGymError, TimeoutError):
    """No reply arrived within the timeout. The session is closed afterwards.

    Attributes:
        url: The session's URL.
        timeout: The timeout in seconds that expired.
    """

    def __init__(self, message: str, *, url: str, timeout: float) -> None:
        super().__init__(message)
        self.url = url
        self.timeout = timeout


class UnsupportedRenderModeError(OpenEnvGymError, ValueError):
    """The requested ``render_mode`` cannot be served by this environment."""


class SessionClosedError(OpenEnvGymError, RuntimeError):
    """The env or session was used after ``close()`` (or after a fatal error)."""


# --------------------------------------------------------------------------- protocol


class ProtocolError(OpenEnvGymError, ValueError):
    """A message did not follow the OpenEnv wire protocol.

    Attributes:
        received: A (possibly shortened) copy of what arrived.
    """

    def __init__(self, message: str, *, received: Any = None) -> None:
        super().__init__(message)
        self.received = received


class SessionFieldError(ProtocolError):
    """An HTTP server's ``POST /step`` requires a body ``field`` that is not the action's (a
    session id such as ``game_id``) and the reset reply did not carry (top level or ``info``)."""

    def __init__(self, message: str, *, field: str, received: Any = None) -> None:
        super().__init__(message, received=received)
        self.field = field


class SharedFileRefusedError(ProtocolError):
    """A shared-memory file (a probe or a server's array file) is not one this process may
    trust: not a regular file (a FIFO, a device, a symbolic link), owned by another user, or
    readable by others than its owner. Nothing was read from it.

    Attributes:
        path: The file refused.
    """

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message, received=path)
        self.path = path


class ServerReplyError(OpenEnvGymError, RuntimeError):
    """The server answered with an OpenEnv ``error`` message.

    Attributes:
        code: The wire error code (``VALIDATION_ERROR``, ``EXECUTION_ERROR``, ...).
        url: The session's URL, when known.
        data: The whole ``data`` object of the error reply.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str,
        url: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.url = url
        self.data = dict(data or {})


class CapacityReachedError(ServerReplyError):
    """The server refused a new session because all its session slots are taken."""


# --------------------------------------------------------------------------- spaces


class SpaceMappingError(OpenEnvGymError, ValueError):
    """A schema field cannot be mapped to a Gymnasium space.

    Attributes:
        field: Dotted path of the field (``"screen"``, ``"board.cells"``).
        schema: The JSON Schema fragment that was seen.
        problems: Every field (action and observation) that cannot be mapped, as
            :class:`~openenv_gym.spaces.problems.MappingProblem` objects; ``()`` when the
            error is about the schema as a whole.
    """

    def __init__(
        self, message: str, *, field: str, schema: Any = None, problems: tuple[Any, ...] = ()
    ) -> None:
        super().__init__(message)
        self.field = field
        self.schema = schema
        self.problems = problems


class CodecError(OpenEnvGymError, ValueError):
    """A value did not fit the space/codec it was encoded or decoded with.

    Attributes:
        field: Dotted path of the offending field, or ``""`` for the whole value.
    """

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.field = field


class ActionOutOfSpaceError(CodecError):
    """An action is not an element of the env's action space; nothing was sent."""


class ObservationMismatchError(CodecError):
    """A server observation does not match the observation space derived from its schema."""


class ActionMaskUnavailableError(OpenEnvGymError, RuntimeError):
    """``action_masks()`` was asked of an env whose observation lists no legal actions (or
    whose action space is not discrete), or before the first ``reset``."""


class EnvNotPicklableError(OpenEnvGymError, TypeError):
    """An env holding a live session was pickled or copied; ship a creator instead."""


class ServerMismatchError(OpenEnvGymError, ValueError):
    """The server runs something other than what the client was configured for (e.g. an
    Atari server playing another game); the message quotes what the server said."""


class ToolCallRefusedError(OpenEnvGymError, ValueError):
    """An MCP tool env refused a tool call (unknown tool, or arguments its schema rejects).

    The session lives on; the call had no effect on the server.

    Attributes:
        tool: The tool that was called.
        argument: The argument the server named (dotted for nested ones), or ``""``.
        error_type: The server's error category (``"invalid_args"``, ``"tool_not_found"``,
            ``"execution_error"``, ...).
        server_message: The server's message, verbatim.
    """

    def __init__(
        self, message: str, *, tool: str, argument: str, error_type: str, server_message: str
    ) -> None:
        super().__init__(message)
        self.tool = tool
        self.argument = argument
        self.error_type = error_type
        self.server_message = server_message


# --------------------------------------------------------------------------- providers


class ServerStartError(OpenEnvGymError, RuntimeError):
    """A provider could not start a server (process or container).

    Attributes:
        log: The tail of the server's output, for diagnosis.
    """

    def __init__(self, message: str, *, log: str = "") -> None:
        super().__init__(message)
        self.log = log


# --------------------------------------------------------------------------- atari, chess, binary


class UnknownEncodingError(OpenEnvGymError, ValueError):
    """``encoding=`` is not one of ``"auto"``, ``"json"``, ``"binary"``."""


class BinaryEncodingRefusedError(ServerConnectionError):
    """``encoding="binary"`` was asked for, but the server did not accept the binary
    subprotocol (an official OpenEnv server, or an older openenv-gym server)."""


class UnknownCompressionError(OpenEnvGymError, ValueError):
    """``compression=`` is not one of ``"auto"``, ``"zstd"``, ``"off"``."""


class CompressedFrameError(ProtocolError):
    """A compressed frame (``OGZ1``) cannot be unpacked: no declared content size, a size
    over the message limit, or a corrupt payload. Nothing was decompressed past the limit."""


class EnvConfigError(OpenEnvGymError, ValueError):
    """An environment option is invalid (unknown game, obs_type, opponent, policy, ...)."""


class UCIEngineNotFoundError(EnvConfigError):
    """The chess ``uci`` opponent was asked for, but no engine executable was found."""


class IllegalMoveError(ActionOutOfSpaceError):
    """A chess move is not legal in the current position (answered ``VALIDATION_ERROR``)."""


# --------------------------------------------------------------------------- vectorization


class VectorUsageError(OpenEnvGymError, ValueError):
    """A vector env was called with arguments it cannot use (seeds, masks, actions, modes)."""


class PoolUsageError(VectorUsageError):
    """An asynchronous pool (``make_pool``) was asked to send for a sub-env that is in flight
    or unknown, or to ``recv()`` more sub-envs than were sent."""


class InsufficientCapacityError(OpenEnvGymError, RuntimeError):
    """The servers cannot take as many sessions as a vector env needs.

    Attributes:
        requested: How many sessions were needed.
        accepted: Per base URL, how many sessions that server accepts (``None``: unknown).
    """

    def __init__(self, message: str, *, requested: int, accepted: dict[str, int | None]) -> None:
        super().__init__(message)
        self.requested = requested
        self.accepted = dict(accepted)


class SubEnvError(ServerConnectionError):
    """One sub-environment of a vector env lost its session (connection closed or timed out).

    The original error is the ``__cause__``.

    Attributes:
        index: The sub-environment's index in the vector env.
        url: The session's URL.
    """

    def __init__(self, message: str, *, index: int, url: str) -> None:
        super().__init__(message, url=url)
        self.index = index


class RenderModeUnavailableError(UnsupportedRenderModeError, TypeError):
    """The requested ``render_mode`` cannot be served; also a ``TypeError``.

    Stable-Baselines3's ``make_vec_env`` first calls ``gym.make(id, render_mode="rgb_array")``
    and retries without it on ``TypeError``, so envs without images still work there.
    """


# --------------------------------------------------------------------------- docker, auth


class DockerUnavailableError(ServerStartError):
    """No Docker engine answers (not installed, not running, or no permission)."""


class ImageNotFoundError(ServerStartError):
    """The Docker image to run does not exist locally (and no registry gave it)."""


class ImageBuildError(OpenEnvGymError, RuntimeError):
    """Building an image (wheelhouse, base image or env image) failed."""


class AuthenticationError(ServerConnectionError, PermissionError):
    """The server refused the bearer token (missing or wrong)."""


# --------------------------------------------------------------------------- wrappers


class WrapperConfigError(OpenEnvGymError, ValueError):
    """A wrapper was configured wrongly (a reward-shaping config, a field name, a file).

    Attributes:
        path: Where in the configuration the problem is (``"terms[2].clip"``), or ``""``.
    """

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class NormalizationStatsError(OpenEnvGymError, ValueError):
    """Saved normalization statistics cannot be loaded or do not fit the env."""


class TrajectoryFormatError(OpenEnvGymError, ValueError):
    """A space cannot be recorded, or a trajectory directory cannot be read back."""


class HubPushError(OpenEnvGymError, RuntimeError):
    """Pushing a trajectory dataset to the Hugging Face Hub failed (offline, no token, ...)."""


# ------------------------------------------------------- serving, packaging, fleets, links


class ServerWorkerError(OpenEnvGymError, RuntimeError):
    """A worker of a ``serve --workers K`` server kept dying (or could not be restarted)."""


class InsecureBindError(OpenEnvGymError, ValueError):
    """A server was asked to listen beyond loopback without a token (or with an empty one)."""


class MissingExtraError(OpenEnvGymError, ImportError):
    """An optional dependency is not installed; the message names the extra to install.

    Raised by :func:`openenv_gym.extras.optional_imports`. It is an ``ImportError``, so code
    that falls back when a package is missing keeps working.

    Attributes:
        module: The top-level module that is missing (``"ale_py"``).
        extra: The openenv-gym extra that installs it (``"atari"``).
    """

    def __init__(self, message: str, *, module: str, extra: str) -> None:
        super().__init__(message, name=module)
        self.module = module
        self.extra = extra


class RayUnavailableError(ServerStartError):
    """Ray is not installed, or not initialised in this process (``ray.init(address=...)``)."""


class FleetConfigError(OpenEnvGymError, ValueError):
    """A fleet (where a vector env's servers run) was configured wrongly."""


class LinkProfileError(OpenEnvGymError, ValueError):
    """A ``--link`` value of the benchmark suite names no profile and is no valid custom link."""


class LinkProxyError(OpenEnvGymError, RuntimeError):
    """The link-emulating proxy of the benchmark suite could not start or reach its target."""


class PortInUseError(ServerStartError):
    """``openenv-gym serve`` cannot bind: another process listens on the host and port."""


# --------------------------------------------------------------------------- multi-agent games


class SeatsUnavailableError(OpenEnvGymError, ValueError):
    """A server cannot seat every player of a multi-agent env: its observations do not say
    whose turn it is, name no players, or name fewer than the env's seats."""


class NotYourTurnError(ActionOutOfSpaceError):
    """A player moved out of turn (answered ``VALIDATION_ERROR`` by a server)."""


class GameOverError(OpenEnvGymError, ValueError):
    """A move was sent after the game ended; reset to play again."""


__all__ = [
    "ActionMaskUnavailableError",
    "ActionOutOfSpaceError",
    "AuthenticationError",
    "BinaryEncodingRefusedError",
    "CapacityReachedError",
    "CodecError",
    "CompressedFrameError",
    "ConnectionLostError",
    "DockerUnavailableError",
    "EnvConfigError",
    "EnvNotPicklableError",
    "FleetConfigError",
    "GameOverError",
    "HubPushError",
    "IllegalMoveError",
    "ImageBuildError",
    "ImageNotFoundError",
    "InsecureBindError",
    "InsufficientCapacityError",
    "LinkProfileError",
    "LinkProxyError",
    "MissingExtraError",
    "NoStateRouteError",
    "NoWebSocketEndpointError",
    "NormalizationStatsError",
    "NotAnOpenEnvServerError",
    "NotYourTurnError",
    "ObservationMismatchError",
    "OpenEnvGymError",
    "PicklableError",
    "PoolUsageError",
    "PortInUseError",
    "ProtocolError",
    "RayUnavailableError",
    "RenderModeUnavailableError",
    "ReplyTimeoutError",
    "SeatsUnavailableError",
    "ServerConnectionError",
    "ServerMismatchError",
    "ServerReplyError",
    "ServerStartError",
    "ServerWorkerError",
    "SessionClosedError",
    "SessionFieldError",
    "SharedFileRefusedError",
    "SpaceMappingError",
    "SubEnvError",
    "ToolCallRefusedError",
    "TrajectoryFormatError",
    "UCIEngineNotFoundError",
    "UnknownCompressionError",
    "UnknownEncodingError",
    "UnsupportedRenderModeError",
    "VectorUsageError",
    "WrapperConfigError",
]
