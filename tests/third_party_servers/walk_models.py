"""The ``models.py`` of the first-release walk env (:mod:`.openenv_core_01_app`): dataclasses,
as ``openenv-core`` 0.1 envs ship them, with their bounds declared (``Annotated`` with
pydantic's ``Field``). Plain dataclasses, so both the 0.1 server's venv and the tests'
import them: the first release's ``create_fastapi_app`` takes any dataclass.

Example:
    >>> WalkAction(direction=2)
    WalkAction(direction=2)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field


@dataclass(kw_only=True)
class WalkAction:
    """The action: ``0`` left, ``1`` stay, ``2`` right."""

    direction: Annotated[int, Field(ge=0, le=2)]


@dataclass(kw_only=True)
class WalkObservation:
    """The observation (``reward`` and ``done`` travel beside it, as in the release)."""

    position: Annotated[int, Field(ge=-3, le=3)] = 0
    steps: Annotated[int, Field(ge=0, le=1000)] = 0
    done: bool = False
    reward: float | None = None
