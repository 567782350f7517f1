"""The layer contract of docs/architecture.md: import-linter's contracts in pyproject.toml, and no
import cycle between any two modules (imports inside functions included)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.support.import_graph import cycles

importlinter = pytest.importorskip("importlinter")
grimp = pytest.importorskip("grimp")


def test_import_contracts_hold():
    done = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "broken" not in done.stdout.lower().split("contracts:")[-1] or " 0 broken" in done.stdout, done.stdout


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module in grimp's graph (import-linter's reading of the
    imports; test_import_cycles.py reads them itself, strings included): the same Tarjan search."""
    return cycles({m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules})


def test_no_import_cycles_between_modules():
    graph = grimp.build_graph("proctor")
    assert _cycles(graph) == []


def test_the_cycle_check_finds_a_cycle(tmp_path, monkeypatch):
    """The check itself: a package whose two modules import each other (one inside a function) is a cycle."""
    package = tmp_path / "cyclic_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cyclic_pkg import b\n")
    (package / "b.py").write_text("def f():\n    from cyclic_pkg import a\n    return a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _cycles(grimp.build_graph("cyclic_pkg")) == [["cyclic_pkg.a", "cyclic_pkg.b"]]
