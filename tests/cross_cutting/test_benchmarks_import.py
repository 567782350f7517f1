"""The scripts in benchmarks/ still import what they name from proctor, so that a module split or a moved
name breaks a test here rather than the next benchmark run.

The scripts are compiled, not imported: importing one changes ``sys.path`` at module level, and reaches
none of its proctor imports anyway, which sit inside functions (and inside child-process scripts held as
strings). So every ``from proctor... import name`` and ``import proctor...`` in a script, in function
bodies and in code strings alike, is found with ``ast`` and looked up.
"""

from __future__ import annotations

import ast
import importlib
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO

BENCHMARKS = REPO / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("*.py"))


def _is_proctor(module: str | None) -> bool:
    return module is not None and (module == "proctor" or module.startswith("proctor."))


def _code_strings(tree: ast.AST) -> list[ast.AST]:
    """String constants that are Python code importing proctor (a script a benchmark runs in a child process)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "proctor" in node.value:
            try:
                found.append(ast.parse(textwrap.dedent(node.value)))
            except SyntaxError:  # prose or a command line, not code
                continue
    return found


def _proctor_imports(path: Path) -> set[tuple[str, str | None]]:
    """(module, name) for each ``from module import name``, (module, None) for each ``import module``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: set[tuple[str, str | None]] = set()
    for part in (tree, *_code_strings(tree)):
        for node in ast.walk(part):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and _is_proctor(node.module):
                out.update((str(node.module), alias.name) for alias in node.names)
            elif isinstance(node, ast.Import):
                out.update((alias.name, None) for alias in node.names if _is_proctor(alias.name))
    return out


IMPORTS = sorted(
    ((script.name, module, name) for script in SCRIPTS for module, name in _proctor_imports(script)),
    key=lambda item: (item[0], item[1], item[2] or ""),
)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_benchmark_compiles(script):
    compile(script.read_text(encoding="utf-8"), str(script), "exec")


def test_the_scan_finds_the_benchmarks_proctor_imports():
    """The check itself: the scripts are there, and their imports (in functions and code strings) are found."""
    assert SCRIPTS
    found = {(script, module, name) for script, module, name in IMPORTS}
    assert ("forward_plan.py", "proctor.models.hf.model", "HFModel") in found  # inside a function
    assert ("lmeval_speed.py", "proctor.api", "evaluate") in found  # inside a child-process script string


@pytest.mark.parametrize("script,module,name", IMPORTS, ids=lambda value: str(value))
def test_benchmark_proctor_import_resolves(script, module, name):
    try:
        imported = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and not _is_proctor(exc.name):  # an optional dependency of that module (lm_eval, torch)
            pytest.importorskip(exc.name)
        raise
    if name is None or hasattr(imported, name):
        return
    try:
        importlib.import_module(f"{module}.{name}")  # `from proctor.models.hf import sharding`: a submodule
    except ModuleNotFoundError:
        pytest.fail(f"benchmarks/{script}: `from {module} import {name}`, but {module} has no '{name}'")
