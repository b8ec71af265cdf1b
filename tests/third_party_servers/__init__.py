"""OpenEnv servers of the kinds people ship, for tests: real servers on 127.0.0.1.

* :mod:`.fastapi_apps`: plain FastAPI apps with hand-written ``/reset``, ``/step``, ``/state``
  and ``/health`` routes and typed Pydantic bodies (``/openapi.json`` holds the action's
  schema); one whose step body is the action's fields directly; one with ``/schema`` but no
  ``/ws``.
* :mod:`.openenv_core_01`: a server built on the first release, ``openenv-core==0.1.1`` (HTTP
  only, dataclass models), run by the Python of ``.venv-openenv-core-0.1`` (that release and
  the official ``openenv`` package both install an ``openenv_core`` module: they cannot share
  a venv; ``bash scripts/setup.sh dev`` creates it).

All of them serve the same small game, :mod:`.walk`.
"""
