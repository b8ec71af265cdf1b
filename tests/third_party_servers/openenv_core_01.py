"""Start the ``openenv-core==0.1.1`` server of :mod:`.openenv_core_01_app` as a child process,
with the Python of ``.venv-openenv-core-0.1`` (beside the venv running the tests; ``bash
scripts/setup.sh dev`` creates it: that release cannot share a venv with ``openenv``).

Example:
    >>> with serve_openenv_core_01() as url:  # doctest: +SKIP
    ...     env = gym.make("openenv/Remote-v0", base_url=url, **MODELS)
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

#: The venv of the first release, beside the one running the tests.
VENV_NAME: Final = ".venv-openenv-core-0.1"
APP: Final = Path(__file__).with_name("openenv_core_01_app.py")


def openenv_core_01_python() -> Path:
    """The Python of ``.venv-openenv-core-0.1``.

    Raises:
        FileNotFoundError: It does not exist (run ``bash scripts/setup.sh dev``).
    """
    venv_parent = Path(sys.prefix).parent
    python = venv_parent / VENV_NAME / "bin" / "python"
    if not python.exists():
        raise FileNotFoundError(
            f"expected {python} (openenv-core==0.1.1 in a venv of its own); create it with "
            f"`bash scripts/setup.sh dev` in {venv_parent}"
        )
    return python


@contextmanager
def serve_openenv_core_01(*, web: bool = False) -> Iterator[str]:
    """Run the ``openenv-core`` 0.1.1 walk server on 127.0.0.1 (``web=True``: with the
    release's web interface); yield its URL."""
    child = subprocess.Popen(
        [str(openenv_core_01_python()), str(APP), *(["--web"] if web else [])],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if not line.startswith("READY "):
            raise RuntimeError(f"the openenv-core 0.1.1 server did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        child.terminate()
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
