"""Every training example runs end to end in its ``--quick`` mode, so none of them rots."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids checked below)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, *args: str, timeout: float = 300) -> str:
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


@pytest.mark.slow
def test_sb3_ppo_cartpole_quick() -> None:
    pytest.importorskip("stable_baselines3")
    out = run_example("train_sb3_ppo_cartpole.py")
    assert "trained 2048 steps" in out
    assert "mean return over 2 episodes" in out


@pytest.mark.slow
def test_record_dataset_quick() -> None:
    pytest.importorskip("datasets")
    pytest.importorskip("torch")
    out = run_example("record_dataset.py")
    assert "recorded 2 expert episodes" in out
    assert "behavioural cloning on the remote env: mean return" in out


@pytest.mark.slow
def test_rllib_ppo_quick() -> None:
    pytest.importorskip("ray.rllib")
    out = run_example("train_rllib_ppo.py")
    assert "iteration 1: mean return" in out


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
def test_cleanrl_ppo_pool_quick() -> None:
    pytest.importorskip("torch")
    out = run_example("train_cleanrl_ppo_pool.py")
    assert "trained 20" in out  # 2048 steps and the last batch's few
    assert "mean return over" in out


@pytest.mark.slow
def test_selfplay_tictactoe_quick() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("pettingzoo")
    out = run_example("train_selfplay_tictactoe.py")
    assert "before training, against random:" in out
    assert "moves/s, training included" in out
    assert "after training, against random:" in out
