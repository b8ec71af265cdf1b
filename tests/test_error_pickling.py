"""Every exception of the package pickles whole (issue 31, item 5).

Gymnasium's ``AsyncVectorEnv`` sends a worker's error to the parent through a pickling
queue and re-raises it there as ``raise exctype(value)``. An error whose keyword-only
attributes were lost on the way (``ServerReplyError(..., code=...)``) arrived as a
``TypeError``, or never arrived. Each class is found in the source (any module of
``openenv_gym`` that defines an exception), built with every argument its constructor takes,
and round-tripped.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import multiprocessing
import pickle
from pathlib import Path
from typing import Any

import pytest

import openenv_gym
from openenv_gym.errors import (
    MissingExtraError,
    PicklableError,
    ServerReplyError,
    SubEnvError,
)

PACKAGE = Path(openenv_gym.__file__).parent


def _looks_like_an_exception(node: ast.stmt) -> bool:
    """Whether ``node`` is a class whose bases' names say it is an exception."""
    if not isinstance(node, ast.ClassDef):
        return False
    names = [ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases]
    return any(name.endswith(("Error", "Exception", "Exit", "Interrupt")) for name in names)


def _exception_classes() -> list[type[BaseException]]:
    """Every class of ``openenv_gym`` that derives from ``BaseException``."""
    found: list[type[BaseException]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
        if not names:
            continue
        dotted = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        try:
            module = importlib.import_module(dotted.removesuffix(".__init__"))
        except MissingExtraError:
            # A module of an extra that is not installed here (multiagent.rllib without
            # Ray): it may be left out only when it defines no exception of its own.
            if any(_looks_like_an_exception(node) for node in tree.body):
                raise
            continue
        found += [
            getattr(module, name)
            for name in names
            if isinstance(getattr(module, name), type)
            and issubclass(getattr(module, name), BaseException)
        ]
    return found


CLASSES = _exception_classes()


def _argument(name: str, annotation: str) -> Any:
    """A value for one constructor parameter, by its annotation (names for the odd ones)."""
    if name == "process":
        return multiprocessing.get_context("fork").Process(target=print)  # never started
    if name == "code":
        return "VALIDATION_ERROR"
    for prefix, value in [
        ("str", f"the {name}"),
        ("int", 7),
        ("float", 2.5),
        ("bool", True),
        ("dict", {"key": [1, 2]}),
        ("tuple", ("one", 2)),
    ]:
        if annotation.startswith(prefix):
            return value
    return {"any": [name]}


def _instance(cls: type[BaseException]) -> BaseException:
    if hasattr(cls.__init__, "__objclass__"):  # a built-in exception's __init__: a message
        return cls(f"the message of {cls.__name__}")
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for parameter in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if parameter.kind is parameter.VAR_POSITIONAL:
            args.append(f"the message of {cls.__name__}")
        elif parameter.kind is parameter.VAR_KEYWORD:
            kwargs["extra"] = "more"
        elif parameter.kind is parameter.KEYWORD_ONLY:
            kwargs[parameter.name] = _argument(parameter.name, str(parameter.annotation))
        else:
            args.append(_argument(parameter.name, str(parameter.annotation)))
    return cls(*args, **kwargs)


def test_the_search_finds_the_exceptions_of_errors_and_of_other_modules() -> None:
    names = {cls.__name__ for cls in CLASSES}
    assert {"ServerReplyError", "CapacityReachedError", "MissingExtraError"} <= names
    assert {"ClientMessageError", "UnmappableFieldError", "_WorkerDiedError"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: f"{cls.__module__}.{cls.__name__}")
def test_every_exception_unpickles_to_the_same_type_message_and_attributes(
    cls: type[BaseException],
) -> None:
    assert issubclass(cls, PicklableError), f"{cls.__name__} does not derive from PicklableError"
    error = _instance(cls)
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is cls
    assert str(back) == str(error)
    assert back.args == error.args
    assert vars(back).keys() == vars(error).keys()
    for name, value in vars(error).items():
        try:
            pickle.dumps(value)
        except Exception:
            assert getattr(back, name) == repr(value), name
        else:
            assert getattr(back, name) == value, name
    # What Gymnasium's AsyncVectorEnv does with the unpickled error: raise exctype(value).
    assert cls(back) is back


def test_the_cause_and_an_import_errors_name_travel_too() -> None:
    cause = ServerReplyError("gone", code="SESSION_ERROR", url="ws://127.0.0.1:1/ws")
    error = SubEnvError("sub-env 1 lost its session", index=1, url="ws://127.0.0.1:1/ws")
    error.__cause__ = cause
    back = pickle.loads(pickle.dumps(error))
    assert (back.index, back.url) == (1, "ws://127.0.0.1:1/ws")
    assert isinstance(back.__cause__, ServerReplyError)
    assert back.__cause__.code == "SESSION_ERROR"
    missing = MissingExtraError("pip install 'openenv-gym[atari]'", module="ale_py", extra="atari")
    back_missing = pickle.loads(pickle.dumps(missing))
    assert (back_missing.name, back_missing.module, back_missing.extra) == (
        "ale_py",
        "ale_py",
        "atari",
    )
    # A cause that cannot pickle (not one of ours) is left behind; the error still travels.
    foreign = RuntimeError("a library's error holding a lock")
    foreign.lock = multiprocessing.Lock()  # type: ignore[attr-defined]
    error.__cause__ = foreign
    back = pickle.loads(pickle.dumps(error))
    assert back.__cause__ is None
    assert str(back) == "sub-env 1 lost its session"
