"""The layer contract of docs/architecture.md: import-linter's contracts in pyproject.toml, and no
import cycle between any two modules (imports inside functions included)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

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
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    adjacency = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(adjacency):
        if root in index:
            continue
        work = [(root, iter(adjacency[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in adjacency:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(adjacency[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


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
