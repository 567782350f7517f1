"""No import circle in src/proctor, counting the modules named in strings too (issue 48).

test_architecture.py checks the circles of import statements (grimp); a plug-in names its implementation by a
``"module:attr"`` string that a helper imports later (``core/references.py``), which no import statement shows.
The graph here (``tests/support/import_graph.py``) has an edge for those strings too.
"""

from __future__ import annotations

from tests.conftest import REPO
from tests.support.import_graph import cycles, import_graph

SOURCE = REPO / "src"


def test_no_import_circle_in_proctor_counting_named_modules():
    graph = import_graph(SOURCE, "proctor")
    assert len(graph) > 250  # every module was read
    found = cycles(graph)
    assert found == [], "import circles (modules named in strings included):\n" + "\n".join(
        " <-> ".join(component) for component in found
    )


def test_the_graph_holds_the_modules_named_in_strings():
    """A declaration's ``"module:attr"`` reference is an edge: the edges this test exists for are seen."""
    graph = import_graph(SOURCE, "proctor")
    assert "proctor.dialects.native.loader" in graph["proctor.dialects.native.declaration"]
    assert "proctor.models.builtin_backends" in graph["proctor.models.declaration"]


def test_the_detector_finds_a_circle_through_a_string(tmp_path):
    """A temporary package: ``a`` imports ``b`` inside a function, ``b`` names ``c`` by a reference string, ``c``
    names ``a`` in an f-string's head; ``d`` imports ``a`` (no circle) and mentions ``cyc.d`` in prose."""
    package = tmp_path / "proctor"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "a.py").write_text("def f():\n    from proctor.sub import b\n    return b\n")
    (package / "sub" / "b.py").write_text('TARGET = "proctor.sub.c:run"\n')
    (package / "sub" / "c.py").write_text('def run(name):\n    return f"proctor.sub.a:{name}"\n')
    (package / "sub" / "d.py").write_text(
        '"""Not a name: proctor.sub.d is imported by nobody."""\nimport logging\n\nfrom . import a\n\n'
        'KEYS = ["proctor.run_dir"]\nlog = logging.getLogger("proctor.sub.c")\n'
    )
    graph = import_graph(tmp_path, "proctor")
    assert graph["proctor.sub.d"] == {"proctor.sub.a"}
    assert cycles(graph) == [["proctor.sub.a", "proctor.sub.b", "proctor.sub.c"]]
    (package / "sub" / "c.py").write_text("def run(name):\n    return name\n")
    assert cycles(import_graph(tmp_path, "proctor")) == []
