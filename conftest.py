"""Settings for every test run from the repository root: the test suite, the doctests of
``openenv_gym`` and the docs' code blocks.

The tests listed in ``tests/slow_tests.py`` (slow by measurement) get the ``slow`` mark here,
so ``pytest -m "not slow"`` (the fast loop) leaves them out.

Stable-Baselines3 creates a log folder ``$TMPDIR/SB3-<date>`` for every model unless
``SB3_LOGDIR`` names one, and torch caches compiled kernels in ``$TMPDIR/torchinductor_<user>``
unless ``TORCHINDUCTOR_CACHE_DIR`` does: both point into pytest's temporary directory, so tests
write nowhere else (child processes inherit the variables).

Modules that import Ray when imported are left out of doctest collection where Ray is not
installed (``.venv-gym-latest``); their tests skip there with ``importorskip``.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import pytest

from tests.slow_tests import is_slow

#: Modules whose import needs Ray.
_NEEDS_RAY = ["openenv_gym/multiagent/rllib.py", "openenv_gym/integrations/rllib_images.py"]
collect_ignore = [] if importlib.util.find_spec("ray") else _NEEDS_RAY


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if is_slow(item.nodeid):
            item.add_marker(pytest.mark.slow)


#: Environment variables naming where libraries write, and the folder each gets.
_WRITE_LOCATIONS = {"SB3_LOGDIR": "sb3-logs", "TORCHINDUCTOR_CACHE_DIR": "torchinductor"}


@pytest.fixture(scope="session", autouse=True)
def _library_writes_in_pytest_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    previous = {name: os.environ.get(name) for name in _WRITE_LOCATIONS}
    for name, folder in _WRITE_LOCATIONS.items():
        os.environ[name] = str(tmp_path_factory.mktemp(folder))
    yield
    for name, value in previous.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
