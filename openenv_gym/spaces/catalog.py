"""Profiles of the official OpenEnv catalog envs whose action sizes no server declares.

maze, connect4, the OpenSpiel games and sumo_rl type their action as a bare ``int``: no
schema bound, no ``action_spec``, no ``num_actions`` (sumo_rl reports its phase count under
its own metadata key, ``num_green_phases``, which only its profile reads). Their sizes are
facts of each env's code in meta-pytorch/OpenEnv (``685de41``), cited in each
:class:`CatalogProfile`. A profile applies
only when the server is that env, by its own identity:

* ``GET /metadata``'s ``name`` (the official package reports the environment's class name);
* a fingerprint of its ``/schema`` (:func:`schema_fingerprint`: every action and observation
  field with its type, which are required, the envelope fields left out);
* for OpenSpiel, the game the server says it plays (the state's ``game_name``, with no
  ``game_params``: the official app passes none).

On any mismatch no profile applies and the mapping refuses as before, naming
``action_field_spaces``. A profile's size is the game's whole action set (OpenSpiel's
``num_distinct_actions``), never the legal actions of one position.

Not sized, and why: snake_env (3 actions with its app's default ``observer="snake"``, 5 with
``observer="human"``; the server says neither, so it is in :data:`UNSIZED`: the refusal quotes
both facts), carla_env
(``route_steps`` is optional and has a default), finrl_env and unity_env (sizes set by the
data or the Unity build).

Example:
    >>> schema = {"action": {"properties": {"action": {"type": "integer"}},
    ...                      "required": ["action"]},
    ...           "observation": {"properties": {"legal_actions": {"type": "array",
    ...               "items": {"type": "integer"}}}}}
    >>> schema_fingerprint(schema)
    'action{action:integer!} observation{legal_actions:array<integer>}'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from openenv_gym.spaces.openapi import follow_refs

#: Fields of the OpenEnv base classes, left out of a fingerprint (they vary by release).
_ENVELOPE: Final = {
    "action": frozenset({"metadata"}),
    "observation": frozenset({"reward", "done", "metadata"}),
}
_REPO: Final = "meta-pytorch/OpenEnv@685de41"


@dataclass(frozen=True)
class CatalogProfile:
    """What one catalog env's code says about its action size.

    Attributes:
        env: The env's folder in the OpenEnv repository, e.g. ``"maze_env"``.
        metadata_name: ``GET /metadata``'s ``name`` for it.
        fingerprint: Its :func:`schema_fingerprint`.
        field: The integer action field the size is for.
        actions: The number of actions (``Discrete(actions)``).
        facts: Where the code says so (file path and what it says).
        game: The OpenSpiel game name the state must report, or ``None``.
        count_key: For an env whose size is its configuration's but which its code reports
            in every observation's ``metadata``: that key (then :attr:`actions` is unused).
    """

    env: str
    metadata_name: str
    fingerprint: str
    field: str
    actions: int
    facts: str
    game: str | None = None
    count_key: str | None = None

    def count_in(self, observation: Mapping[str, Any]) -> int | None:
        """The number of actions for a server whose reset observation is ``observation``:
        :attr:`actions`, or the positive integer its ``metadata`` holds under
        :attr:`count_key` (``None`` when it holds none).

        Example:
            >>> sumo = next(p for p in PROFILES if p.env == "sumo_rl_env")
            >>> sumo.count_in({"metadata": {"num_green_phases": 4}}), sumo.count_in({})
            (4, None)
        """
        if self.count_key is None:
            return self.actions
        metadata = observation.get("metadata")
        value = metadata.get(self.count_key) if isinstance(metadata, Mapping) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        return None

    @property
    def source(self) -> str:
        """How the log of inferred spaces names this profile."""
        game = f" ({self.game})" if self.game else ""
        return f"the catalog profile of {self.env}{game}: {self.facts}"


_MAZE = (
    "action{action:integer!} observation{current_position:array<integer>,"
    "legal_actions:array<integer>,previous_position:array<integer>}"
)
_CONNECT4 = (
    "action{column:integer!} observation{board:array<array<integer>>,legal_actions:array<integer>}"
)
_OPENSPIEL = (
    "action{action_id:integer!,game_name:string,game_params:dict} "
    "observation{current_player_id:integer,game_phase:string,info_state:array<number>!,"
    "legal_actions:array<integer>!,opponent_last_action:integer|null}"
)
_SPIEL_FACTS = (
    f"{_REPO} envs/openspiel_env/README.md, 'Game-Specific Information': "
    "{what}; envs/openspiel_env/server/openspiel_environment.py passes action_id to "
    "OpenSpiel's rl_environment unchanged"
)


def _spiel(game: str, actions: int, what: str) -> CatalogProfile:
    return CatalogProfile(
        "openspiel_env",
        "OpenSpielEnvironment",
        _OPENSPIEL,
        "action_id",
        actions,
        _SPIEL_FACTS.format(what=what),
        game=game,
    )


#: Every profile, by env (OpenSpiel by game).
PROFILES: Final[tuple[CatalogProfile, ...]] = (
    CatalogProfile(
        "maze_env",
        "MazeEnvironment",
        _MAZE,
        "action",
        4,
        f"{_REPO} envs/maze_env/server/maze.py, class Action(IntEnum): MOVE_UP = 0, "
        "MOVE_DOWN = 1, MOVE_LEFT = 2, MOVE_RIGHT = 3",
    ),
    CatalogProfile(
        "connect4_env",
        "Connect4Environment",
        _CONNECT4,
        "column",
        7,
        f"{_REPO} envs/connect4_env/server/connect4_environment.py, "
        "Connect4Environment.COLUMNS = 7 (a column outside 0..6 ends the game as invalid)",
    ),
    _spiel("catch", 3, "Catch, 'Action Space: 3 actions (left, stay, right)'"),
    _spiel("tic_tac_toe", 9, "Tic-Tac-Toe, 'Action Space: 9 positions'"),
    _spiel("kuhn_poker", 2, "Kuhn Poker, 'Action Space: 2 actions (pass/fold, bet/call)'"),
    _spiel("cliff_walking", 4, "Cliff Walking, 'Action Space: 4 actions (up, down, left, right)'"),
    _spiel("2048", 4, "2048, 'Action Space: 4 actions (up, down, left, right)'"),
    _spiel("blackjack", 2, "Blackjack, 'Action Space: 2 actions (HIT, STAND)'"),
    CatalogProfile(
        "sumo_rl_env",
        "SumoEnvironment",
        "action{phase_id:integer!,ts_id:string} observation{action_mask:array<integer>,"
        "observation:array<number>,observation_shape:array<integer>,sim_time:number}",
        "phase_id",
        0,
        f"{_REPO} envs/sumo_rl_env/server/sumo_environment.py: step() refuses a phase_id "
        "outside 0..num_phases-1 (num_phases = the signal's action_space.n) and every "
        "observation's metadata carries 'num_green_phases': num_phases",
        count_key="num_green_phases",
    ),
)


_SNAKE = (
    "action{action:integer!} observation{alive:boolean,episode_fruits:integer,"
    "episode_kills:integer,episode_score:number,episode_steps:integer,"
    "grid:array<array<integer>>!,observation:array<array<array<number>>>!}"
)

#: Catalog envs recognised by their identity whose size the server leaves open: the refusal
#: quotes their facts, and :attr:`CatalogProfile.actions` is the smallest size they may have.
UNSIZED: Final[tuple[CatalogProfile, ...]] = (
    CatalogProfile(
        "snake_env",
        "SnakeEnvironment",
        _SNAKE,
        "action",
        3,
        f"{_REPO} envs/snake_env/models.py, SnakeAction: 'action: int in [0, 1, 2]' for "
        "observer='snake' (the default of envs/snake_env/server/snake_environment.py, which "
        "its server/app.py keeps), 'int in [0, 1, 2, 3, 4]' for observer='human'; the server "
        "says neither, so pass Discrete(3) for its app as shipped, Discrete(5) for "
        "observer='human'",
    ),
)


def schema_fingerprint(schema: Mapping[str, Any]) -> str:
    """The action and observation fields of a ``/schema`` body with their types, sorted,
    ``!`` after required ones; the base classes' envelope fields left out."""
    parts = []
    for role in ("action", "observation"):
        role_schema = schema.get(role)
        if not isinstance(role_schema, Mapping):
            return ""
        parts.append(role + _object_shape(role_schema, role_schema, _ENVELOPE[role], 0))
    return " ".join(parts)


def _object_shape(
    schema: Mapping[str, Any], root: Mapping[str, Any], skip: frozenset[str], depth: int
) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return "{}"
    required = set(schema.get("required") or ())
    fields = [
        f"{name}:{_type_shape(field, root, depth)}{'!' if name in required else ''}"
        for name, field in sorted(properties.items())
        if name not in skip
    ]
    return "{" + ",".join(fields) + "}"


def _type_shape(schema: Any, root: Mapping[str, Any], depth: int) -> str:
    schema = follow_refs(schema, root)
    if schema is None or depth > 8:
        return "?"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return "|".join(_type_shape(branch, root, depth + 1) for branch in schema[key])
    if "enum" in schema or "const" in schema:
        return "enum"
    kind = schema.get("type")
    if kind == "array":
        return f"array<{_type_shape(schema.get('items'), root, depth + 1)}>"
    if kind == "object" and "properties" not in schema:
        return "dict"
    if kind == "object" or "properties" in schema:
        return _object_shape(schema, root, frozenset(), depth + 1)
    return str(kind) if kind is not None else "any"


def match_profile(
    metadata: Mapping[str, Any] | None,
    schema: Mapping[str, Any],
    state: Mapping[str, Any] | None,
    profiles: tuple[CatalogProfile, ...] = PROFILES,
) -> CatalogProfile | None:
    """The profile of the catalog env this server is, or ``None`` on any mismatch.

    Args:
        metadata: ``GET /metadata``'s body (``None`` when the server has none).
        schema: The ``/schema`` body (``action`` and ``observation``).
        state: The session's state (OpenSpiel's names its game there), or ``None``.
        profiles: Where to look: :data:`PROFILES`, or :data:`UNSIZED` for the facts a
            refusal quotes.

    Example:
        >>> empty = {"action": {}, "observation": {}}
        >>> match_profile({"name": "MazeEnvironment"}, empty, None) is None
        True
    """
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if not isinstance(name, str):
        return None
    fingerprint = schema_fingerprint(schema)
    state = state if isinstance(state, Mapping) else {}
    for profile in profiles:
        if profile.metadata_name != name or profile.fingerprint != fingerprint:
            continue
        if profile.game is None:
            return profile
        if state.get("game_name") == profile.game and not state.get("game_params"):
            return profile
    return None


__all__ = ["PROFILES", "UNSIZED", "CatalogProfile", "match_profile", "schema_fingerprint"]
