"""Episode bookkeeping shared by the single-env and vector wrappers.

A wrapper that looks at transitions ``(s, a, r, s', terminated, truncated)`` must know, for
every sub-env and step, whether the step was a real transition or an autoreset, which
observation was ``s`` and which is ``s'`` (the final observation of an episode, not the
reset observation that replaces it), and when a new episode began. Gymnasium vector envs
answer these questions differently in each ``autoreset_mode``:

* ``NEXT_STEP`` (the default): the step after an episode end is a reset; its action is
  ignored, its observation starts the next episode and it is not a transition.
* ``SAME_STEP``: an ending step already returns the reset observation; the final one is in
  ``info["final_obs"]``.
* ``DISABLED``: the user resets ended sub-envs with ``reset(options={"reset_mask": ...})``.

:class:`EpisodeTracker` does it once for all of them; a single env is a tracker with one
sub-env in ``DISABLED`` mode (the user calls ``reset()``).

Example:
    >>> import numpy as np
    >>> tracker = EpisodeTracker(2, AutoresetMode.NEXT_STEP)
    >>> _ = tracker.reset(np.array([[0.0], [1.0]]))
    >>> view = tracker.step(np.array([[2.0], [3.0]]), [True, False], [False, False], {})
    >>> view.live.tolist(), view.next_observation(0).tolist()
    ([True, True], [2.0])
    >>> view = tracker.step(np.array([[9.0], [4.0]]), [False, False], [False, False], {})
    >>> view.live.tolist(), view.started.tolist()  # sub-env 0 was reset, not stepped
    ([False, True], [True, False])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from openenv_gym.errors import WrapperConfigError

__all__ = ["AutoresetMode", "EpisodeTracker", "StepView", "index_observation", "info_at"]


def index_observation(observation: Any, i: int) -> Any:
    """Sub-env ``i``'s part of a batched observation (Dict and Tuple observations too)."""
    if isinstance(observation, Mapping):
        return {key: index_observation(value, i) for key, value in observation.items()}
    if isinstance(observation, tuple):
        return tuple(index_observation(value, i) for value in observation)
    return observation[i]


def info_at(info: Mapping[str, Any], i: int) -> dict[str, Any]:
    """Sub-env ``i``'s entries of a vector info dict (keys whose ``_key`` mask is set)."""
    out: dict[str, Any] = {}
    for key, value in info.items():
        if key.startswith("_"):
            continue
        mask = info.get(f"_{key}")
        if mask is not None and not bool(mask[i]):
            continue
        if isinstance(value, Mapping):
            out[key] = info_at(value, i)
        elif mask is not None and isinstance(value, np.ndarray) and len(value) == len(mask):
            out[key] = value[i]
        else:
            out[key] = value
    return out


def autoreset_mode_of(metadata: Mapping[str, Any]) -> AutoresetMode:
    """A vector env's ``metadata["autoreset_mode"]`` (default ``NEXT_STEP``), checked.

    Raises:
        WrapperConfigError: The mode is not one of Gymnasium's three.
    """
    mode = metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
    try:
        return AutoresetMode(mode)
    except ValueError:
        raise WrapperConfigError(
            f"unknown autoreset mode {mode!r}; expected one of {[m.value for m in AutoresetMode]}"
        ) from None


@dataclass(frozen=True)
class StepView:
    """What one (vector) step meant for each sub-env.

    Attributes:
        live: Sub-envs whose step was a transition (not a ``NEXT_STEP`` reset).
        started: Sub-envs whose observation after this step begins a new episode.
        ended: Live sub-envs whose episode ended with this step.
        terminated, truncated: The step's flags, per sub-env.
        observations: ``s`` of each sub-env (``None`` where the step was not a transition).
        steps: Index of this step within its episode, per sub-env (for live sub-envs).
    """

    live: np.ndarray
    started: np.ndarray
    ended: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    observations: list[Any]
    steps: np.ndarray
    _next: list[Any]
    _info: Mapping[str, Any]
    _batched: bool

    def next_observation(self, i: int) -> Any:
        """``s'`` of sub-env ``i``: the final observation when its episode ended."""
        return self._next[i]

    def info(self, i: int) -> dict[str, Any]:
        """Sub-env ``i``'s info dict for this step."""
        return info_at(self._info, i) if self._batched else dict(self._info)


class EpisodeTracker:
    """Remembers ``s`` and the step count of every sub-env across resets and autoresets.

    Args:
        num_envs: Number of sub-envs (1 for a single env).
        mode: The vector env's autoreset mode; ``None`` for a single env (reset by hand).
    """

    def __init__(self, num_envs: int, mode: AutoresetMode | None) -> None:
        self.num_envs = num_envs
        self.batched = mode is not None
        self.mode = mode if mode is not None else AutoresetMode.DISABLED
        self.previous: list[Any] = [None] * num_envs
        self.steps = np.zeros(num_envs, dtype=np.int64)
        self._resetting = np.zeros(num_envs, dtype=bool)

    @classmethod
    def for_vector_env(cls, metadata: Mapping[str, Any], num_envs: int) -> EpisodeTracker:
        """A tracker in the autoreset mode a vector env declares in its ``metadata``."""
        return cls(num_envs, autoreset_mode_of(metadata))

    def _at(self, observations: Any, i: int) -> Any:
        return index_observation(observations, i) if self.batched else observations

    def reset(self, observations: Any, options: Mapping[str, Any] | None = None) -> np.ndarray:
        """Record a ``reset``; returns which sub-envs started an episode (``reset_mask``)."""
        mask = (options or {}).get("reset_mask") if self.batched else None
        started = (
            np.ones(self.num_envs, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        )
        for i in np.flatnonzero(started):
            self.previous[i] = self._at(observations, int(i))
            self.steps[i] = 0
            self._resetting[i] = False
        return started

    def is_ready(self, i: int = 0) -> bool:
        """Whether sub-env ``i`` has an observation to step from (reset since its last end)."""
        return self.previous[i] is not None or bool(self._resetting[i])

    def end(self, mask: np.ndarray) -> None:
        """Sub-envs a wrapper ended by itself (``DISABLED`` mode: the caller resets them)."""
        for i in np.flatnonzero(mask):
            self.previous[i] = None

    def step(
        self,
        observations: Any,
        terminations: Sequence[bool] | np.ndarray | bool,
        truncations: Sequence[bool] | np.ndarray | bool,
        info: Mapping[str, Any],
    ) -> StepView:
        """Record a ``step`` and say what it meant; ``s`` of live sub-envs is in the view."""
        n = self.num_envs
        terminated = np.asarray(terminations, dtype=bool).reshape(n)
        truncated = np.asarray(truncations, dtype=bool).reshape(n)
        ended = terminated | truncated
        live = ~self._resetting & np.array([p is not None for p in self.previous])
        started = self._resetting.copy()
        before = [self.previous[i] if live[i] else None for i in range(n)]
        steps = self.steps.copy()
        nexts: list[Any] = [None] * n
        for i in range(n):
            current = self._at(observations, i)
            if not live[i]:
                if started[i]:
                    self.previous[i] = current
                    self.steps[i] = 0
                continue
            nexts[i] = current
            self.previous[i] = current
            self.steps[i] += 1
            if not ended[i]:
                continue
            if self.mode == AutoresetMode.SAME_STEP:
                nexts[i] = index_observation(info["final_obs"], i)
                self.steps[i] = 0
                started[i] = True
            elif self.batched:  # DISABLED: the caller resets it (a single env may go on)
                self.previous[i] = None
        self._resetting = (
            live & ended if self.mode == AutoresetMode.NEXT_STEP else np.zeros(n, dtype=bool)
        )
        return StepView(
            live=live,
            started=started,
            ended=ended & live,
            terminated=terminated,
            truncated=truncated,
            observations=before,
            steps=steps,
            _next=nexts,
            _info=info,
            _batched=self.batched,
        )
