"""Shared by the multi-agent tests: the example's tic-tac-toe server module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SERVER_FILE = Path(__file__).resolve().parents[2] / "examples" / "tictactoe_server.py"


def tictactoe_example() -> ModuleType:
    """``examples/tictactoe_server.py``, imported (examples/ is no package)."""
    spec = importlib.util.spec_from_file_location("tictactoe_server", SERVER_FILE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the models' annotations there
    spec.loader.exec_module(module)
    return module
