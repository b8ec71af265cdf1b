"""Config files and pydantic validation errors, as :class:`~openenv_gym.errors.WrapperConfigError`.

Every configurable piece (reward shaping, the experiment config) is a pydantic model; a
:class:`pydantic.ValidationError` becomes one :class:`WrapperConfigError` whose ``path``
names the first bad entry the way a user finds it in the file (``wrappers[2].sigma``) and
whose message lists every problem.

Example:
    >>> from pydantic import Field, create_model
    >>> Limit = create_model("Limit", steps=(int, Field(gt=0)))
    >>> try:
    ...     validate(Limit, {"steps": 0}, prefix="wrappers[0]")
    ... except WrapperConfigError as exc:
    ...     print(exc.path)
    wrappers[0].steps
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from openenv_gym.errors import WrapperConfigError
from openenv_gym.extras import optional_imports

__all__ = ["config_path", "load_config", "validate"]

Model = TypeVar("Model", bound=BaseModel)


def config_path(loc: Sequence[int | str], prefix: str = "") -> str:
    """``("wrappers", 2, "sigma")`` -> ``"wrappers[2].sigma"`` (after ``prefix``)."""
    out = prefix
    for part in loc:
        if isinstance(part, str) and "[" in part:
            continue  # a union member's name, not a key of the config
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _describe(error: Any, prefix: str) -> str:
    where = config_path(error["loc"], prefix) or "the config"
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "unknown key (check its spelling and the documented keys)"
    elif error["type"] == "missing":
        message = "required, missing"
    got = error.get("input")
    shown = "" if error["type"] in ("missing", "extra_forbidden") else f" (got {got!r:.80})"
    return f"{where}: {message}{shown}"


def validate(model: type[Model], data: Any, *, prefix: str = "") -> Model:
    """``model.model_validate(data)``, errors as one :class:`WrapperConfigError`.

    Raises:
        WrapperConfigError: ``data`` does not fit; ``path`` names the first bad entry.
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        lines = [_describe(error, prefix) for error in errors]
        path = config_path(errors[0]["loc"], prefix) if errors else prefix
        raise WrapperConfigError(
            f"invalid {model.__name__}: " + "; ".join(lines), path=path
        ) from None


def load_config(path: str | Path) -> Any:
    """Read a YAML or JSON config file (YAML needs ``pyyaml``: the ``[yaml]`` extra).

    Raises:
        WrapperConfigError: The file is missing, unreadable, or not valid YAML / JSON.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise WrapperConfigError(f"cannot read the config file {str(path)!r}: {exc}") from exc
    suffix = path.suffix.lower()
    if suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise WrapperConfigError(f"{str(path)!r} is not valid JSON: {exc}") from exc
    if suffix in (".yaml", ".yml"):
        with optional_imports(f"reading {str(path)!r}"):
            import yaml
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise WrapperConfigError(f"{str(path)!r} is not valid YAML: {exc}") from exc
    raise WrapperConfigError(
        f"unknown config file type {suffix!r} for {str(path)!r}; expected .yaml, .yml or .json"
    )
