"""Which render modes a served Gymnasium env id can honour on this machine.

A classic-control, Box2D or toy-text env declares ``render_modes=["human", "rgb_array"]``
whatever is installed, but draws with pygame, imported only when it first renders. A server
that advertised ``rgb_array`` without pygame made Gymnasium's ``check_env`` (and
``openenv-gym check``) fail on the base install. :func:`served_render_modes` lists a mode only
when the code that draws it can be imported here, so a client sees ``render_modes == []`` and
the defaults pass; asked for ``rgb_array`` anyway, the client's error names the install.

Example:
    >>> served_render_modes("CartPole-v1", has_module=lambda name: True)
    ('rgb_array',)
    >>> served_render_modes("CartPole-v1", has_module=lambda name: name != "pygame")
    ()
    >>> render_dependency("CartPole-v1")
    'pygame'
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import sys
from collections.abc import Callable
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

#: Modules that draw frames, found by name in an env class's source.
RENDER_MODULES = ("pygame",)


def _creator(env_id: str) -> Any:
    """The class (or function) a registered id makes, without making it; ``None`` if unknown."""
    try:
        spec = gym.spec(env_id)
        entry_point = spec.entry_point
        return load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    except (gym.error.Error, ImportError, AttributeError, ValueError):
        return None


def declared_render_modes(env_id: str) -> list[str]:
    """The render modes the env class of a registered id declares (without making it)."""
    metadata = getattr(_creator(env_id), "metadata", None)
    modes = metadata.get("render_modes") if isinstance(metadata, dict) else None
    return list(modes) if isinstance(modes, list | tuple) else []


@functools.lru_cache(maxsize=64)
def render_dependency(env_id: str) -> str | None:
    """The drawing module (``"pygame"``) the env class's own module imports, or ``None``."""
    creator = _creator(env_id)
    module = inspect.getmodule(creator) if creator is not None else None
    try:
        source = inspect.getsource(module) if module is not None else ""
    except (OSError, TypeError):
        return None
    return next((name for name in RENDER_MODULES if f"import {name}" in source), None)


def module_importable(name: str) -> bool:
    """Whether ``import name`` can succeed, without importing it (a ``None`` entry in
    ``sys.modules`` blocks it, as Python's import does)."""
    if name in sys.modules:
        return sys.modules[name] is not None
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def served_render_modes(
    env_id: str, *, has_module: Callable[[str], bool] = module_importable
) -> tuple[str, ...]:
    """``("rgb_array",)`` when ``env_id`` declares it and can draw it here, else ``()``."""
    if "rgb_array" not in declared_render_modes(env_id):
        return ()
    needed = render_dependency(env_id)
    return ("rgb_array",) if needed is None or has_module(needed) else ()


__all__ = [
    "declared_render_modes",
    "module_importable",
    "render_dependency",
    "served_render_modes",
]
