"""Which packages of ``src/proctor/`` the fast tier touches, read from the test files' source without importing them.

A test file touches the package of its folder (``tests/<package>/`` → ``proctor.<package>``,
``tests/dialects/<name>/`` → ``proctor.dialects.<name>``) when at least one of its tests is marked fast. Fast
code also touches each package it imports (``from proctor.prompts.fewshot import ...`` touches
``proctor.prompts``), in an import statement or in the source of a script it runs (a string holding
``from proctor.usecases import ...``). Fast code is the whole file where ``pytestmark`` names
``pytest.mark.fast``, else the bodies of the functions and classes marked fast: a file with one fast test may
import a package for its slow tests alone.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable
from pathlib import Path

# An import in the source of a script a test runs (``python -c CODE``, a file it writes).
_IMPORT_IN_TEXT = re.compile(r"\b(?:from|import)\s+(proctor(?:\.\w+)*)")

# Folders whose sub-packages are packages of their own for this purpose (each dialect is one).
CONTAINERS = ("dialects",)


def packages(src: Path) -> list[str]:
    """The packages of ``src/proctor`` the fast tier must touch: the top-level ones, and each dialect."""
    root = src / "proctor"
    found = []
    for folder in sorted(p for p in root.iterdir() if (p / "__init__.py").is_file()):
        if folder.name in CONTAINERS:
            subs = sorted(sub for sub in folder.iterdir() if (sub / "__init__.py").is_file())
            found += [f"proctor.{folder.name}.{sub.name}" for sub in subs]
        else:
            found.append(f"proctor.{folder.name}")
    return found


def _is_fast_mark(node: ast.AST) -> bool:
    """``pytest.mark.fast`` (or ``mark.fast``), called or not."""
    if isinstance(node, ast.Call):
        node = node.func
    return isinstance(node, ast.Attribute) and node.attr == "fast" and _names_mark(node.value)


def _names_mark(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "mark"
    return isinstance(node, ast.Name) and node.id == "mark"


def _module_mark(tree: ast.Module) -> bool:
    """Whether a module-level ``pytestmark`` (one mark, or a list or tuple of them) includes the fast mark."""
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets):
            marks = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
            if any(_is_fast_mark(mark) for mark in marks):
                return True
    return False


def fast_code(source: str) -> list[ast.AST]:
    """The parts of a module that run as fast tests: the module itself if ``pytestmark`` is fast, else each
    function or class marked fast (empty: no fast test here)."""
    tree = ast.parse(source)
    if _module_mark(tree):
        return [tree]
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and any(_is_fast_mark(decorator) for decorator in node.decorator_list)
    ]


def imported_packages(code: Iterable[ast.AST], known: Iterable[str]) -> set[str]:
    """The packages of ``known`` that ``code`` imports, at any depth (``proctor.dialects.glm.metrics`` →
    ``proctor.dialects.glm``; ``from proctor import prompts`` → ``proctor.prompts``)."""
    names: set[str] = set()
    for node in (inner for part in code for inner in ast.walk(part)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names |= set(_IMPORT_IN_TEXT.findall(node.value))
    return {package for package in known if any(n == package or n.startswith(package + ".") for n in names)}


@functools.lru_cache(maxsize=None)
def _fast_code_in(path: Path) -> tuple[ast.AST, ...]:
    # Both checks of tests/cross_cutting/test_fast_tier.py read every test file: parse each once a session.
    return tuple(fast_code(path.read_text(encoding="utf-8")))


def folder_package(test_file: Path, tests: Path, known: Iterable[str]) -> str | None:
    """The package a test folder is named after (``tests/dialects/glm/x.py`` → ``proctor.dialects.glm``), if any."""
    parts = test_file.relative_to(tests).parts[:-1]
    for depth in (2, 1):
        name = "proctor." + ".".join(parts[:depth])
        if len(parts) >= depth and name in known:
            return name
    return None


def touched(tests: Path, src: Path) -> dict[str, list[str]]:
    """Each package of ``src/proctor`` → the fast test files (relative to ``tests``) that touch it."""
    known = packages(src)
    touching: dict[str, list[str]] = {package: [] for package in known}
    for test_file in sorted(tests.rglob("test_*.py")):
        if "support" in test_file.relative_to(tests).parts:
            continue
        code = _fast_code_in(test_file)
        if not code:
            continue
        reached = imported_packages(code, known)
        folder = folder_package(test_file, tests, known)
        if folder is not None:
            reached.add(folder)
        for package in reached:
            touching[package].append(test_file.relative_to(tests).as_posix())
    return touching


def fast_files(tests: Path) -> set[str]:
    """The test files (relative to ``tests``) with at least one fast test, as the scan above sees them."""
    return {
        f.relative_to(tests).as_posix()
        for f in tests.rglob("test_*.py")
        if "support" not in f.relative_to(tests).parts and _fast_code_in(f)
    }
