"""Each dialect package declares itself in a leaf ``declaration`` module that imports only ``core`` (issue 48).

The registry imports every declaration on every run (``core/registry.py`` scans ``proctor.dialects``), so what a
declaration imports is loaded by every run: only ``proctor.core`` and the dialect's own ``options`` / ``claims``
leaves, which import only ``core`` themselves (the dialect's modules import those without importing the
declaration, which names them by ``"module:attr"`` strings). Read from the source, imports inside functions
included; the running side of it is ``test_lazy_plugins.py``.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import pytest

from proctor.core.references import lazy, resolve
from tests.conftest import REPO
from tests.support.import_graph import import_graph

SOURCE = REPO / "src"
DIALECTS = sorted(p.parent.name for p in (SOURCE / "proctor" / "dialects").glob("*/__init__.py"))
LEAVES = ("options", "claims")  # what a declaration may import of its own package


@functools.cache
def source_graph() -> dict[str, set[str]]:
    """The import statements of src/proctor (no strings: what importing a module loads)."""
    return import_graph(SOURCE, "proctor", strings=False)


def closure(graph: dict[str, set[str]], start: str) -> set[str]:
    """``start`` and every module it imports, directly or not."""
    seen, todo = {start}, [start]
    while todo:
        for target in graph[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def test_every_dialect_package_has_a_declaration():
    assert DIALECTS == ["aisteer", "glm", "lmeval", "native", "probsem", "seahelm"]
    for name in DIALECTS:
        assert (SOURCE / "proctor" / "dialects" / name / "declaration.py").is_file(), name


@pytest.mark.parametrize("name", DIALECTS)
def test_a_declaration_imports_only_core_and_its_leaves(name):
    graph = source_graph()
    package = f"proctor.dialects.{name}"
    allowed = {f"{package}.declaration"} | {f"{package}.{leaf}" for leaf in LEAVES}
    outside = {m for m in closure(graph, f"{package}.declaration") if not m.startswith("proctor.core.")}
    assert outside <= allowed, sorted(outside - allowed)


def test_the_backends_declaration_imports_only_core():
    graph = source_graph()
    outside = {m for m in closure(graph, "proctor.models.declaration") if not m.startswith("proctor.core.")}
    assert outside == {"proctor.models.declaration"}


def test_importing_every_declaration_loads_no_dialect_module_beyond_it():
    """Importing a declaration runs its package's ``__init__`` first: that must load none of the dialect (aisteer's
    public names load on first use). In a fresh interpreter, as a run starts."""
    declarations = [f"proctor.dialects.{name}.declaration" for name in DIALECTS]
    script = f"import importlib, json, sys\nfor name in {declarations!r}:\n    importlib.import_module(name)\n"
    script += "print(json.dumps(sorted(m for m in sys.modules if m.startswith('proctor.dialects.'))))"
    done = subprocess.run(
        [sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(SOURCE)}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    declaration_side = {f"proctor.dialects.{name}{part}" for name in DIALECTS for part in ("", ".declaration")}
    declaration_side |= {f"proctor.dialects.{name}.{leaf}" for name in DIALECTS for leaf in LEAVES}
    loaded = set(json.loads(done.stdout))
    assert {f"proctor.dialects.{name}.declaration" for name in DIALECTS} <= loaded
    assert loaded <= declaration_side, sorted(loaded - declaration_side)


def test_a_reference_resolves_when_called():
    assert resolve("proctor.core.references:resolve") is resolve
    assert resolve("proctor.core.contributions:Registry.add_dialect").__name__ == "add_dialect"
    split = lazy("proctor.core.contributions:split_model_spec")
    assert split.__name__ == "split_model_spec"
    assert split("vllm:org/name") == ("vllm", "org/name")


@pytest.mark.parametrize(
    "reference, message",
    [
        ("proctor.core.references", "is not a reference"),
        ("proctor.core.references:nothing_here", "has no attribute 'nothing_here'"),
    ],
)
def test_a_bad_reference_says_what_is_wrong(reference, message):
    with pytest.raises(ValueError, match=message):
        resolve(reference)
    with pytest.raises(ValueError, match=message):
        lazy(reference)()
