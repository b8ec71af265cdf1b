"""Steady steps from compact frames (:mod:`openenv_gym.vector.compact_step`) against full
frames, on real servers: a vector env whose connections agreed to compact frames and one
whose connections cannot (``compression="zstd"``: packed full frames), with the same seeds
and actions, return the same observations, rewards, flags and infos (and dtypes) at every
step: Atari's shared-memory screens and metadata, Breakout's lives and life-loss resets,
CartPole's arrays in the frame and its server's exact flags, in every autoreset mode."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.vector import AutoresetMode

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym import OpenEnvVectorEnv
from openenv_gym.bench.atari_training import ATARI_OPTIONS
from openenv_gym.envs.atari.preprocessing import ATARI_WRAPPER_OPTIONS
from openenv_gym.envs.gymnasium import gymnasium_server
from openenv_gym.server import ServerThread
from openenv_gym.vector.channels import BatchChannel
from openenv_gym.vector.compact_step import CompactStep
from openenv_gym.wire.compressed import ZSTD
from tests.side_by_side import step_alike


@pytest.fixture(scope="module")
def short_cartpole_url() -> Iterator[str]:
    """CartPole whose server truncates episodes at 12 steps: both flags happen."""
    server = gymnasium_server("CartPole-v1", make_kwargs={"max_episode_steps": 12}, max_sessions=32)
    with ServerThread(server) as running:
        yield running.url


def _compact_steps(envs: Any) -> int:
    steady = envs.unwrapped._path.steady
    assert steady._compact is None or isinstance(steady._compact, CompactStep)
    return int(steady.compact_taken)


def _step_both(
    make: Callable[..., Any], steps: int, *, seed: int = 0, reset_ended: bool = False
) -> tuple[Any, Any]:
    """Step a compact env and a full-frame one alike; returns both (closed)."""
    ours, full = make(), make(compression=ZSTD)

    def announced(step: int) -> None:
        if step == 0:  # a step's result announces (a reset's has no reward to type)
            assert all(c.announcement is not None for c in ours.unwrapped._connections.channels)
            assert all(c.announcement is None for c in full.unwrapped._connections.channels)

    try:
        assert all(isinstance(c, BatchChannel) for c in ours.unwrapped._connections.channels)
        step_alike(ours, full, steps, seed=seed, reset_ended=reset_ended, after_step=announced)
        return ours, full
    finally:
        ours.close()
        full.close()


@pytest.mark.usefixtures("two_cores")
def test_preprocessed_pong_from_compact_frames_equals_full_frames() -> None:
    def make(**kwargs: Any) -> Any:
        return gym.make_vec("openenv/Atari-v0", num_envs=4, game="pong", **ATARI_OPTIONS, **kwargs)

    ours, _ = _step_both(make, 40)
    # The first step's full frames announce, the steady step reads the second's compact
    # frames and compiles them: every later step is written straight from its frames.
    assert _compact_steps(ours) == 38


@pytest.mark.usefixtures("two_cores")
def test_breakout_lives_and_life_loss_resets_equal_full_frames() -> None:
    """SB3's settings: a lost life ends the episode; the next step resets it (NEXT_STEP),
    the info's lives change, and a step after a reset is compact again."""

    def make(**kwargs: Any) -> Any:
        return gym.make_vec(
            "openenv/Atari-v0", num_envs=4, game="breakout", **ATARI_WRAPPER_OPTIONS, **kwargs
        )

    steps = 200
    ours, _ = _step_both(make, steps, seed=3)
    taken = _compact_steps(ours)
    assert 0 < taken < steps - 1  # the resets went the general way


@pytest.mark.parametrize("limit", [None, 7], ids=["server limit", "client limit too"])
@pytest.mark.parametrize(
    "mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED]
)
def test_cartpole_from_compact_frames_equals_full_frames(
    short_cartpole_url: str, mode: AutoresetMode, limit: int | None
) -> None:
    """One connection; the observations travel in the compact frames themselves, with the
    server's truncated and terminated flags as boolean columns (its time limit truncates
    some episodes, the pole ends others), and a client-side time limit before it."""

    def make(**kwargs: Any) -> Any:
        return OpenEnvVectorEnv(
            "openenv/Remote-v0",
            num_envs=6,
            base_url=short_cartpole_url,
            autoreset_mode=mode,
            max_episode_steps=limit,
            **kwargs,
        )

    disabled = mode == AutoresetMode.DISABLED
    ours, _ = _step_both(make, 120, reset_ended=disabled)
    # In SAME_STEP mode an ending comes with its final reply, in a full frame.
    assert _compact_steps(ours) > 0
