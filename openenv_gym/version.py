"""The package's version, in a module of its own so any module can read it without importing
the package root (which registers the Gymnasium ids and imports most of the package).

Example:
    >>> from openenv_gym.version import __version__
    >>> __version__.count(".")
    2
"""

from __future__ import annotations

from typing import Final

#: The version of openenv-gym (the same as ``version`` in pyproject.toml).
__version__: Final = "0.1.0"

__all__ = ["__version__"]
