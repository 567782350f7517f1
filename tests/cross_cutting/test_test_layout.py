"""The tests' own layout (tests/README.md): test files sit beside the package they test
(``tests/<package>/``, ``tests/dialects/<dialect>/``, ``cross_cutting`` for what spans packages), and
a test file imports only ``tests.conftest`` and the helpers of ``tests.support``, never another test file."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.fast

TESTS = REPO / "tests"
SOURCE = REPO / "src" / "proctor"
# an import of a tests module written anywhere, code strings run in a subprocess included
TESTS_IMPORT = re.compile(r"(?:from|import)\s+(tests(?:\.\w+)+)")


def _test_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "data" not in p.relative_to(TESTS).parts[:2])


def _imported_test_modules(path: Path) -> set[str]:
    names = set(TESTS_IMPORT.findall(path.read_text(encoding="utf-8")))
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "tests":
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names if alias.name.split(".")[0] == "tests"}
    return names


def _allowed(module: str) -> bool:
    return module == "tests.conftest" or module == "tests.support" or module.startswith("tests.support.")


def test_a_test_file_imports_only_conftest_and_support():
    wrong = {
        str(path.relative_to(REPO)): sorted(m for m in _imported_test_modules(path) if not _allowed(m))
        for path in _test_files()
    }
    assert {k: v for k, v in wrong.items() if v} == {}


def test_the_import_check_sees_every_form(tmp_path):
    """The check itself: a top-level, a nested and a code-string import of another test file are all seen."""
    path = tmp_path / "test_x.py"
    text = (  # "T." stands for the package, so that this file does not import what it writes
        "import T.runs.test_report\n"
        "def f():\n    from T.dialects.glm.test_glm import write\n"
        "CODE = 'from T.models.test_hf_backend import reference'\n"
        "from T.support.browser import browser\n"
    )
    path.write_text(text.replace("T.", "tests."))
    assert sorted(m for m in _imported_test_modules(path) if not _allowed(m)) == [
        "tests.dialects.glm.test_glm",
        "tests.models.test_hf_backend",
        "tests.runs.test_report",
    ]


def test_test_files_sit_beside_the_package_they_test():
    packages = {p.name for p in SOURCE.iterdir() if (p / "__init__.py").exists()}
    dialects = {p.name for p in (SOURCE / "dialects").iterdir() if (p / "__init__.py").exists()}
    misplaced = []
    for path in _test_files():
        parts = path.relative_to(TESTS).parts
        if parts[0] == "dialects":  # one dialect's tests in its folder; what every dialect keeps, beside them
            ok = (len(parts) == 3 and parts[1] in dialects) or len(parts) == 2
        else:
            ok = len(parts) == 2 and (parts[0] in packages or parts[0] == "cross_cutting")
        if not ok:
            misplaced.append("/".join(parts))
    assert misplaced == []
