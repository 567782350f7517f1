"""Plug-ins load lazily: a native YAML run imports no dialect package but the native one.

Each command runs ``proctor`` in a fresh interpreter through a small wrapper (this file's ``_WRAPPER``,
not part of proctor) that writes the names in ``sys.modules`` to a file when the interpreter exits.
The built-in dialects are declared by ``proctor.dialects.<name>.declaration`` modules (with the leaves they import,
``options`` and ``claims``); the rest of their packages loads only when one of their files is read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

DIALECTS = ("aisteer", "glm", "lmeval", "native", "probsem", "seahelm")
DECLARATION_SIDE = ("declaration", "options", "claims")  # what every run imports of each dialect (and its __init__)

# runs ``proctor ARGS`` as ``python -m proctor.cli`` does; at exit writes sys.modules' names to the file in argv[1]
_WRAPPER = """
import atexit, json, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
from proctor.cli import main
main()
"""


def imported_by(*args: str, cwd: Path, tmp_path: Path) -> set[str]:
    """The modules a ``proctor ARGS`` process imported (it must succeed)."""
    record = tmp_path / "modules.json"
    environment = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-c", _WRAPPER, str(record), *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return set(json.loads(record.read_text()))


def dialects_in(modules: set[str]) -> set[str]:
    """The dialects ``modules`` hold more of than the declaration side (``proctor.dialects.<name>.<module>``)."""
    parts = [m.split(".") for m in modules if m.startswith("proctor.dialects.")]
    return {p[2] for p in parts if len(p) > 3 and p[3] not in DECLARATION_SIDE}


@pytest.mark.fast
def test_a_native_validate_imports_only_the_native_dialect(tmp_path):
    modules = imported_by("validate", "examples/quickstart/tasks.yaml", cwd=REPO, tmp_path=tmp_path)
    assert dialects_in(modules) == {"native"}
    assert {f"proctor.dialects.{d}.declaration" for d in DIALECTS} <= modules  # every dialect was asked


def test_a_native_folder_imports_only_the_native_dialect(tmp_path):
    """A folder: every dialect is asked for its files in it (probsem's .txt, say) and none but native loads."""
    modules = imported_by("ls", "examples/quickstart", cwd=REPO, tmp_path=tmp_path)
    assert dialects_in(modules) == {"native"}


def test_a_native_run_imports_only_the_native_dialect(tmp_path, tiny_model_dir):
    """Model loading, scoring, roll-ups and exports included."""
    run = tmp_path / "run"
    modules = imported_by(
        "run",
        "examples/quickstart/tasks.yaml",
        "--model",
        str(tiny_model_dir),
        "--limit",
        "2",
        "--output",
        str(run),
        "--quiet",
        cwd=REPO,
        tmp_path=tmp_path,
    )
    assert (run / "results.json").is_file()
    assert dialects_in(modules) == {"native"}


def test_a_glm_file_imports_the_glm_dialect(tmp_path):
    """The check sees a dialect that is used: a GLM-130B file loads the glm package (and not the others)."""
    modules = imported_by("ls", "examples/glm130b/lambada_style/lambada_style.yaml", cwd=REPO, tmp_path=tmp_path)
    assert dialects_in(modules) == {"glm"}
