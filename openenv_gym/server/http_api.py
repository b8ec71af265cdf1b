"""The official OpenEnv HTTP API: ``POST /reset``, ``POST /step``, ``GET /state``.

The official server answers these without a session: every request builds a fresh
environment, runs one call on it and closes it (episodes are played over ``/ws``). This
module answers them the same way, independent of the HTTP stack: each handler takes the
request body (bytes) and returns ``(status, JSON body)``; the server's routing runs it in
a worker thread (environments may be slow to build) and writes the response.

* ``POST /reset`` ``{"seed"?: int >= 0, "episode_id"?: str, ...}`` (an empty body is ``{}``)
  -> 200 ``{"observation": {...}, "reward": null, "done": false, "metadata"?: {...}}``;
  keys ``reset`` does not accept are dropped, as the official server does.
* ``POST /step`` ``{"action": {...}, "timeout_s"?: float, "request_id"?: str}``
  -> 200 the same shape; an action that fails validation -> 422 ``{"detail": [errors]}``.
* ``GET /state`` -> 200 the state of a fresh environment.
* A body that is not a JSON object -> 422 ``{"detail": ...}``; the environment raising
  -> 500 ``{"detail": "<Type>: <message>"}``.

Example:
    >>> from openenv_gym.envs.gymnasium import GymnasiumEnvironment
    >>> api = HttpEnvApi(lambda: GymnasiumEnvironment("CartPole-v1"),
    ...                  action_type=GymnasiumEnvironment("CartPole-v1").action_model)
    >>> status, body = api.reset(b'{"seed": 0}')
    >>> status, sorted(body), body["done"]
    (200, ['done', 'observation', 'reward'], False)
    >>> api.step(b'{"action": {"action": 7}}')[0]
    422
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from openenv_gym.errors import CodecError
from openenv_gym.server.session import serialize_observation
from openenv_gym.wire.messages import encode_json

logger = logging.getLogger("openenv_gym.server")

#: The paths and methods of the official HTTP API.
RESET_PATH: Final = "/reset"
STEP_PATH: Final = "/step"

Reply = tuple[int, Any]


def _json_object(body: bytes) -> dict[str, Any] | Reply:
    if not body.strip():
        return {}
    try:
        value = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return 422, {"detail": f"the body is not JSON: {exc}"}
    if not isinstance(value, dict):
        return 422, {"detail": f"expected a JSON object, got {type(value).__name__}"}
    return value


def _accepted(method: Callable[..., Any], data: dict[str, Any], skip: frozenset[str]) -> Any:
    """The keys of ``data`` that ``method`` accepts (all with ``**kwargs``)."""
    try:
        parameters = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return {k: v for k, v in data.items() if k not in skip}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return {k: v for k, v in data.items() if k not in skip}
    return {k: v for k, v in data.items() if k in parameters and k not in skip}


def observation_body(observation: Any) -> dict[str, Any]:
    """``{"observation", "reward", "done", "metadata"?}`` as the official server sends."""
    body = serialize_observation(observation)["data"]
    return json.loads(encode_json(body))  # numpy values as lists; fails here, not mid-response


class HttpEnvApi:
    """Answers the official HTTP API for one environment class.

    Args:
        env_factory: Builds a fresh environment for every request.
        action_type: The pydantic model ``POST /step``'s ``action`` is validated with.
    """

    def __init__(
        self,
        env_factory: Callable[[], Any],
        *,
        action_type: type[BaseModel],
    ) -> None:
        self._env_factory = env_factory
        self._action_type = action_type

    def reset(self, body: bytes) -> Reply:
        """``POST /reset``."""
        data = _json_object(body)
        if isinstance(data, tuple):
            return data
        seed = data.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            return 422, {"detail": f"seed must be an integer >= 0 or null, got {seed!r}"}
        return self._run(lambda env: env.reset(**_accepted(env.reset, data, frozenset())))

    def step(self, body: bytes) -> Reply:
        """``POST /step``."""
        data = _json_object(body)
        if isinstance(data, tuple):
            return data
        if not isinstance(data.get("action"), dict):
            return 422, {"detail": "expected {'action': {...fields of the action...}}"}
        try:
            action = self._action_type.model_validate(data["action"])
        except ValidationError as exc:
            return 422, {"detail": json.loads(exc.json(include_url=False))}
        extra = {k: v for k, v in data.items() if k != "action"}
        return self._run(
            lambda env: env.step(action, **_accepted(env.step, extra, frozenset({"action"})))
        )

    def _run(self, call: Callable[[Any], Any]) -> Reply:
        env = self._env_factory()
        try:
            return 200, observation_body(call(env))
        except CodecError as exc:
            return 422, {"detail": str(exc)}
        except Exception as exc:
            logger.warning("HTTP call on %s failed", type(env).__name__, exc_info=True)
            return 500, {"detail": f"{type(exc).__name__}: {exc}"}
        finally:
            close = getattr(env, "close", None)
            if callable(close):
                close()


__all__ = ["RESET_PATH", "STEP_PATH", "HttpEnvApi", "observation_body"]
