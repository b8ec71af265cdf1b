"""What ``openenv-gym check`` finds about a server rather than about the mapping.

A :class:`CheckResult` is one line of the report. :func:`randomness` probes the server's
own randomness, reported as *server findings*: they never fail the check, and the text and
``--json`` reports say the same (both render one run's findings).

Example:
    >>> finding("seeding", 0).summary
    'the server ignores reset(seed=): two resets with seed=0 gave different observations'
    >>> bool(DETERMINISM.search("Deterministic step observations are not equivalent"))
    True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
from gymnasium import spaces

#: How often :func:`randomness` repeats each comparison before it calls a server
#: deterministic.
RANDOMNESS_TRIES: Final = 3
#: Gymnasium's determinism failures (``check_env``): the server's randomness, not a FAIL.
DETERMINISM = re.compile(r"non-deterministic|Deterministic step")


@dataclass
class CheckResult:
    """One line of the report: a check's name, outcome and details. A *note* passed but
    says something is absent that the env does not need (a server with no ``/metadata``)."""

    name: str
    ok: bool
    summary: str
    details: list[str] = field(default_factory=list)
    note: bool = False


def finding(name: str, seed: int) -> CheckResult:
    """The server finding ``seeding`` or ``stepping`` (see :func:`randomness`)."""
    summary = (
        f"the server ignores reset(seed=): two resets with seed={seed} gave different observations"
        if name == "seeding"
        else f"the server steps at random: after reset(seed={seed}) the same action gave "
        "different steps (a random opponent, or dynamics the seed does not reach)"
    )
    return CheckResult(
        name,
        False,
        summary,
        [
            "a property of the server, not of the mapping: Gymnasium's determinism check "
            "fails on it and no keyword changes that; check_env stops there"
        ],
    )


def randomness(env: Any, seed: int) -> list[CheckResult]:
    """The server's own randomness, as server findings (no mapping keyword changes it).

    ``seeding``: two resets with the same seed gave different observations (the server
    ignores ``reset(seed=)``). ``stepping``: resets with the same seed agree, but the
    same action then steps differently (a random opponent, unseeded dynamics). Each is
    tried :data:`RANDOMNESS_TRIES` times, so one lucky repeat (a random opponent that
    happened to answer the same move) does not hide it.
    """
    from gymnasium.utils.env_checker import data_equivalence

    for _ in range(RANDOMNESS_TRIES):
        first, _ = env.reset(seed=seed)
        second, _ = env.reset(seed=seed)
        if not data_equivalence(first, second):
            return [finding("seeding", seed)]
    env.action_space.seed(seed)
    for _ in range(RANDOMNESS_TRIES):
        env.reset(seed=seed)
        action = sample_action(env)
        first = env.step(action)[:3]
        env.reset(seed=seed)
        second = env.step(action)[:3]
        if not data_equivalence(first, second):
            return [finding("stepping", seed)]
    return []


def sample_action(env: Any) -> Any:
    """A random action, legal where the env knows the legal ones."""
    legal = env.observation_codec.legal_key is not None and env.action_codec.maskable
    if isinstance(env.action_space, spaces.Discrete) and legal:
        return env.action_space.sample(mask=np.asarray(env.action_masks(), dtype=np.int8))
    return env.action_space.sample()


def refuses_illegal(exc: Exception, env: Any) -> CheckResult | None:
    """The server finding ``illegal actions`` when ``exc`` is the server refusing (HTTP 400
    or 422) an action of an env that has a legal-action mask: Gymnasium's ``check_env``
    samples without the mask, which such a server refuses; else ``None``.

    Example:
        >>> refuses_illegal(ValueError("x"), None) is None
        True
    """
    from openenv_gym.errors import ServerReplyError

    status = exc.data.get("status") if isinstance(exc, ServerReplyError) else None
    masked = env is not None and env.observation_codec.legal_key is not None
    if status not in (400, 422) or not (masked and env.action_codec.maskable):
        return None
    return CheckResult(
        "illegal actions",
        False,
        f"the server refuses actions outside the legal ones (HTTP {status}), which Gymnasium's "
        "check_env samples (it knows no mask)",
        [
            f"a property of the server: play with the mask, env.action_space.sample(mask="
            f"info['action_mask']) (from {env.observation_codec.legal_key!r}); check_env stops "
            f"there. Server said: {str(exc).splitlines()[0][:200]}"
        ],
    )


__all__ = [
    "DETERMINISM",
    "RANDOMNESS_TRIES",
    "CheckResult",
    "finding",
    "randomness",
    "refuses_illegal",
    "sample_action",
]
