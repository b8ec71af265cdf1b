"""The optional-import guard: a missing extra is named, everything else passes unchanged."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from openenv_gym.errors import MissingExtraError
from openenv_gym.extras import EXTRAS, Provider, install_command, is_installed, optional_imports

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


@pytest.fixture
def missing_optional(monkeypatch: pytest.MonkeyPatch) -> str:
    """An optional module (as far as the table says) that is really not installed here; the
    dev install has every extra, the fresh-venv test covers the real ones."""
    name = "openenv_gym_absent_extra"
    monkeypatch.setitem(EXTRAS, name, Provider("absent-extra", "atari"))
    return name


def test_a_missing_optional_module_names_its_extra(missing_optional: str) -> None:
    with pytest.raises(MissingExtraError) as caught, optional_imports("the Atari server"):
        importlib.import_module(missing_optional)
    assert caught.value.extra == "atari"
    assert caught.value.module == missing_optional
    assert str(caught.value) == (
        "the Atari server needs absent-extra, which is not installed. "
        "Install the extra: pip install 'openenv-gym[atari]'"
    )
    assert isinstance(caught.value, ImportError)


def test_a_missing_submodule_names_the_extra_of_its_package(missing_optional: str) -> None:
    with pytest.raises(MissingExtraError, match=r"openenv-gym\[atari\]"), optional_imports("x"):
        importlib.import_module(f"{missing_optional}.sub")


def test_other_import_errors_pass_unchanged() -> None:
    with pytest.raises(ModuleNotFoundError, match="no_such_thing"), optional_imports("x"):
        import no_such_thing  # type: ignore[import-not-found]  # noqa: F401


def test_an_installed_package_failing_inside_is_not_hidden() -> None:
    with pytest.raises(ImportError, match="broken"), optional_imports("x"):
        raise ImportError("broken inside numpy", name="numpy")


def test_a_same_named_directory_is_not_an_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ray").mkdir()  # /tmp/ray, Ray's session directory, imports as a namespace
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "ray", raising=False)
    if is_installed("ray") and "namespace" not in str(sys.modules.get("ray")):
        assert is_installed("ray")  # the real ray wins over a namespace directory
    else:
        assert not is_installed("ray")
    monkeypatch.chdir(tmp_path)
    assert not is_installed("no_such_thing")


def test_every_extra_exists_in_pyproject() -> None:
    text = PYPROJECT.read_text()
    for provider in EXTRAS.values():
        assert f"\n{provider.extra} = [" in text, provider
    assert install_command("chess") == "pip install 'openenv-gym[chess]'"
