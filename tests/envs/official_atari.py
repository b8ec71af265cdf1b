"""An Atari server built the official way: the official ``openenv`` package's
``create_fastapi_app`` under uvicorn, with the official Atari models and an environment
that does what the official ``atari_env`` server does (list-ified screen, action meanings
in metadata). A test peer for tests and benchmarks; it needs ``openenv`` and ``ale-py``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from ale_py.env import AtariEnv
from openenv.core.env_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

from tests.official_peer import serve_official_app


class OfficialAtariAction(Action):
    action_id: int
    game_name: str = "pong"
    obs_type: Literal["rgb", "grayscale", "ram"] = "rgb"
    full_action_space: bool = False


class OfficialAtariObservation(Observation):
    screen: list[int]
    screen_shape: list[int]
    legal_actions: list[int]
    lives: int = 0
    episode_frame_number: int = 0
    frame_number: int = 0


class OfficialStyleAtariEnvironment(Environment):
    """Pong as the official server serves it (seeded here, so runs can be compared)."""

    game = "pong"
    frameskip = 4
    repeat_action_probability = 0.25

    def __init__(self) -> None:
        super().__init__()
        self._env = AtariEnv(
            game=self.game,
            frameskip=self.frameskip,
            repeat_action_probability=self.repeat_action_probability,
        )
        self._meanings = [f"Action.{m}" for m in self._env.get_action_meanings()]
        self._state = State(step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Any:
        screen, info = self._env.reset(seed=seed)
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return self._observation(screen, info, 0.0, False)

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        screen, reward, terminated, truncated, info = self._env.step(action.action_id)
        self._state.step_count += 1
        return self._observation(screen, info, float(reward), terminated or truncated)

    def _observation(self, screen: Any, info: Any, reward: float, done: bool) -> Any:
        return OfficialAtariObservation(
            screen=screen.flatten().tolist(),
            screen_shape=list(screen.shape),
            legal_actions=list(range(len(self._meanings))),
            lives=info["lives"],
            episode_frame_number=info["episode_frame_number"],
            frame_number=info["frame_number"],
            done=done,
            reward=reward,
            metadata={"game_name": self.game, "action_meanings": self._meanings},
        )

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        self._env.close()


@contextmanager
def official_atari_server(port: int = 0) -> Iterator[str]:
    """Run the official-style Pong server on 127.0.0.1 (``port=0``: a free one); yield its URL."""
    app = create_fastapi_app(
        OfficialStyleAtariEnvironment, OfficialAtariAction, OfficialAtariObservation
    )
    with serve_official_app(app, port) as url:
        yield url


def main() -> None:
    """Serve the official-style Pong server on 127.0.0.1:PORT until killed (for benchmarks).

    Prints ``READY <url>`` once it listens.
    """
    import sys

    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    with official_atari_server(port) as url:
        print(f"READY {url}", flush=True)
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
