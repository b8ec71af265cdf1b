"""The game the third-party test servers serve: walk on a line from 0 to either end.

The action is ``{"direction": 0 | 1 | 2}`` (left, stay, right); the observation
``{"position": -3..3, "steps": int}``. Reward ``1.0`` at the right end, ``-1.0`` at the left
one (both end the episode), ``0.0`` otherwise. A seeded reset starts at ``seed % 3 - 1``.

Example:
    >>> game = Walk()
    >>> game.reset(seed=5)
    {'position': 1, 'steps': 0}
    >>> game.step(2)
    ({'position': 2, 'steps': 1}, 0.0, False)
"""

from __future__ import annotations

from typing import Any, Final

#: The ends of the line.
END: Final = 3


class Walk:
    """One walk; see the module docstring."""

    def __init__(self) -> None:
        self.position = 0
        self.steps = 0
        self.episode = 0

    def observation(self) -> dict[str, Any]:
        """The observation fields."""
        return {"position": self.position, "steps": self.steps}

    def reset(self, seed: int | None = None) -> dict[str, Any]:
        """Start an episode (at ``seed % 3 - 1``, else at 0)."""
        self.position = 0 if seed is None else seed % 3 - 1
        self.steps = 0
        self.episode += 1
        return self.observation()

    def step(self, direction: int) -> tuple[dict[str, Any], float, bool]:
        """Move; ``(observation, reward, done)``."""
        self.position += direction - 1
        self.steps += 1
        done = abs(self.position) >= END
        reward = float(self.position // END) if done else 0.0
        return self.observation(), reward, done

    def state(self) -> dict[str, Any]:
        """The state: episode number and step count."""
        return {"episode_id": str(self.episode), "step_count": self.steps}
