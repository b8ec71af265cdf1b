"""The :class:`Environment` interface that :class:`~openenv_gym.server.OpenEnvServer` serves.

One instance serves one WebSocket session. The server calls :meth:`Environment.reset`,
:meth:`Environment.step` and :attr:`Environment.state` inline on its event loop (so they
should not block for long), and :meth:`Environment.close` when the session ends.

The shape is the official ``openenv`` ``Environment`` (0.10.0) minus its transforms and
rubrics, so an environment written for the official server ports by changing its imports.

Example:
    >>> from openenv_gym.server.models import Action, Observation, State
    >>> class CountAction(Action):
    ...     increment: int = 1
    >>> class CountObservation(Observation):
    ...     total: int = 0
    >>> class Counter(Environment[CountAction, CountObservation, State]):
    ...     '''Adds the increments; the episode ends at 10.'''
    ...     def __init__(self) -> None:
    ...         self._total = 0
    ...         self._state = State()
    ...     def reset(self, seed=None, episode_id=None, **kwargs):
    ...         self._total = 0
    ...         self._state = State(episode_id=episode_id, step_count=0)
    ...         return CountObservation(total=0)
    ...     def step(self, action):
    ...         self._total += action.increment
    ...         self._state.step_count += 1
    ...         return CountObservation(total=self._total, reward=1.0, done=self._total >= 10)
    ...     @property
    ...     def state(self):
    ...         return self._state
    >>> env = Counter()
    >>> env.reset().total, env.step(CountAction(increment=4)).total
    (0, 4)
    >>> env.get_metadata().description
    'Adds the increments; the episode ends at 10.'
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from typing import Any, Generic, TypeVar

from openenv_gym.server.models import Action, EnvironmentMetadata, Observation, State

ActT = TypeVar("ActT", bound=Action)
ObsT = TypeVar("ObsT", bound=Observation)
StateT = TypeVar("StateT", bound=State)


class Environment(ABC, Generic[ActT, ObsT, StateT]):
    """An OpenEnv environment: reset, step, state, metadata, close.

    Raise :class:`openenv_gym.errors.CodecError` (or a subclass such as
    :class:`~openenv_gym.errors.ActionOutOfSpaceError`) from :meth:`step` when a validated
    action still does not fit the environment: the server answers ``VALIDATION_ERROR``.
    Any other exception is answered with ``EXECUTION_ERROR``; the session lives on.
    """

    @abstractmethod
    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ObsT:
        """Start a new episode and return its first observation.

        The server passes the reset message's keys that this signature accepts (all of
        them when it takes ``**kwargs``), like the official server.
        """

    @abstractmethod
    def step(self, action: ActT) -> ObsT:
        """Apply one validated action and return the resulting observation."""

    @property
    @abstractmethod
    def state(self) -> StateT:
        """The current episode state (at least ``episode_id`` and ``step_count``)."""

    def step_reply(self, data: dict[str, Any]) -> dict[str, Any] | None:
        """Optional fast path: a ``step`` message's raw ``data`` -> the whole reply message.

        Return ``None`` (the default) to have the server validate ``data`` with the action
        model, call :meth:`step` and serialize the observation. An environment that checks
        the raw action itself can answer here and skip validation and ``model_dump``; it
        must return exactly what the slow path would (see
        :func:`openenv_gym.wire.messages.observation_message`) and raise the same errors.
        """
        return None

    def sample_action(self) -> dict[str, Any] | None:
        """Optional: the ``data`` of a valid ``step`` message, chosen at random.

        The server steps a throwaway environment with it to learn what a step costs
        (``GET /capacity``'s ``step_seconds``, :mod:`openenv_gym.server.step_cost`), so
        batching clients spread their sessions over worker processes only when that pays.
        ``None`` (the default): the cost stays unknown until sessions step.
        """
        return None

    def get_metadata(self) -> EnvironmentMetadata:
        """Describe the environment; the default uses the class name and docstring."""
        name = type(self).__name__
        doc = inspect.cleandoc(type(self).__doc__ or "")
        description = doc.splitlines()[0] if doc else f"{name} environment"
        return EnvironmentMetadata(name=name, description=description, version="1.0.0")

    def close(self) -> None:  # optional hook, empty on purpose
        """Release resources; called once when the session ends or the server stops."""


__all__ = ["ActT", "Environment", "ObsT", "StateT"]
