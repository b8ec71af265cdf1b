"""What one environment step costs this server process, for ``GET /capacity``.

A batching client (:mod:`openenv_gym.vector.opening`) opens one connection per worker
process of a multi-worker server, so that the workers step their shares of the sessions in
parallel. That pays only when a share takes long enough: a second connection costs the
client another frame to build, send, wait for and parse each step, which on cheap envs
(CartPole steps in ~10 µs) is more than the parallel stepping saves, while expensive ones
(Atari, ~0.5 ms a step) need every core. So the server says how long a step takes, as
``"step_seconds"`` in ``GET /capacity``, and the client spreads its sessions over just as
many workers as that makes worth it.

The number is measured, never declared:

* **calibrated** on the first ``GET /capacity``, in a worker thread (as the routes that
  build an environment are; the request waits for it): a throwaway environment from the
  factory is reset and stepped with :meth:`~openenv_gym.server.Environment.sample_action`
  for at most :data:`CALIBRATION_SECONDS` or :data:`CALIBRATION_STEPS` steps, and the
  median step counts (an environment that has no ``sample_action``, or fails, leaves it
  unknown: ``null``);
* **refined** by every batch step this process serves (an exponential moving average of the
  seconds per op, building the op's reply included, encoding the batch's frame not: that
  is paid once per connection), which takes over from the calibration.

Example:
    >>> cost = StepCost()
    >>> cost.seconds is None
    True
    >>> cost.record(0.004, ops=8)
    >>> cost.seconds
    0.0005
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable
from typing import Any, Final

from openenv_gym.server.environment import Environment

logger = logging.getLogger("openenv_gym.server")

#: The longest calibration, in seconds of stepping.
CALIBRATION_SECONDS: Final = 0.02
#: The most steps a calibration takes.
CALIBRATION_STEPS: Final = 64
#: Weight of a new batch step in the moving average.
SMOOTHING: Final = 0.05


class StepCost:
    """Seconds per environment step in this process; see the module docstring."""

    def __init__(self) -> None:
        self._measured: float | None = None
        self._calibrated: float | None = None
        self._calibration_done = False

    @property
    def seconds(self) -> float | None:
        """The measured cost, else the calibrated one, else ``None``."""
        return self._measured if self._measured is not None else self._calibrated

    @property
    def measured(self) -> bool:
        """Whether batch steps have measured the cost (the calibration no longer counts)."""
        return self._measured is not None

    def record(self, seconds: float, ops: int) -> None:
        """Note a batch step that took ``seconds`` for ``ops`` ops."""
        if ops <= 0:
            return
        per_op = seconds / ops
        measured = self._measured
        self._measured = per_op if measured is None else measured + SMOOTHING * (per_op - measured)

    def calibrate(
        self,
        env_factory: Callable[[], Environment[Any, Any, Any]],
        step: Callable[[Environment[Any, Any, Any], dict[str, Any]], dict[str, Any]],
    ) -> float | None:
        """Time a throwaway environment's steps once (later calls return the result).

        Args:
            env_factory: Builds the environment (closed afterwards).
            step: Answers one ``step`` data on an environment, as a session would: the
                reply message (``data["done"]`` ends the episode).
        """
        if self._calibration_done:
            return self.seconds
        self._calibration_done = True
        env: Environment[Any, Any, Any] | None = None
        try:
            env = env_factory()
            if env.sample_action() is None:
                return self.seconds
            env.reset(seed=0)
            times: list[float] = []
            spent = 0.0
            while len(times) < CALIBRATION_STEPS and spent < CALIBRATION_SECONDS:
                action = env.sample_action()
                if action is None:
                    break
                started = time.perf_counter()
                reply = step(env, action)
                elapsed = time.perf_counter() - started
                if reply.get("type") != "observation":
                    break  # an error reply: not a step
                spent += elapsed
                times.append(elapsed)
                if reply["data"].get("done"):
                    env.reset()
            if times:  # the median: a step the scheduler interrupted does not count much
                self._calibrated = statistics.median(times)
        except Exception as exc:  # an env that cannot be timed just leaves it unknown
            logger.debug("step-cost calibration failed: %s: %s", type(exc).__name__, exc)
        finally:
            if env is not None:
                try:
                    env.close()
                except Exception as exc:
                    logger.debug("closing the calibration env failed: %s", exc)
        return self.seconds


__all__ = ["CALIBRATION_SECONDS", "CALIBRATION_STEPS", "SMOOTHING", "StepCost"]
