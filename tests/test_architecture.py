"""The house rules of the import graph: no import circles, no import that runs up a floor.

The floors are declared once, in ``FLOORS`` of ``scripts/import_graph.py`` (the script that
prints the figures); the graph is read from the source by grimp, ``TYPE_CHECKING`` imports
and imports inside functions included.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_import_graph() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "import_graph", ROOT / "scripts" / "import_graph.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


import_graph = _load_import_graph()


@pytest.fixture(scope="module")
def edges() -> list:
    return import_graph.import_edges(import_graph.build_graph())


def test_every_room_is_on_a_declared_floor(edges: list) -> None:
    rooms = {import_graph.room_of(m) for e in edges for m in (e.importer, e.imported)}
    declared = set().union(*import_graph.FLOORS)
    assert rooms - declared == set(), "add the new room to FLOORS in scripts/import_graph.py"


def test_no_import_runs_up_a_floor(edges: list) -> None:
    upward = [
        f"{e.importer}:{e.line_number} -> {e.imported}" for e in import_graph.upward_imports(edges)
    ]
    assert upward == []


def test_no_import_circle(edges: list) -> None:
    assert [tuple(c) for c in import_graph.module_circles(edges)] == []


def test_the_checks_find_a_circle_and_an_upward_import() -> None:
    """The checks can fail: a made-up graph with a circle and an upward import."""
    edge = import_graph.ImportEdge
    made_up = [
        edge("openenv_gym.wire.binary", "openenv_gym.cli.serve", 1),
        edge("openenv_gym.cli.serve", "openenv_gym.wire.binary", 2),
    ]
    assert import_graph.module_circles(made_up) == [
        ["openenv_gym.cli.serve", "openenv_gym.wire.binary"]
    ]
    assert import_graph.upward_imports(made_up) == [made_up[0]]


#: What the client path must not load: the server room, the server envs' server side, and
#: the optional extras (their import names).
_SERVER_SIDE = re.compile(
    r"openenv_gym\.server(\.|$)"
    r"|openenv_gym\.envs\.\w+\.(server|environment|models|opponents)$"
    r"|openenv_gym\.(cli|bench|images|integrations|trajectories)(\.|$)"
    r"|(ale_py|chess|docker|ray|torch|stable_baselines3|pyarrow|datasets|yaml|uvicorn|uvloop)$"
)

_CLIENT_PATH = """
import sys
import gymnasium as gym
import openenv_gym
after_import = sorted(sys.modules)
assert "openenv/CartPole-v1" in gym.registry and "openenv/Atari-v0" in gym.registry
env = gym.make("openenv/Remote-v0", base_url=sys.argv[1])
env.reset(seed=0)
env.step(env.action_space.sample())
env.close()
print("\\n".join(after_import))
print("--")
print("\\n".join(sorted(sys.modules)))
"""


def server_side_modules(names: Iterable[str]) -> list[str]:
    """The modules among ``names`` the client path must not load.

    >>> server_side_modules(["openenv_gym.env", "openenv_gym.server.app", "ale_py"])
    ['openenv_gym.server.app', 'ale_py']
    >>> server_side_modules(["openenv_gym.envs.atari.options", "openenv_gym.envs.atari.server"])
    ['openenv_gym.envs.atari.server']
    """
    return [name for name in names if _SERVER_SIDE.match(name)]


def test_the_client_path_loads_no_server_module(cartpole_url: str) -> None:
    """``import openenv_gym`` and a ``gym.make("openenv/Remote-v0")`` episode, in a fresh
    interpreter, load no server module, no server env and no optional extra; the import
    alone loads no client module (pydantic, httpx, websockets)."""
    run = subprocess.run(
        [sys.executable, "-c", _CLIENT_PATH, cartpole_url],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    after_import, _, after_episode = run.stdout.partition("--\n")
    assert server_side_modules(after_import.split()) == []
    assert server_side_modules(after_episode.split()) == []
    # The import registers the ids only: the client and its dependencies load with the env.
    client = ("openenv_gym.env", "pydantic", "httpx", "websockets")
    assert [name for name in client if name in after_import.split()] == []
    assert [name for name in client if name not in after_episode.split()] == []


def test_no_module_is_over_500_lines() -> None:
    """One concern per module: a module that grows past 500 lines is split (issue 32)."""
    long = {
        str(path.relative_to(ROOT)): lines
        for path in sorted((ROOT / "openenv_gym").rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > 500
    }
    assert long == {}, f"modules over 500 lines (split each by concern): {long}"
