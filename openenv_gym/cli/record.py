"""``openenv-gym record``: record episodes of a policy into a Parquet trajectory directory.

Usage::

    openenv-gym record --env-id openenv/CartPole-v1 --episodes 20 --out runs/cartpole
    openenv-gym record --base-url http://127.0.0.1:8000 --episodes 5 --out runs/remote \\
                       [--policy random | package.module:function] [--seed 0] \\
                       [--info-key lives ...] [--max-episode-steps N] [--chunk-size N] \\
                       [--push-to-hub USER/REPO] [--no-progress]

The policy is random by default; ``--policy package.module:function`` names a function
``(observation, action_space) -> action``. Progress goes to stderr (a tqdm bar when tqdm is
installed, else one line per episode); the last stdout line sums up the recording. Read it
back with :func:`openenv_gym.wrappers.trajectory_arrays` or
:func:`openenv_gym.wrappers.load_trajectories`.

Example:
    >>> from openenv_gym.cli.program import build_parser
    >>> args = build_parser().parse_args(["record", "--episodes", "3", "--out", "runs/x"])
    >>> args.env_id, args.episodes, args.policy
    (None, 3, 'random')
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any, Final

from openenv_gym.cli.arguments import json_object, positive_int
from openenv_gym.cli.command import EXIT_OK, Command, UsageError, description_from_docstring

DEFAULT_ENV_ID = "openenv/CartPole-v1"
REMOTE_ENV_ID = "openenv/Remote-v0"

Policy = Callable[[Any, Any], Any]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``record`` options."""
    parser.add_argument(
        "--env-id",
        default=None,
        metavar="ID",
        help=f"a Gymnasium id (default: {DEFAULT_ENV_ID}, or {REMOTE_ENV_ID} with --base-url)",
    )
    parser.add_argument(
        "--base-url",
        default=None,
        metavar="URL",
        help="a running OpenEnv server to record from (default: an embedded server)",
    )
    parser.add_argument(
        "--env-kwargs",
        type=json_object,
        default=None,
        metavar="JSON",
        help='gym.make keyword arguments as a JSON object, e.g. \'{"game": "breakout"}\'',
    )
    parser.add_argument(
        "--episodes",
        type=positive_int,
        required=True,
        metavar="N",
        help="number of episodes to play and record (required)",
    )
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="a new output directory (required)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the first reset (default: 0)")
    parser.add_argument(
        "--policy",
        default="random",
        metavar="SPEC",
        help="'random' or package.module:function taking (observation, action_space) "
        "(default: random)",
    )
    parser.add_argument(
        "--info-key",
        action="append",
        default=[],
        metavar="KEY",
        help="an info field to record (float64); repeat for more",
    )
    parser.add_argument(
        "--max-episode-steps",
        type=positive_int,
        default=None,
        metavar="N",
        help="truncate each episode after N steps (default: the env's own limit)",
    )
    parser.add_argument(
        "--chunk-size",
        type=positive_int,
        default=10_000,
        metavar="N",
        help="steps per Parquet file; bounds the memory used while recording (default: 10000)",
    )
    parser.add_argument(
        "--push-to-hub",
        default=None,
        metavar="REPO",
        help="then push the recording to this Hugging Face dataset repo (USER/NAME)",
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="no progress bar or per-episode lines"
    )


def load_policy(spec: str) -> Policy | None:
    """``None`` for ``"random"``, else the function ``package.module:function`` names."""
    from openenv_gym.errors import WrapperConfigError
    from openenv_gym.wrappers.shaping import import_callable

    if spec == "random":
        return None
    try:
        return import_callable(spec, "--policy")
    except WrapperConfigError as exc:
        raise UsageError(f"{exc}; expected 'random' or package.module:function") from None


class _Progress:
    """A tqdm bar over episodes when tqdm is installed, else one plain line per episode."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.enabled, self.total, self.done = enabled, total, 0
        self._bar: Any = None
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self._bar = tqdm(total=total, unit="episode", file=sys.stderr, dynamic_ncols=True)

    def update(self, episode_return: float, steps: int) -> None:
        self.done += 1
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.set_postfix(ret=f"{episode_return:.1f}", steps=steps)
            self._bar.update(1)
        else:
            print(
                f"episode {self.done}/{self.total}: return {episode_return:.2f}, {steps} steps",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def run(args: argparse.Namespace) -> int:
    """``openenv-gym record``: play, record, report; 0 on success."""
    import gymnasium as gym

    import openenv_gym  # noqa: F401  (registers the ids)
    from openenv_gym.wrappers import RecordTrajectories, trajectory_files

    policy = load_policy(args.policy)
    env_id = args.env_id or (REMOTE_ENV_ID if args.base_url else DEFAULT_ENV_ID)
    kwargs: dict[str, Any] = dict(args.env_kwargs or {})
    if args.base_url:
        kwargs["base_url"] = args.base_url
    if args.max_episode_steps:
        kwargs["max_episode_steps"] = args.max_episode_steps
    env = gym.make(env_id, **kwargs)
    recorder = RecordTrajectories(
        env,
        args.out,
        info_keys=list(args.info_key),
        chunk_size=args.chunk_size,
        env_id=env_id,
        metadata={"policy": args.policy, "episodes": args.episodes},
    )
    progress = _Progress(args.episodes, enabled=not args.no_progress)
    recorder.action_space.seed(args.seed)
    steps = 0
    start = time.perf_counter()
    try:
        observation, _ = recorder.reset(seed=args.seed)
        for _ in range(args.episodes):
            episode_return, episode_steps, done = 0.0, 0, False
            while not done:
                if policy is None:
                    action = recorder.action_space.sample()
                else:
                    action = policy(observation, recorder.action_space)
                observation, reward, terminated, truncated, _ = recorder.step(action)
                episode_return += float(reward)
                episode_steps += 1
                done = terminated or truncated
            steps += episode_steps
            progress.update(episode_return, episode_steps)
            observation, _ = recorder.reset()
    finally:
        progress.close()
        recorder.close()
    elapsed = time.perf_counter() - start
    chunks = len(trajectory_files(args.out))
    print(
        f"recorded {args.episodes} episodes, {steps} steps, {chunks} chunk(s) to {args.out} "
        f"in {elapsed:.1f}s"
    )
    if args.push_to_hub:
        from openenv_gym.wrappers import push_to_hub

        print(f"pushed to {push_to_hub(args.out, args.push_to_hub)}")
    return EXIT_OK


COMMAND: Final = Command(
    name="record",
    help="record episodes of a policy to Parquet (loadable with datasets)",
    description=description_from_docstring(__doc__),
    add_arguments=add_arguments,
    run=run,
)
