"""Exceptions that survive pickling whole: :class:`PicklableError`, the base of
:class:`~openenv_gym.errors.OpenEnvGymError` and of the package's internal exceptions.

Gymnasium's ``AsyncVectorEnv`` sends a worker's error to the parent through a pickling queue
and re-raises it there as ``raise exctype(value)``; this module makes both work for errors
whose constructors take keyword-only attributes. It imports nothing of the package:
:mod:`openenv_gym.errors` builds its hierarchy on it.

Example:
    >>> import pickle
    >>> err = PicklableError("no reply")
    >>> err.after = 2.0  # an attribute the constructor does not take
    >>> back = pickle.loads(pickle.dumps(err))
    >>> type(back).__name__, str(back), back.after
    ('PicklableError', 'no reply', 2.0)
"""

from __future__ import annotations

import pickle
from typing import Any


class _ErrorClass(type):
    """The type of our error classes: calling one with an instance of itself returns it.

    Gymnasium's ``AsyncVectorEnv`` re-raises a worker's error in the parent as
    ``raise exctype(value)``, ``value`` being the unpickled error; our constructors take
    keyword-only attributes, so that call would fail with a ``TypeError`` instead of
    raising the server's error.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and type(args[0]) is cls:
            return args[0]
        return super().__call__(*args, **kwargs)


def _rebuilt(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    """An error of class ``cls`` with ``args`` and the attributes ``state``, no ``__init__``."""
    error = cls.__new__(cls, *args)
    error.args = args
    for name, value in state.items():
        setattr(error, name, value)
    return error


def _travels(value: Any) -> bool:
    try:
        pickle.dumps(value)
    except Exception:
        return False
    return True


class PicklableError(Exception, metaclass=_ErrorClass):
    """An exception that pickles whole: the base of :class:`OpenEnvGymError` and of the
    package's internal exceptions.

    It unpickles to the same class, message (``args``) and attributes, keyword-only ones
    included, with its ``__cause__`` when that pickles too; an attribute that cannot pickle
    (a live process, a socket) travels as its ``repr``. Gymnasium's ``AsyncVectorEnv`` sends
    a worker's error to the parent through a pickling queue: an error that did not pickle
    never arrived, and the parent waited for it forever.

    Example:
        >>> import pickle
        >>> from openenv_gym.errors import ServerReplyError
        >>> err = ServerReplyError("full", code="CAPACITY_REACHED", url="ws://127.0.0.1:1/ws")
        >>> back = pickle.loads(pickle.dumps(err))
        >>> type(back).__name__, str(back), back.code, back.url
        ('ServerReplyError', 'full', 'CAPACITY_REACHED', 'ws://127.0.0.1:1/ws')
        >>> ServerReplyError(back) is back  # what AsyncVectorEnv's ``exctype(value)`` does
        True
    """

    def __reduce__(self) -> tuple[Any, ...]:
        state = dict(self.__dict__)
        if isinstance(self, ImportError):  # name and path live outside __dict__
            state.update(name=self.name, path=self.path)
        state = {k: v if _travels(v) else repr(v) for k, v in state.items()}
        if self.__cause__ is not None and _travels(self.__cause__):
            state["__cause__"] = self.__cause__
        return (_rebuilt, (type(self), self.args, state))


__all__ = ["PicklableError"]
