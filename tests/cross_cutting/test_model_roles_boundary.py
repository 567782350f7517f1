"""Dialect code never makes a model from a string (issue 48): the run's model and the models in roles (a judge, a
metric's model, a steering base) are made in ``api/`` (``model_resolver.resolve_model``, ``model_roles``) and handed
to the dialects. Read from the source with ``ast``: no module under ``src/proctor/dialects`` imports or calls
``load_model``, ``load_judge`` or ``resolve_model`` (imports inside functions, aliases and attribute calls
included)."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.fast

MAKERS = {"load_model", "load_judge", "resolve_model"}  # what makes a model from a spec string
DIALECTS = REPO / "src" / "proctor" / "dialects"


def model_makers(source: str) -> list[str]:
    """Where ``source`` imports or calls one of ``MAKERS``: 'line N: what', in line order."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            found += [(node.lineno, f"imports {a.name}") for a in node.names if a.name in MAKERS]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, f"imports {a.name}") for a in node.names if a.name.rsplit(".", 1)[-1] in MAKERS]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name in MAKERS:
                found.append((node.lineno, f"calls {name}"))
    return [f"line {line}: {what}" for line, what in sorted(found)]


def test_no_dialect_module_makes_a_model():
    files = sorted(DIALECTS.rglob("*.py"))
    assert len(files) > 50  # the dialects' modules were read, not an empty folder
    offenders = {
        str(path.relative_to(REPO)): hits for path in files if (hits := model_makers(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


@pytest.mark.parametrize(
    "planted, expected",
    [
        (
            "def judge(spec):\n    from proctor.models.registry import load_model\n    return load_model(spec)\n",
            ["line 2: imports load_model", "line 3: calls load_model"],
        ),
        (
            "from proctor.api.model_resolver import resolve_model as make\n",
            ["line 1: imports resolve_model"],
        ),
        (
            "import proctor.models.registry as registry\n\nmodel = registry.load_model('smollm2')\n",
            ["line 3: calls load_model"],
        ),
        (
            "from proctor.models import judge\n\nmodel = judge.load_judge('openai:x', base_url='http://127.0.0.1')\n",
            ["line 3: calls load_judge"],
        ),
        ("from proctor.api.model_roles import active_roles\n\nactive_roles().model('judge', 'smollm2')\n", []),
    ],
)
def test_the_check_finds_a_planted_model_maker(planted, expected):
    assert model_makers(planted) == expected


def test_the_check_fails_on_a_planted_dialect_module(tmp_path):
    """The walk over the dialects' files reports a module that would make its own judge."""
    planted = tmp_path / "judge_step.py"
    source = (DIALECTS / "seahelm" / "judge_step.py").read_text(encoding="utf-8")
    planted.write_text(
        source + "\n\ndef _own_judge(name):\n    from proctor.models.registry import load_model\n\n"
        "    return load_model(name)\n",
        encoding="utf-8",
    )
    hits = model_makers(planted.read_text(encoding="utf-8"))
    lines = len(source.splitlines())
    assert hits == [f"line {lines + 4}: imports load_model", f"line {lines + 6}: calls load_model"]
