"""The fast loop (``pytest -m "not slow"``) still covers every module of ``openenv_gym``.

Tests marked ``slow`` (in place, or listed in ``tests/slow_tests.py``) leave the fast loop
(issue 28, item 8); this check keeps that from leaving a module untested there. It reads the
sources (no test runs): a module is covered when

- it has a doctest example and none of its doctests is listed slow (the doctests of
  ``openenv_gym`` run in the fast loop), or
- a test file with at least one test not marked or listed ``slow`` imports it (``import a.b``,
  ``from a.b import x``, ``from a import b``, or ``from a import x`` where package ``a``
  imports ``x`` from ``a.b``), or names it in a string (``importlib.import_module("a.b")``,
  ``python -m a`` for ``a.__main__``), or
- a covered module that is not a package imports it (the code a test runs runs it), or
- it is a package and a module below it is covered (importing that module runs it).

Example:
    >>> fast_test_names("import pytest\\n@pytest.mark.slow\\ndef test_a(): ...\\ndef test_b(): ...")
    ['test_b']
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

from tests.slow_tests import SLOW_TESTS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "openenv_gym"
SLOW_MARK = "pytest.mark.slow"


def module_names(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    names = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def _is_slow(node: ast.expr) -> bool:
    """Whether a decorator or a ``pytestmark`` value is (or lists) ``pytest.mark.slow``."""
    if isinstance(node, ast.List | ast.Tuple):
        return any(_is_slow(item) for item in node.elts)
    return ast.unparse(node) == SLOW_MARK


def fast_test_names(source: str, listed: Iterable[str] = ()) -> list[str]:
    """The test functions of a test file that are not marked ``slow`` (by the module's
    ``pytestmark``, their class or themselves) nor ``listed`` (every parameter set of it)."""
    tree = ast.parse(source)
    module_marks = [
        statement.value
        for statement in tree.body
        if isinstance(statement, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in statement.targets)
    ]
    if any(_is_slow(mark) for mark in module_marks):
        return []

    def tests_in(body: Iterable[ast.stmt]) -> list[str]:
        names = []
        for node in body:
            if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                if not any(_is_slow(d) for d in node.decorator_list):
                    names += tests_in(node.body)
            elif (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and node.name.startswith("test")
                and not any(_is_slow(d) for d in node.decorator_list)
            ):
                names.append(node.name)
        return names

    whole = {name for name in listed if "[" not in name}
    return [name for name in tests_in(tree.body) if name not in whole]


def _absolute(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from ... import`` reads, made absolute (``package`` holds the file)."""
    if node.level == 0:
        return node.module or ""
    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*parts, *([node.module] if node.module else [])])


def imported_from(source: str, package: str) -> dict[str, str]:
    """What a package's ``__init__`` imports from its own modules: name -> module."""
    names = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom):
            module = _absolute(node, package)
            names |= {alias.asname or alias.name: module for alias in node.names}
    return names


def used_modules(source: str, modules: dict[str, Path], package: str = "") -> set[str]:
    """The package's modules that a file imports (anywhere in it) or runs with
    ``python -m``; ``package`` resolves relative imports."""
    used: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            used |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            used.add(base)
            used |= {f"{base}.{alias.name}" for alias in node.names}
            init = modules.get(base)
            if init is not None and init.name == "__init__.py":
                exports = imported_from(init.read_text(), base)
                used |= {exports[a.name] for a in node.names if a.name in exports}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            used |= {node.value, f"{node.value}.__main__"}  # importlib, python -m
    return used & set(modules)


def has_doctest(source: str) -> bool:
    """Whether a module has a doctest example that runs (one not marked ``+SKIP``)."""
    return any(
        line.strip().startswith(">>>") and "+SKIP" not in line for line in source.splitlines()
    )


def uncovered_modules(
    root: Path = ROOT, slow: dict[str, tuple[str, ...]] = SLOW_TESTS
) -> list[str]:
    """The modules no fast test covers (see the module docstring for what covers one);
    ``slow`` lists the tests slow by measurement (``tests/slow_tests.py``)."""
    modules = module_names(root)
    covered = {
        name
        for name, path in modules.items()
        if has_doctest(path.read_text()) and path.relative_to(root).as_posix() not in slow
    }
    for path in sorted((root / "tests").rglob("*.py")):
        source = path.read_text()
        listed = slow.get(path.relative_to(root).as_posix(), ())
        if path.name == "conftest.py" or fast_test_names(source, listed):
            covered |= used_modules(source, modules)
    imports = {
        name: used_modules(path.read_text(), modules, name.rpartition(".")[0])
        for name, path in modules.items()
        if path.name != "__init__.py"
    }
    todo = list(covered)
    while todo:
        added = imports.get(todo.pop(), set()) - covered
        covered |= added
        todo += added
    for name in list(covered):
        parts = name.split(".")
        covered |= {".".join(parts[:end]) for end in range(1, len(parts))}
    return sorted(set(modules) - covered)


def test_every_module_is_covered_by_the_fast_loop() -> None:
    uncovered = uncovered_modules()
    assert uncovered == [], (
        f"no test in the fast loop (pytest -m 'not slow') covers {', '.join(uncovered)}: give "
        "each a doctest, or import it in a test that is not marked slow"
    )


def test_every_test_listed_slow_exists() -> None:
    """A renamed test would silently come back to the fast loop: each entry must name one."""
    modules = {path.relative_to(ROOT).as_posix(): name for name, path in module_names().items()}
    missing = []
    for file, names in SLOW_TESTS.items():
        path = ROOT / file
        if not path.is_file():
            missing.append(file)
            continue
        tree = ast.parse(path.read_text())
        defined = {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        }
        for name in names:
            base = name.partition("[")[0]
            if file in modules:  # a doctest: the module or one of its functions or classes
                module = modules[file]
                found = base == module or base.removeprefix(f"{module}.") in defined
            else:
                found = base in defined
            if not found:
                missing.append(f"{file}::{name}")
    assert missing == []


def test_every_docs_block_listed_slow_exists() -> None:
    """The docs' blocks are named by line: an edit above one moves it out of the list."""
    from tests.docs.test_docs import BLOCKS

    names = {block.name for block in BLOCKS}
    listed = [name for name in SLOW_TESTS.get("tests/docs/test_docs.py", ()) if "[" in name]
    assert listed
    assert [name for name in listed if name.partition("[")[2].rstrip("]") not in names] == []


def test_the_check_sees_slow_marks_at_each_level() -> None:
    """The check can fail: slow marks on the module, a class, a function are all seen."""
    assert (
        fast_test_names("import pytest\npytestmark = [pytest.mark.slow]\ndef test_a(): ...") == []
    )
    assert fast_test_names("import pytest\npytestmark = pytest.mark.timeout(9)\ndef test_a(): ...")
    slow_class = "import pytest\n@pytest.mark.slow\nclass TestA:\n    def test_a(self): ..."
    assert fast_test_names(slow_class) == []
    assert fast_test_names(slow_class.replace("@pytest.mark.slow\n", "")) == ["test_a"]
    two = "def test_a(): ...\ndef test_b(): ..."
    assert fast_test_names(two, listed=["test_a"]) == ["test_b"]
    assert fast_test_names(two, listed=["test_a[1]"]) == ["test_a", "test_b"]


def test_the_check_finds_a_module_no_fast_test_uses(tmp_path: Path) -> None:
    """The check can fail: a made-up package whose one test is slow leaves two modules out
    (the one it imports and the one only that one imports)."""
    package = tmp_path / PACKAGE / "sub"
    package.mkdir(parents=True)
    files = {
        "__init__.py": '"""Top."""\n',
        "sub/__init__.py": '"""Sub."""\nfrom openenv_gym.sub.used import VALUE\n',
        "sub/used.py": '"""Used.\n\n>>> 1 + 1\n2\n"""\nfrom .inner import VALUE\n',
        "sub/inner.py": '"""Inner: the doctested module imports it."""\nVALUE = 1\n',
        "sub/alone.py": '"""Alone.\n\n>>> 1  # doctest: +SKIP\n"""\nfrom . import beside\n',
        "sub/beside.py": '"""Only alone imports it."""\n',
        "sub/__main__.py": '"""Run."""\n',
    }
    for name, text in files.items():
        (tmp_path / PACKAGE / name).write_text(text)
    tests = tmp_path / "tests"
    tests.mkdir()
    slow = (
        "import pytest\nfrom openenv_gym.sub import alone\n\n@pytest.mark.slow\ndef test_a(): ...\n"
    )
    (tests / "test_alone.py").write_text(slow)
    (tests / "test_main.py").write_text("def test_main():\n    run('-m', 'openenv_gym.sub')\n")
    assert uncovered_modules(tmp_path, {}) == ["openenv_gym.sub.alone", "openenv_gym.sub.beside"]
    (tests / "test_alone.py").write_text(slow.replace("@pytest.mark.slow\n", ""))
    assert uncovered_modules(tmp_path, {}) == []
    listed = {
        "tests/test_alone.py": ("test_a",),
        "openenv_gym/sub/used.py": ("openenv_gym.sub.used",),
    }
    assert uncovered_modules(tmp_path, listed) == [
        "openenv_gym.sub.alone",
        "openenv_gym.sub.beside",
        "openenv_gym.sub.inner",
        "openenv_gym.sub.used",
    ]
    (tests / "test_main.py").unlink()
    assert uncovered_modules(tmp_path, {}) == ["openenv_gym.sub.__main__"]
