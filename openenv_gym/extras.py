r"""Optional dependencies: which extra installs which module, and one import guard for all.

The base install (``pip install openenv-gym``) has the client only. Everything else comes
from an extra, and every optional import goes through :func:`optional_imports`, so a missing
package is reported the same way everywhere: what needs it, which package is missing and
the exact command that installs it (:class:`~openenv_gym.errors.MissingExtraError`, an
``ImportError``).

Example:
    >>> install_command("atari")
    "pip install 'openenv-gym[atari]'"
    >>> with optional_imports("the Atari server"):
    ...     import json  # installed: nothing happens
    >>> error = missing_extra("ale_py", "the Atari server")
    >>> error.extra, isinstance(error, ImportError)
    ('atari', True)
    >>> print(str(error).replace(". ", ".\n"))
    the Atari server needs ale-py, which is not installed.
    Install the extra: pip install 'openenv-gym[atari]'
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final, NamedTuple

from openenv_gym.errors import MissingExtraError


class Provider(NamedTuple):
    """Where a module comes from: its PyPI distribution and the openenv-gym extra."""

    distribution: str
    extra: str


#: Top-level module -> the distribution and extra that install it (see pyproject.toml).
EXTRAS: Final[dict[str, Provider]] = {
    "ale_py": Provider("ale-py", "atari"),
    "cv2": Provider("opencv-python-headless", "atari"),
    "chess": Provider("chess (python-chess)", "chess"),
    "stable_baselines3": Provider("stable-baselines3", "sb3"),
    "sb3_contrib": Provider("sb3-contrib", "sb3"),
    "torch": Provider("torch", "sb3"),
    "ray": Provider("ray[rllib]", "rllib"),
    "docker": Provider("docker (the Docker SDK)", "docker"),
    "pyarrow": Provider("pyarrow", "datasets"),
    "datasets": Provider("datasets", "datasets"),
    "huggingface_hub": Provider("huggingface_hub", "datasets"),
    "tqdm": Provider("tqdm", "datasets"),
    "minari": Provider("minari", "minari"),
    "yaml": Provider("pyyaml", "yaml"),
    "pygame": Provider("pygame", "render"),
    "moviepy": Provider("moviepy", "render"),
    "matplotlib": Provider("matplotlib", "bench"),
    "envpool": Provider("envpool", "bench"),
    "pettingzoo": Provider("pettingzoo", "multiagent"),
}


def install_command(extra: str) -> str:
    """The command installing an extra: ``pip install 'openenv-gym[atari]'``."""
    return f"pip install 'openenv-gym[{extra}]'"


def missing_extra(module: str, purpose: str) -> MissingExtraError:
    """The error for ``module`` missing, needed by ``purpose`` (``"the Atari server"``).

    Raises:
        KeyError: ``module`` is not an optional dependency (not in :data:`EXTRAS`).
    """
    provider = EXTRAS[module]
    return MissingExtraError(
        f"{purpose} needs {provider.distribution}, which is not installed. Install the extra: "
        f"{install_command(provider.extra)}",
        module=module,
        extra=provider.extra,
    )


@contextmanager
def optional_imports(purpose: str) -> Iterator[None]:
    """Turn a missing optional dependency imported inside the block into a
    :class:`~openenv_gym.errors.MissingExtraError` naming the extra.

    An ``ImportError`` naming an optional module that is not installed (missing, or only a
    same-named directory on ``sys.path``) becomes the error; others (a module that is not
    optional, a broken install) pass unchanged.

    Args:
        purpose: What needs the imports, as the start of a sentence (``"the Atari server"``,
            ``"openenv_gym.integrations.sb3"``).
    """
    try:
        yield
    except ImportError as exc:
        module = (exc.name or "").partition(".")[0]
        if module not in EXTRAS or is_installed(module):
            raise
        raise missing_extra(module, purpose) from exc


def is_installed(module: str) -> bool:
    """Whether ``module`` is installed as a real package or module.

    A directory of that name in the current directory (``/tmp/ray``, Ray's session
    directory; a repository's ``docker/``) imports as an empty namespace package: that is
    not an install.
    """
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.origin not in (None, "namespace")


def lazy_exports(package: str, exports: Mapping[str, Sequence[str]]) -> Callable[[str], Any]:
    """A package's module-level ``__getattr__`` that imports each exported name's module on
    first use, so importing the package imports none of them (nor their extras).

    Args:
        package: The package's ``__name__`` (for the error message).
        exports: Each module and the names of it the package exports.

    Example:
        >>> __getattr__ = lazy_exports("demo", {"json": ["dumps"]})
        >>> __getattr__("dumps")([1])
        '[1]'
        >>> __getattr__("loads")
        Traceback (most recent call last):
        ...
        AttributeError: module 'demo' has no attribute 'loads'
    """

    module_of = {name: module for module, names in exports.items() for name in names}

    def attribute(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return attribute


__all__ = [
    "EXTRAS",
    "Provider",
    "install_command",
    "is_installed",
    "lazy_exports",
    "missing_extra",
    "optional_imports",
]
