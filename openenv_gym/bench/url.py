"""``openenv-gym bench --url URL``: measure a running OpenEnv server, ours or an official one.

What runs:

* one session, N=1: our ``OpenEnvEnv`` and, when the ``openenv`` package is installed, the
  official client's ``.sync()`` wrapper: latency percentiles and steps/s;
* at every N the server holds (``GET /capacity`` on our servers; official servers are asked
  by opening the sessions, and take one unless their env declares more): our vector env
  and the official client's asyncio gather;
* next to them, when the server names a registered Gymnasium id in ``GET /metadata`` (our
  gymnasium server does) or ``--gym-id`` gives one: raw Gymnasium and ``SyncVectorEnv`` /
  ``AsyncVectorEnv`` at the same N, in this process.

Actions are seeded random samples of the action space derived from ``GET /schema``.

Example:
    >>> capped_sizes([1, 2, 4, 8, 16], capacity=6)
    [1, 2, 4, 6]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import gymnasium as gym
from gymnasium.vector.utils import batch_space

from openenv_gym.bench.local import (
    gym_vector_driver,
    register_env_module,
    single_env_driver,
    vector_env_driver,
)
from openenv_gym.bench.measure import ActionStream, Driver
from openenv_gym.bench.remote import (
    OfficialGatherDriver,
    official_sync_driver,
    ours_vector,
)
from openenv_gym.bench.runner import Group, PlannedCell
from openenv_gym.errors import InsufficientCapacityError, NotAnOpenEnvServerError

#: Pre-drawn action rows per cell.
ROWS = 256


@dataclass
class ServerInfo:
    """What the server told about itself.

    Attributes:
        url: Its base URL.
        name: ``GET /metadata``'s name (``""`` when it has none).
        gym_id: The Gymnasium id for the raw anchors, or ``None``.
        action_space: The action space derived from ``GET /schema``.
        encode: An action of that space -> the wire action dict.
        capacity: Sessions it holds (``None``: at least as many as were asked for).
        notes: Remarks for the report.
    """

    url: str
    name: str
    gym_id: str | None
    action_space: gym.Space[Any]
    encode: Callable[[Any], dict[str, Any]]
    capacity: int | None
    notes: list[str]


def capped_sizes(sizes: Sequence[int], capacity: int | None) -> list[int]:
    """The N values up to ``capacity``, plus ``capacity`` itself when a larger N was asked."""
    if capacity is None:
        return list(sizes)
    kept = [n for n in sizes if n <= capacity]
    if capacity >= 1 and any(n > capacity for n in sizes) and capacity not in kept:
        kept.append(capacity)
    return kept


def registered_gym_id(name: str) -> str | None:
    """``name`` when it is a registered Gymnasium id (ALE ids register ale-py first)."""
    if not name or name.startswith("openenv/"):
        return None
    if name.startswith("ALE/"):
        try:
            register_env_module("ale_py")
        except ImportError:
            return None
    return name if name in gym.registry else None


def _capacity(url: str, token: str | None, largest: int) -> int | None:
    from openenv_gym.client.capacity import fetch_capacity

    known = fetch_capacity(url, token=token)
    if known.free is not None:
        return known.free
    try:  # an official server: open the sessions and see how many it takes
        ours_vector(None, largest, [url], "auto", token=token).close()
    except InsufficientCapacityError as exc:
        return exc.accepted.get(url) or 0
    return None


def probe(url: str, token: str | None, gym_id: str | None, largest: int) -> ServerInfo:
    """Ask the server for its metadata, schema and capacity.

    Raises:
        ServerConnectionError: The server cannot be reached.
        AuthenticationError: The token was refused.
    """
    from openenv_gym.client.http import get_json
    from openenv_gym.spaces import action_codec

    notes: list[str] = []
    try:
        metadata = get_json(url, "/metadata", token=token)
    except NotAnOpenEnvServerError:
        metadata = {}
    name = str(metadata.get("name") or "") if isinstance(metadata, dict) else ""
    schema = get_json(url, "/schema", token=token)
    codec = action_codec(schema["action"])
    if gym_id is not None and registered_gym_id(gym_id) is None:
        raise ValueError(
            f"--gym-id {gym_id!r} is not a registered Gymnasium id here (ALE ids need "
            "pip install 'openenv-gym[atari]'); pass one gymnasium.make accepts, e.g. "
            "--gym-id CartPole-v1"
        )
    if gym_id is None:
        gym_id = registered_gym_id(name)
        if gym_id is None:
            notes.append(
                f"the server's metadata names {name or 'no env'!r}, not a Gymnasium id: no raw "
                "Gymnasium anchors (give one with --gym-id)"
            )
    capacity = _capacity(url, token, largest)
    if capacity is not None:
        notes.append(f"the server holds {capacity} session(s) now: N up to {capacity}")
    return ServerInfo(url, name, gym_id, codec.space, codec.encode, capacity, notes)


def _sampled(space: gym.Space[Any], transform: Callable[[Any], Any] = lambda a: a) -> ActionStream:
    space.seed(0)
    return ActionStream.sampled(lambda: transform(space.sample()), ROWS)


def _raw_space(gym_id: str) -> gym.Space[Any]:
    env = gym.make(gym_id)
    try:
        return env.action_space
    finally:
        env.close()


def plan(
    info: ServerInfo, sizes: Sequence[int], token: str | None, contenders: Sequence[str] | None
) -> list[Group]:
    """The cells for a server described by :func:`probe`, in one group (the suite's
    contenders' labels; ``ours-vector`` runs for ``--contenders ours-json`` or ``ours-binary``)."""
    from openenv_gym.bench.contenders import CONTENDERS

    labels = {c.key: c.label for c in CONTENDERS} | {"ours-vector": "ours vector"}
    headers = {"Authorization": f"Bearer {token}"} if token else None
    wanted = set(contenders) if contenders is not None else None
    space, gym_id = info.action_space, info.gym_id
    requires = "ale_py" if gym_id and gym_id.startswith("ALE/") else None
    raw_space = _raw_space(gym_id) if gym_id else None
    cells: list[PlannedCell] = []

    def add(
        key: str, n: int, open_: Callable[[], Driver], rows: Callable[[], ActionStream]
    ) -> None:
        keys = {key, "ours-json", "ours-binary"} if key == "ours-vector" else {key}
        if wanted is None or keys & wanted:
            label = f"gymnasium {gym_id} (raw, 1 env)" if key == "raw" else labels[key]
            cells.append(PlannedCell(info.name or info.url, key, label, n, open_, rows))

    def official_rows(n: int) -> Callable[[], ActionStream]:
        def rows() -> ActionStream:
            space.seed(0)
            return ActionStream.sampled(
                lambda: [info.encode(space.sample()) for _ in range(n)], ROWS
            )

        return rows

    def first(row: Any) -> Any:
        return row[0]

    def one_row(action: Any) -> list[Any]:
        return [action]

    def open_single(id: str, **kwargs: Any) -> Driver:
        import openenv_gym  # noqa: F401  (registers the ids)

        return single_env_driver(gym.make(id, **kwargs), pick=first)

    def open_ours_vector(n: int) -> Driver:
        return vector_env_driver(ours_vector(None, n, [info.url], "auto", token=token))

    if gym_id and raw_space is not None:
        add("raw", 1, partial(open_single, gym_id), partial(_sampled, raw_space, one_row))
    open_official_sync = partial(official_sync_driver, info.url, first, headers)
    add("official-sync", 1, open_official_sync, official_rows(1))
    open_ours_env = partial(open_single, "openenv/Remote-v0", base_url=info.url, token=token)
    add("ours-env", 1, open_ours_env, partial(_sampled, space, one_row))
    for n in capped_sizes(sizes, info.capacity):
        if gym_id and raw_space is not None:
            for key, cls in (
                ("sync", gym.vector.SyncVectorEnv),
                ("async", gym.vector.AsyncVectorEnv),
            ):
                opener = partial(gym_vector_driver, cls, gym_id, n, None, requires)
                add(key, n, opener, partial(_sampled, batch_space(raw_space, n)))
        official = partial(OfficialGatherDriver, [info.url], n, first, headers)
        add("official", n, official, official_rows(n))
        add(
            "ours-vector", n, partial(open_ours_vector, n), partial(_sampled, batch_space(space, n))
        )
    return [Group(cells, notes=list(info.notes))]
