"""Every training example runs end to end in its ``--quick`` mode, so none of them rots."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids checked below)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, *args: str, timeout: float = 540) -> str:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--quick", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert result.returncode == 0, f"{name} failed:\n{result.stdout}\n{result.stderr[-3000:]}"
    return result.stdout


def test_rollout_quick() -> None:
    """The README's first example takes --quick like every other example."""
    out = run_example("rollout.py")
    assert "episode 1: return" in out
    assert "episode 2: return" not in out
    assert "steps/s over loopback" in out


def returns_per_update(out: str, pattern: str) -> list[float]:
    """The mean episode return an example printed after each update, in order."""
    return [float(value) for value in re.findall(pattern, out)]


@pytest.mark.slow
@pytest.mark.timeout(600)  # 20 epochs per update: ~1 min on a shared 2-core machine
def test_sb3_ppo_cartpole_learns_over_uneven_minibatches() -> None:
    """9 envs x 32 steps = 288 transitions per update: minibatches of 256 and 32, 7 updates."""
    pytest.importorskip("stable_baselines3")
    out = run_example("train_sb3_ppo_cartpole.py", "--n-envs", "9", "--timesteps", "2000")
    assert "trained 2000 steps" in out
    assert "mean return over 2 episodes" in out
    returns = returns_per_update(out, r"ep_rew_mean\s*\|\s*([0-9.]+)")
    assert len(returns) >= 6, out
    assert "nan" not in out
    assert np.mean(returns[-3:]) > np.mean(returns[:2]), returns


@pytest.mark.slow
def test_record_dataset_quick() -> None:
    pytest.importorskip("datasets")
    pytest.importorskip("torch")
    out = run_example("record_dataset.py", "--epochs", "4")  # uneven minibatches of 256
    assert "recorded 2 expert episodes" in out
    assert "behavioural cloning on the remote env: mean return" in out
    accuracy = returns_per_update(out, r"epoch \d+: loss [0-9.]+, accuracy ([0-9.]+)")
    assert len(accuracy) == 4, out
    assert accuracy[-1] > accuracy[0], accuracy  # it learns from the recorded episodes


@pytest.mark.slow
@pytest.mark.timeout(600)  # Ray's start and three iterations: ~45 s at load 3-5
def test_rllib_ppo_quick() -> None:
    pytest.importorskip("ray.rllib")
    out = run_example("train_rllib_ppo.py", "--iterations", "3")  # three updates
    assert "iteration 3: mean return" in out
    assert "mean return nan" not in out.split("iteration 2:")[1], out


@pytest.mark.slow
def test_sb3_atari_local_quick() -> None:
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("ale_py")
    out = run_example("train_sb3_atari.py", "--local")
    assert "steps/s" in out
    assert "nan" not in out
    assert "no game finished yet in 128 steps per env" in out


@pytest.mark.slow
@pytest.mark.skipif(
    "openenv/Atari-v0" not in gym.registry,
    reason="openenv/Atari-v0 is not registered (the Atari server is not in this build)",
)
def test_sb3_atari_remote_quick() -> None:
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("ale_py")
    out = run_example("train_sb3_atari.py")
    assert "remote Pong" in out
    assert "steps/s" in out
    assert "nan" not in out


@pytest.mark.slow
@pytest.mark.skipif(
    "openenv/Atari-v0" not in gym.registry,
    reason="openenv/Atari-v0 is not registered (the Atari server is not in this build)",
)
def test_cleanrl_ppo_atari_quick() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("ale_py")
    out = run_example("train_cleanrl_ppo_atari.py", timeout=900)
    assert "Box(0, 255, (4, 84, 84), uint8) frames" in out
    assert "trained 256 steps" in out


@pytest.mark.slow
def test_sb3_atari_local_subproc_quick() -> None:
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("ale_py")
    out = run_example("train_sb3_atari.py", "--local", "--subproc")
    assert "SubprocVecEnv" in out
    assert "steps/s" in out


@pytest.mark.slow
def test_cleanrl_ppo_pool_quick() -> None:
    pytest.importorskip("torch")
    out = run_example("train_cleanrl_ppo_pool.py")
    assert "trained 20" in out  # 2048 steps and the last batch's few
    assert "mean return over" in out


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_cleanrl_ppo_pool_learns_over_uneven_minibatches() -> None:
    """Rollouts of 1,001 transitions in minibatches of 250: 11 updates (issue 34, item 1).

    ``--batch-size 1`` makes every rollout exactly 1,001 long; cut in steps of 250, the last
    minibatch held one transition, whose advantage ``std()`` is NaN: all-NaN logits at the
    second update. The example must keep learning through such sizes.
    """
    pytest.importorskip("torch")
    args = ["--total-steps", "12000", "--rollout", "1001", "--minibatch", "250"]
    out = run_example("train_cleanrl_ppo_pool.py", *args, "--num-envs", "6", "--batch-size", "1")
    assert "trained 12000 steps" in out
    returns = returns_per_update(out, r"mean return of the last episodes ([0-9.]+)")
    assert len(returns) == 11, out
    assert np.mean(returns[-3:]) > np.mean(returns[:2]), returns


@pytest.mark.slow
def test_selfplay_tictactoe_quick() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("pettingzoo")
    out = run_example("train_selfplay_tictactoe.py")
    assert "before training, against random:" in out
    assert "moves/s, training included" in out
    assert "after training, against random:" in out
