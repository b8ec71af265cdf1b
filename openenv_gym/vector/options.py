"""The arguments of a vector env, checked; and the env it takes its spaces and server from.

Example:
    >>> check_base_urls("http://127.0.0.1:8000")
    ['http://127.0.0.1:8000']
    >>> check_num_envs(0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    openenv_gym.errors.VectorUsageError: expected num_envs to be a positive int, got 0
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import load_env_creator
from gymnasium.vector import AutoresetMode

from openenv_gym.env import OpenEnvEnv
from openenv_gym.errors import PoolUsageError, VectorUsageError
from openenv_gym.providers import ServerFleet, resolve_fleet, using_fleet
from openenv_gym.wire.encoding import ENCODINGS, EncodingChoice, resolve_encoding


def check_sessions_per_server(
    sessions_per_server: Any, urls: list[str] | None, num_envs: int
) -> int:
    """How many sessions go to each embedded server (``num_envs`` for one server)."""
    if sessions_per_server is None:
        return num_envs
    if urls is not None:
        raise VectorUsageError(
            "sessions_per_server starts embedded servers, but base_url names running ones; "
            "pass one or the other"
        )
    if isinstance(sessions_per_server, bool) or not isinstance(sessions_per_server, int):
        raise VectorUsageError(
            f"expected sessions_per_server to be a positive int, got {sessions_per_server!r}"
        )
    if sessions_per_server < 1:
        raise VectorUsageError(
            f"expected sessions_per_server to be a positive int, got {sessions_per_server}"
        )
    return min(sessions_per_server, num_envs)


def check_fleet(fleet: Any, urls: list[str] | None) -> ServerFleet | None:
    """The fleet that runs the embedded servers (``None``: child processes here)."""
    server_fleet = resolve_fleet(fleet)
    if server_fleet is not None and urls is not None:
        raise VectorUsageError(
            f"fleet={fleet!r} starts servers, but base_url names running ones; pass one or "
            "the other"
        )
    return server_fleet


def check_num_envs(num_envs: Any) -> int:
    if isinstance(num_envs, bool) or not isinstance(num_envs, int | np.integer) or num_envs < 1:
        raise VectorUsageError(f"expected num_envs to be a positive int, got {num_envs!r}")
    return int(num_envs)


def check_base_urls(base_url: str | Sequence[str] | None) -> list[str] | None:
    if base_url is None:
        return None
    if isinstance(base_url, str):
        return [base_url]
    urls = list(base_url)
    if not urls or not all(isinstance(u, str) for u in urls):
        raise VectorUsageError(
            f"expected base_url to be a URL or a non-empty list of URLs, got {base_url!r}"
        )
    return urls


def check_server_given(urls: list[str] | None, id: str | None) -> None:
    """A vector env needs running servers (``base_url``) or an id that starts one."""
    if urls is None and id is None:
        raise VectorUsageError(
            "no server given: pass base_url='http://HOST:PORT' (or a list of URLs), or an "
            "id that starts an embedded server such as 'openenv/CartPole-v1'"
        )


def check_encoding(encoding: Any) -> EncodingChoice:
    """What ``encoding=`` asks for (:func:`~openenv_gym.wire.encoding.resolve_encoding`).

    Raises:
        VectorUsageError: It is not one of :data:`~openenv_gym.wire.encoding.ENCODINGS`.
    """
    if encoding not in ENCODINGS:
        raise VectorUsageError(
            f"expected encoding to be one of {list(ENCODINGS)}, got {encoding!r}"
        )
    return resolve_encoding(encoding)


def check_autoreset_mode(autoreset_mode: Any) -> AutoresetMode:
    """The :class:`~gymnasium.vector.AutoresetMode` named by ``autoreset_mode``."""
    try:
        return AutoresetMode(autoreset_mode)
    except ValueError:
        raise VectorUsageError(
            f"expected autoreset_mode to be one of {[m.value for m in AutoresetMode]}, "
            f"got {autoreset_mode!r}"
        ) from None


def check_max_episode_steps(max_episode_steps: int | None) -> None:
    """A client-side time limit is ``None`` or at least one step."""
    if max_episode_steps is not None and max_episode_steps < 1:
        raise VectorUsageError(f"expected max_episode_steps >= 1, got {max_episode_steps}")


@dataclass(frozen=True)
class SubEnvSpec:
    """The checked arguments the vector env and the pool both open their sub-envs with
    (:func:`check_sub_envs`)."""

    #: The registered id (``None``: any server at ``urls``).
    id: str | None
    num_envs: int
    #: The servers given, or ``None`` (embedded servers).
    urls: list[str] | None
    #: What ``encoding=`` says, and what it asks of connections.
    encoding: str
    choice: EncodingChoice
    max_episode_steps: int | None


def check_sub_envs(
    id: str | None,
    num_envs: Any,
    base_url: str | Sequence[str] | None,
    encoding: Any,
    max_episode_steps: int | None,
) -> SubEnvSpec:
    """The arguments every vector env and pool takes, checked.

    Example:
        >>> spec = check_sub_envs(None, 2, "http://127.0.0.1:8000", "auto", None)
        >>> spec.num_envs, spec.urls
        (2, ['http://127.0.0.1:8000'])

    Raises:
        VectorUsageError: One of them is invalid, or neither ``base_url`` nor ``id`` names a
            server.
    """
    num_envs = check_num_envs(num_envs)
    urls = check_base_urls(base_url)
    check_server_given(urls, id)
    choice = check_encoding(encoding)
    check_max_episode_steps(max_episode_steps)
    return SubEnvSpec(id, num_envs, urls, encoding, choice, max_episode_steps)


def spread_over(urls: Sequence[str], num_envs: int) -> dict[str, int]:
    """How many of ``num_envs`` sessions each server gets, spread round-robin.

    Example:
        >>> spread_over(["http://a/", "http://b"], 3)
        {'http://a': 2, 'http://b': 1}
    """
    needed: dict[str, int] = {}
    for i in range(num_envs):
        url = urls[i % len(urls)].rstrip("/")
        needed[url] = needed.get(url, 0) + 1
    return needed


def check_batch_size(batch_size: Any, num_envs: int) -> int:
    """A pool's ``batch_size``: ``None`` means ``num_envs`` (synchronous).

    Example:
        >>> check_batch_size(None, 8), check_batch_size(4, 8)
        (8, 4)
    """
    if batch_size is None:
        return num_envs
    if isinstance(batch_size, bool) or not isinstance(batch_size, int | np.integer):
        raise PoolUsageError(f"expected batch_size to be an int or None, got {batch_size!r}")
    if not 1 <= batch_size <= num_envs:
        raise PoolUsageError(
            f"expected 1 <= batch_size <= num_envs={num_envs}, got batch_size={batch_size}"
        )
    return int(batch_size)


def check_env_ids(env_id: Any, num_envs: int) -> list[int]:
    """A pool's ``env_id`` (``None``: every sub-env) as a list of distinct sub-env indices.

    Example:
        >>> check_env_ids(np.array([3, 1]), 4)
        [3, 1]
    """
    if env_id is None:
        return list(range(num_envs))
    array = np.asarray(env_id)
    if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
        raise PoolUsageError(
            f"expected env_id to be a 1-D array of sub-env indices (ints), got {env_id!r}; "
            "pass info['env_id'] of the last recv()"
        )
    ids: list[int] = array.tolist()
    unknown = [i for i in ids if not 0 <= i < num_envs]
    if unknown:
        raise PoolUsageError(
            f"env_id names sub-envs {unknown}, but the pool has sub-envs 0..{num_envs - 1}"
        )
    if len(set(ids)) != len(ids):
        raise PoolUsageError(f"env_id names a sub-env twice: {ids}")
    return ids


def make_template(
    id: str | None,
    urls: list[str] | None,
    env_kwargs: Mapping[str, Any],
    encoding: str,
    server_fleet: ServerFleet | None = None,
) -> OpenEnvEnv:
    """The env (made without a session) whose spaces, options and server the vector env
    takes: ``gymnasium.make(id, open_session=False, ...)``, or an
    :class:`~openenv_gym.env.OpenEnvEnv` for ``id=None``. Its embedded server starts on
    ``server_fleet`` (``None``: here)."""
    kwargs = dict(env_kwargs)
    kwargs["open_session"] = False
    if id is None or id.rpartition(":")[2].startswith("openenv/"):
        kwargs["encoding"] = encoding
    if urls is not None:
        kwargs["base_url"] = urls[0]
    if id is None:
        return OpenEnvEnv(**kwargs)
    if urls is None and "workers" not in kwargs and accepts_parameter(id, "workers"):
        kwargs["workers"] = "auto"  # the embedded server: one process per core
    try:
        with using_fleet(server_fleet):
            env = gym.make(id, disable_env_checker=True, **kwargs)
    except TypeError as exc:
        raise VectorUsageError(
            f"expected {id!r} to make an OpenEnvEnv (an openenv/... id); making it failed: {exc}"
        ) from exc
    unwrapped = env.unwrapped
    if not isinstance(unwrapped, OpenEnvEnv):
        env.close()
        raise VectorUsageError(
            f"expected {id!r} to make an OpenEnvEnv (an openenv/... id), got "
            f"{type(unwrapped).__name__}; use gymnasium.make_vec for other envs"
        )
    # Wrappers of the single env do not apply: the vector env only takes its spaces and server.
    return unwrapped


def accepts_parameter(id: str, parameter: str) -> bool:
    """Whether the entry point of ``id`` takes ``parameter`` (e.g. ``workers``)."""
    try:
        entry_point = gym.spec(id).entry_point
        creator = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
        return creator is not None and parameter in inspect.signature(creator).parameters
    except (gym.error.Error, TypeError, ValueError, ImportError, AttributeError):
        return False


def seeds_for(seed: int | Sequence[int | None] | None, num_envs: int) -> list[int | None]:
    """One seed per sub-env: ``None``; ``seed + i`` for an int; or the given list.

    Raises:
        VectorUsageError: A list of the wrong length, or not a seed.
    """
    if seed is None:
        return [None] * num_envs
    if isinstance(seed, int | np.integer) and not isinstance(seed, bool):
        return [int(seed) + i for i in range(num_envs)]
    if isinstance(seed, Sequence) and not isinstance(seed, str):
        if len(seed) != num_envs:
            raise VectorUsageError(
                f"expected one seed per sub-env ({num_envs}), got {len(seed)} seeds"
            )
        return [None if s is None else int(s) for s in seed]
    raise VectorUsageError(
        f"expected seed to be None, an int or a list of {num_envs} ints, got {seed!r}"
    )


def check_reset_mask(mask: Any, num_envs: int) -> np.ndarray | None:
    """``options["reset_mask"]``: ``None``, or a bool array of shape ``(num_envs,)``.

    Raises:
        VectorUsageError: Another shape or dtype, or no sub-env selected.
    """
    if mask is None:
        return None
    if not (isinstance(mask, np.ndarray) and mask.dtype == np.bool_ and mask.shape == (num_envs,)):
        raise VectorUsageError(
            f"expected options['reset_mask'] to be a numpy bool array of shape ({num_envs},), "
            f"got {mask!r}"
        )
    if not mask.any():
        raise VectorUsageError("options['reset_mask'] selects no sub-env; set at least one")
    return mask


__all__ = [
    "SubEnvSpec",
    "accepts_parameter",
    "check_autoreset_mode",
    "check_base_urls",
    "check_batch_size",
    "check_encoding",
    "check_env_ids",
    "check_max_episode_steps",
    "check_num_envs",
    "check_reset_mask",
    "check_server_given",
    "check_sessions_per_server",
    "check_sub_envs",
    "make_template",
    "seeds_for",
    "spread_over",
]
