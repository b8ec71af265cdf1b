"""What went wrong while mapping a schema, and the exact keyword arguments that fix it.

The schema walker (:mod:`openenv_gym.spaces.schema`) collects one :class:`MappingProblem`
per field it cannot map, for the action and the observation alike; the caller turns them
into one :class:`~openenv_gym.errors.SpaceMappingError` whose message lists every field and
the call to paste. The keyword names depend on who is called: the codec functions take
``field_spaces=``, ``field_shapes=``, ``exclude=``, ``include=``
(:data:`CODEC_KEYWORDS`); :class:`~openenv_gym.env.OpenEnvEnv` and ``gym.make`` take
``action_field_spaces=``, ``observation_exclude=``, ... (:data:`ENV_KEYWORDS`).

While it walks, a field that does not map raises :class:`UnmappableFieldError` (collected
into a :class:`MappingProblem`), and one without a fixed shape :class:`VariableFieldError`
(it goes to ``info``); both are internal.

Example:
    >>> problem = MappingProblem(
    ...     "action", "action_id", "an unbounded integer", {"type": "integer"},
    ...     fixes=(("field_spaces", "gymnasium.spaces.Discrete(n)"),),
    ... )
    >>> print(format_problems([problem], ENV_KEYWORDS, call="OpenEnvEnv(url, {kwargs})"))
    ... # doctest: +NORMALIZE_WHITESPACE
    cannot map 1 field of the server's schema to a Gymnasium space:
      - action field 'action_id': an unbounded integer. JSON Schema seen: {"type": "integer"}.
        Fix: action_field_spaces={'action_id': gymnasium.spaces.Discrete(n)}
    Paste and edit: OpenEnvEnv(url, action_field_spaces={'action_id':
    gymnasium.spaces.Discrete(n)})
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from openenv_gym.errors import PicklableError

Role = Literal["observation", "action"]
#: The kinds of fix a problem can suggest (the codec-level keyword names).
Option = Literal["field_spaces", "field_shapes", "exclude", "include"]

#: Keyword names of :func:`~openenv_gym.spaces.observation_codec` / ``action_codec``.
CODEC_KEYWORDS: Final[Mapping[tuple[Role, Option], str]] = {
    (role, option): option
    for role in ("observation", "action")
    for option in ("field_spaces", "field_shapes", "exclude", "include")
}
#: Keyword names of :class:`~openenv_gym.env.OpenEnvEnv` (and so of ``gym.make``).
ENV_KEYWORDS: Final[Mapping[tuple[Role, Option], str]] = {
    ("observation", "field_spaces"): "observation_field_spaces",
    ("observation", "field_shapes"): "observation_field_shapes",
    ("observation", "exclude"): "observation_exclude",
    ("observation", "include"): "observation_exclude",  # never suggested
    ("action", "field_spaces"): "action_field_spaces",
    ("action", "field_shapes"): "action_field_shapes",
    ("action", "include"): "action_include",
    ("action", "exclude"): "action_include",  # never suggested
}


@dataclass(frozen=True)
class MappingProblem:
    """One field that cannot be mapped (or one option that names no field).

    Attributes:
        role: ``"action"`` or ``"observation"``.
        path: Dotted field path (``""`` for the whole schema).
        reason: What is wrong, in words.
        fragment: The JSON Schema fragment seen.
        fixes: ``(option, value expression)`` pairs, best first: each is one way out, e.g.
            ``("field_shapes", "(n,)")`` or ``("exclude", "")``.
        needs_data: The field's space could be taken from the data (a reset observation or
            the state) had there been any.
        option: For a misspelt option: the option (its message names it as the caller
            spells it); ``None`` for a field problem.
        observed: The fixes hold values seen in the data (a reset observation), not declared
            by the server: a sample, labelled "observed" where printed.
    """

    role: Role
    path: str
    reason: str
    fragment: Any = None
    fixes: tuple[tuple[Option, str], ...] = ()
    needs_data: bool = field(default=False, compare=False)
    option: Option | None = None
    observed: bool = field(default=False, compare=False)


#: A name left for the user to fill in a suggested value (``Discrete(n)``, ``Box(low, high,
#: shape, dtype)``, ``Dict({key: space, ...})``): the call is to edit, not to paste.
PLACEHOLDER: Final = re.compile(
    r"(?<![.\w'\"])(n|nvec|low|high|shape|dtype|key|space)(?![\w('\"=])|\.\.\."
)


def paste_label(problems: Sequence[MappingProblem], kwargs: str) -> str:
    """How the line to paste is introduced: ``Paste and edit`` while a placeholder is left,
    ``Paste (observed ...)`` when the values were seen in the data.

    Example:
        >>> paste_label([], "action_field_spaces={'a': gymnasium.spaces.Discrete(n)}")
        'Paste and edit'
        >>> paste_label([], "observation_exclude=['x', 'n', 'key']")
        'Paste'
    """
    if PLACEHOLDER.search(kwargs):
        return "Paste and edit"
    if any(p.observed for p in problems):
        return "Paste (observed at one reset, not declared; the game may allow more)"
    return "Paste"


def fragment_text(fragment: Any) -> str:
    """The schema fragment as short JSON (cut at 400 characters)."""
    try:
        text = json.dumps(fragment, sort_keys=False, default=str)
    except (TypeError, ValueError):
        text = repr(fragment)
    return text if len(text) <= 400 else text[:400] + " ..."


def keyword_argument(
    problem: MappingProblem, option: Option, value: str, keywords: Mapping[tuple[Role, Option], str]
) -> str:
    """One fix as a keyword argument: ``observation_exclude=['x']``."""
    name = keywords[(problem.role, option)]
    if option in ("exclude", "include"):
        return f"{name}=[{problem.path!r}]"
    return f"{name}={{{problem.path!r}: {value}}}"


def combined_kwargs(
    problems: Sequence[MappingProblem],
    keywords: Mapping[tuple[Role, Option], str],
    given: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """The first fix of every problem, merged into one keyword-argument list with the
    options already ``given`` (keyword -> its items as source: ``"'x': (3,)"`` for a dict,
    ``"'x'"`` for a list), so that the call holds everything the env needs.

    Example:
        >>> problem = MappingProblem("observation", "b", "unmappable", fixes=(("exclude", ""),))
        >>> combined_kwargs([problem], ENV_KEYWORDS, {"observation_exclude": ["'a'"]})
        "observation_exclude=['a', 'b']"
    """
    dicts: dict[str, list[str]] = {}
    lists: dict[str, list[str]] = {}
    for name, items in (given or {}).items():
        (dicts if name.endswith(("field_spaces", "field_shapes")) else lists)[name] = list(items)
    for problem in problems:
        if not problem.fixes or not problem.path:
            continue
        option, value = problem.fixes[0]
        name = keywords[(problem.role, option)]
        if option in ("exclude", "include"):
            if repr(problem.path) not in lists.setdefault(name, []):
                lists[name].append(repr(problem.path))
        else:
            key = f"{problem.path!r}: "
            items = [i for i in dicts.setdefault(name, []) if not i.startswith(key)]
            dicts[name] = [*items, key + value]
    parts = [f"{name}={{{', '.join(items)}}}" for name, items in dicts.items()]
    parts += [f"{name}=[{', '.join(items)}]" for name, items in lists.items()]
    return ", ".join(parts)


def format_problems(
    problems: Sequence[MappingProblem],
    keywords: Mapping[tuple[Role, Option], str],
    *,
    call: str = "",
    given: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """The message of one error for all ``problems``.

    Args:
        problems: Every problem found, action and observation alike.
        keywords: How the options are spelled for this caller.
        call: A template with ``{kwargs}`` for the line to paste (e.g.
            ``gym.make('openenv/Remote-v0', base_url=..., {kwargs})``); ``""``: no such line.
        given: The options the caller already passed, as :func:`combined_kwargs` takes
            them: the line to paste keeps them.
    """
    count = len(problems)
    noun = "field" if count == 1 else "fields"
    space = "a Gymnasium space" if count == 1 else "Gymnasium spaces"
    lines = [f"cannot map {count} {noun} of the server's schema to {space}:"]
    for problem in problems:
        if problem.option is not None:
            text = f"  - {keywords[(problem.role, problem.option)]} {problem.reason}."
        else:
            where = f"{problem.role} field {problem.path!r}" if problem.path else problem.role
            text = f"  - {where}: {problem.reason}."
        if problem.fragment is not None:
            text += f" JSON Schema seen: {fragment_text(problem.fragment)}."
        lines.append(text)
        if problem.fixes and problem.path:
            ways = [keyword_argument(problem, o, v, keywords) for o, v in problem.fixes]
            label = " (observed, not declared)" if problem.observed else ""
            lines.append(f"    Fix{label}: " + "  or  ".join(ways))
    kwargs = combined_kwargs(problems, keywords, given)
    if call and kwargs:
        lines.append(f"{paste_label(problems, kwargs)}: " + call.format(kwargs=kwargs))
    return "\n".join(lines)


class UnmappableFieldError(PicklableError):
    """Internal: one field could not be mapped (collected, then raised as one error).

    ``example`` is a space expression for the advice (``field_spaces={path: example}``);
    ``also`` is one more way out, appended to the advice; ``space_fix=False`` when no
    explicit space would help (only leaving the field out does); ``observed`` when
    ``example`` holds values seen in the data, not declared by the server.
    """

    def __init__(
        self,
        path: str,
        reason: str,
        fragment: Any,
        *,
        example: str = "",
        also: str = "",
        shape_fix: bool = False,
        needs_data: bool = False,
        space_fix: bool = True,
        observed: bool = False,
    ) -> None:
        super().__init__(reason)
        self.space_fix = space_fix
        self.path = path
        self.reason = reason
        self.fragment = fragment
        self.example = example
        self.also = also
        self.shape_fix = shape_fix
        self.needs_data = needs_data
        self.observed = observed


class VariableFieldError(PicklableError):
    """Internal: an observation field without a fixed shape; it goes to ``info``."""

    def __init__(self, path: str, why: str, *, legal: bool = False) -> None:
        super().__init__(why)
        self.path = path
        self.why = why
        self.legal = legal


def observed_discrete(legal: list[int] | None) -> str:
    """The ``Discrete`` that holds every legal action seen (from 0 when none is negative),
    as source; ``Discrete(n)`` when none was seen.

    Example:
        >>> observed_discrete([0, 1, 3]), observed_discrete([-1, 2]), observed_discrete(None)
        ('gymnasium.spaces.Discrete(4)', 'gymnasium.spaces.Discrete(4, start=-1)', \
'gymnasium.spaces.Discrete(n)')
    """
    if legal is None:
        return "gymnasium.spaces.Discrete(n)"
    low = min(0, min(legal))
    start = f", start={low}" if low else ""
    return f"gymnasium.spaces.Discrete({max(legal) - low + 1}{start})"


__all__ = [
    "CODEC_KEYWORDS",
    "ENV_KEYWORDS",
    "MappingProblem",
    "Option",
    "Role",
    "UnmappableFieldError",
    "VariableFieldError",
    "combined_kwargs",
    "format_problems",
    "fragment_text",
    "keyword_argument",
    "observed_discrete",
    "paste_label",
]
