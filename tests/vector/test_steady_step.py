"""The steady step (:mod:`openenv_gym.vector.steady_step`) against the general path, on real
servers: two vector envs with the same seeds and actions, one taking plain replies in one
pass and one with the steady step turned off, return the same observations, rewards,
flags and infos at every step, in every autoreset mode, with time limits, Atari's
metadata and replies the steady step must leave alone."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym import OpenEnvVectorEnv
from openenv_gym.bench.atari_training import ATARI_OPTIONS
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.server import ServerThread
from openenv_gym.vector.steady_step import GIVE_UP_AFTER, RETRY_AFTER, SteadyStep
from tests.side_by_side import step_alike


class MaskedWalk(gym.Env[np.ndarray, int]):
    """A walk on -5..5 whose info holds an ``action_mask`` array (as Taxi's) and a dict,
    which ``VectorEnv._add_info`` merges key by key into a dict of columns."""

    observation_space = gym.spaces.Box(-5.0, 5.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._x = int(self.np_random.integers(-2, 3))
        return self._observation(), self._info()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._x += 1 if action else -1
        done = abs(self._x) >= 5
        return self._observation(), float(self._x), done, False, self._info()

    def _observation(self) -> np.ndarray:
        return np.array([self._x, -self._x], np.float32)

    def _info(self) -> dict[str, Any]:
        return {"action_mask": np.array([1, int(self._x < 4)], np.int8), "at": {"x": self._x}}


MASKED_WALK = "SteadyStepTests/MaskedWalk-v0"


@pytest.fixture(scope="module")
def masked_walk_url() -> Iterator[str]:
    """A server of :class:`MaskedWalk`: dict infos, which the steady step leaves alone."""
    if MASKED_WALK not in gym.registry:
        gym.register(MASKED_WALK, entry_point=MaskedWalk)
    with ServerThread(gymnasium_server(MASKED_WALK, max_sessions=16)) as server:
        yield server.url


def _steady(envs: Any) -> SteadyStep:
    steady = envs.unwrapped._path.steady
    assert isinstance(steady, SteadyStep), "this env should take steady steps"
    return steady


def _general(envs: Any) -> Any:
    envs.unwrapped._path.steady = None
    return envs


def _step_both(
    make: Callable[[], Any],
    steps: int,
    *,
    seed: int = 0,
    reset_ended: bool = False,
) -> tuple[SteadyStep, int]:
    """Step a steady env and a general one alike; returns the steady step and the steps."""
    ours, general = make(), _general(make())
    try:
        steady = _steady(ours)
        step_alike(ours, general, steps, seed=seed, reset_ended=reset_ended)
        return steady, steps
    finally:
        ours.close()
        general.close()


@pytest.mark.usefixtures("two_cores")
def test_preprocessed_atari_steps_equal_the_general_path() -> None:
    """Two server workers, replies read together: metadata, lists and numbers in infos."""

    def make() -> Any:
        return gym.make_vec("openenv/Atari-v0", num_envs=4, game="pong", **ATARI_OPTIONS)

    steady, steps = _step_both(make, 40)
    assert steady.taken == steps  # Pong's episodes outlast 40 steps: every step was plain


@pytest.mark.parametrize(
    "mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED]
)
def test_cartpole_with_time_limits_equals_the_general_path(
    cartpole_url: str, mode: AutoresetMode
) -> None:
    """One connection; episodes end by termination and by the client-side time limit, and
    the server's exact flags come with every reply."""

    def make() -> Any:
        return OpenEnvVectorEnv(
            "openenv/Remote-v0",
            num_envs=6,
            base_url=cartpole_url,
            max_episode_steps=9,
            autoreset_mode=mode,
        )

    disabled = mode == AutoresetMode.DISABLED
    steady, steps = _step_both(make, 80, reset_ended=disabled)
    if disabled:  # the caller resets what ended (reset()): every step is plain
        assert steady.taken == steps
    else:  # a NEXT_STEP reset, or a SAME_STEP final reply, goes the general way
        assert 0 < steady.taken < steps


def test_replies_with_dict_infos_go_the_general_way(masked_walk_url: str) -> None:
    """A dict in every info: the steady step declines, stops trying after GIVE_UP_AFTER
    steps and tries again RETRY_AFTER steps later, every step as the general path's."""

    def make() -> Any:
        return OpenEnvVectorEnv("openenv/Remote-v0", num_envs=3, base_url=masked_walk_url)

    steady, _ = _step_both(make, GIVE_UP_AFTER + 5)
    assert steady.taken == 0
    envs = make()
    try:
        steady = _steady(envs)
        envs.reset(seed=1)
        for _ in range(200):  # steps whose op is a reset do not count: plain ones decline
            if not steady.worth_trying():
                break  # GIVE_UP_AFTER declines in a row: the first step the general way
            envs.step(envs.action_space.sample())
        else:
            pytest.fail(f"the steady step kept trying after {GIVE_UP_AFTER} declines")
        for _ in range(RETRY_AFTER - 1):
            assert not steady.worth_trying()
        assert steady.worth_trying()  # one more try, after RETRY_AFTER steps
    finally:
        envs.close()
