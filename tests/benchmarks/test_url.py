"""``openenv-gym bench --url``: a server built on the official ``openenv`` package, and ours
with a token. Real servers on 127.0.0.1, tiny windows, no timing checked."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from openenv.core.env_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field

from openenv_gym.bench import build_parser, run_from_args
from openenv_gym.bench.report import parse_table
from openenv_gym.bench.url import capped_sizes
from openenv_gym.errors import AuthenticationError
from openenv_gym.providers import LocalServerProcess
from tests.official_peer import serve_official_app

TINY = ["--seconds", "0.15", "--warmup", "0.02"]


class CartPoleAction(Action):
    action: int = Field(ge=0, le=1, description="push left (0) or right (1)")


class CartPoleObservation(Observation):
    observation: list[float] = Field(default_factory=lambda: [0.0] * 4, min_length=4, max_length=4)


class OfficialCartPole(Environment):
    """Gymnasium's CartPole on the official package; its metadata names the Gymnasium id."""

    def __init__(self) -> None:
        super().__init__()
        self._env = gym.make("CartPole-v1")
        self._state = State(step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> CartPoleObservation:
        obs, _ = self._env.reset(seed=seed)
        self._state = State(episode_id=episode_id, step_count=0)
        return CartPoleObservation(observation=obs.tolist())

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        obs, reward, terminated, truncated, _ = self._env.step(action.action)
        self._state.step_count += 1
        return CartPoleObservation(
            observation=obs.tolist(), reward=float(reward), done=bool(terminated or truncated)
        )

    @property
    def state(self) -> State:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(name="CartPole-v1", description="CartPole, official package")


@pytest.fixture(scope="module")
def official_url() -> Iterator[str]:
    """The official server with its default of ONE concurrent session."""
    app = create_fastapi_app(OfficialCartPole, CartPoleAction, CartPoleObservation)
    with serve_official_app(app) as url:
        yield url


def _bench(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[list[dict[str, str]], str]:
    assert run_from_args(build_parser().parse_args(list(args))) == 0
    captured = capsys.readouterr()
    return parse_table(captured.out), captured.out


def _rate(row: dict[str, str]) -> float:
    return float(row["steps/s"].replace(",", ""))


def test_capped_sizes_stop_at_the_capacity() -> None:
    assert capped_sizes([1, 2, 4, 8, 16], None) == [1, 2, 4, 8, 16]
    assert capped_sizes([1, 2, 4, 8, 16], 1) == [1]
    assert capped_sizes([1, 8], 4) == [1, 4]
    assert capped_sizes([1, 8], 0) == []


@pytest.mark.slow
def test_bench_url_measures_an_official_server_next_to_raw_gymnasium(
    official_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows, out = _bench(capsys, "--url", official_url, "--n", "1,4", *TINY, "--out", str(tmp_path))
    by_key = {(row["contender"], row["N"]): row for row in rows}
    # the official server holds one session: every N above 1 is left out, and the note says so
    assert {row["N"] for row in rows} == {"1"}
    assert "the server holds 1 session(s) now: N up to 1" in out
    raw = by_key[("gymnasium CartPole-v1 (raw, 1 env)", "1")]
    assert _rate(raw) > 0
    assert raw["vs raw"] == "1.00x"
    for label in (
        "ours OpenEnvEnv (1 env)",
        "ours vector",
        "official client .sync() (1 env)",
        "official client (gather)",
        "gymnasium AsyncVectorEnv",
    ):
        row = by_key[(label, "1")]
        assert _rate(row) > 0, row
        for column in ("vs raw", "vs Async(N)", "p50 µs", "CPU µs/step"):
            assert row[column] != "-", (column, row)
    assert (tmp_path / "bench.png").is_file()
    assert (tmp_path / "bench.md").read_text().count("| CartPole-v1 |") == len(rows)


@pytest.mark.slow
def test_bench_url_with_a_token_on_our_server_holding_many_sessions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    serve = ["gymnasium", "--env-id", "CartPole-v1", "--max-sessions", "3"]
    with LocalServerProcess(serve, env={"OPENENV_TOKEN": "s3cret"}) as server:
        url = str(server.base_url)
        with pytest.raises(AuthenticationError):
            run_from_args(build_parser().parse_args(["--url", url, "--token", "wrong", *TINY]))
        rows, out = _bench(
            capsys,
            *("--url", url, "--token", "s3cret", "--n", "1,2,8"),
            *("--contenders", "ours-env,ours-json", *TINY, "--out", str(tmp_path)),
        )
    assert [(row["contender"], row["N"]) for row in rows] == [
        ("ours OpenEnvEnv (1 env)", "1"),
        ("ours vector", "1"),
        ("ours vector", "2"),
        ("ours vector", "3"),  # what the server holds, since 8 was more
    ]
    assert all(_rate(row) > 0 for row in rows)
    assert "N up to 3" in out
    # the token can come from the environment, for every contender (the official client too)
    monkeypatch.setenv("OPENENV_TOKEN", "s3cret")
    with LocalServerProcess(serve, env={"OPENENV_TOKEN": "s3cret"}) as server:
        rows, _ = _bench(
            capsys,
            *("--url", str(server.base_url), "--n", "1"),
            *("--contenders", "official-sync,ours-env", *TINY, "--out", str(tmp_path)),
        )
    assert [row["contender"] for row in rows] == [
        "official client .sync() (1 env)",
        "ours OpenEnvEnv (1 env)",
    ]
    assert all(_rate(row) > 0 for row in rows)


def test_an_unreachable_url_is_a_readable_error(capsys: pytest.CaptureFixture[str]) -> None:
    from openenv_gym.cli import main

    with socket.socket() as free:  # a port nobody listens on once closed
        free.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{free.getsockname()[1]}"
    assert main(["bench", "--url", url, "--seconds", "0.1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("openenv-gym: error: ServerConnectionError: ")
    assert url in err[0]
    assert "Traceback" not in "\n".join(err)


def test_an_unknown_gym_id_is_refused_with_the_fix(official_url: str) -> None:
    args = build_parser().parse_args(["--url", official_url, "--gym-id", "NoSuchEnv-v9"])
    with pytest.raises(ValueError, match="'NoSuchEnv-v9' is not a registered Gymnasium id"):
        run_from_args(args)
