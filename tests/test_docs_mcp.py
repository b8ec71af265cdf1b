"""The worked example of ``docs/mcp.md`` runs: its server block served by uvicorn on
127.0.0.1, its Gymnasium block against it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.official_peer import serve_official_app

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "mcp.md"
DOC_URL = "http://127.0.0.1:8000"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.S)


def test_the_worked_example_runs() -> None:
    blocks = _python_blocks()
    server = next(block for block in blocks if "create_app(" in block)
    client = [block for block in blocks if "import openenv_gym" in block][-1]
    server_namespace: dict[str, Any] = {"__name__": "toolbox"}
    exec(compile(server, f"{GUIDE}:server", "exec"), server_namespace)
    with serve_official_app(server_namespace["app"]) as url:
        code = client.replace(DOC_URL, url)
        assert code != client
        exec(compile(code, f"{GUIDE}:client", "exec"), {"__name__": "example"})
