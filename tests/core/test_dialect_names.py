"""One name per dialect (docs/architecture.md, "Dialect names"): the id a task records is its package's
name, and what earlier versions wrote (``glm130b``, ``usecase``, ``proctor.usecases``) is still read."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from proctor.core.dialect import Dialect
from proctor.core.registry import Registry, registry
from tests.conftest import REPO
from tests.support.cli_runs import QUESTIONS, jsonl, proctor, results, samples, write

DIALECTS = REPO / "src" / "proctor" / "dialects"


def test_every_built_in_dialect_is_named_as_its_package():
    """Each dialect's id is its package's and declaration's name (lm-eval keeps the tool's hyphen)."""
    names = {d.name.replace("-", "") for d in registry().ordered_dialects()}
    packages = {p.name for p in DIALECTS.iterdir() if (p / "__init__.py").exists()}
    declarations = {type(d).__module__.split(".")[2] for d in registry().ordered_dialects()}
    assert {p.parent.name for p in DIALECTS.glob("*/declaration.py")} == declarations
    assert names == packages == declarations == {"native", "probsem", "glm", "seahelm", "lmeval", "aisteer"}


def test_former_ids_resolve_to_the_dialect():
    reg = registry()
    assert reg.dialect("glm130b") is reg.dialect("glm") is not None
    assert reg.dialect("usecase") is reg.dialect("aisteer") is not None
    assert reg.dialect("glm").single_part_breakdowns  # what the CLI asks of an old run's GLM task
    assert reg.dialect("no-such-dialect") is None


def test_a_former_id_cannot_be_taken_by_another_dialect():
    class Old(Dialect):
        name = "old"
        former_names = ("older",)

    class Taker(Dialect):
        name = "older"

    reg = Registry()
    reg.add_dialect(Old())
    with pytest.raises(ValueError, match="'older' is registered twice"):
        reg.add_dialect(Taker())
    reg = Registry()
    reg.add_dialect(Taker())
    with pytest.raises(ValueError, match="'older' is registered twice"):
        reg.add_dialect(Old())


def _glm_quiz(folder: Path) -> None:
    rows = [
        {"inputs_pretokenized": f"Q: {q['question']} A:", "choices_pretokenized": q["choices"], "label": q["label"]}
        for q in QUESTIONS
    ]
    jsonl(folder / "DATA" / "quiz" / "prompt_1" / "test.jsonl", rows)
    write(folder / "tasks" / "quiz.yaml", 'name: quiz\ntype: mul\npath: quiz\nfile-pattern: {test: "**/test.jsonl"}\n')


def test_glm_runs_record_glm_and_an_old_glm130b_folder_resumes(tiny_model_dir, tmp_path):
    """A run folder written by an earlier version (``"dialect": "glm130b"``) continues with the same numbers
    and is rewritten with the current id; ``ls`` shows it too."""
    _glm_quiz(tmp_path)
    args = ("run", "tasks/quiz.yaml", "--data-path", "DATA", "--model", str(tiny_model_dir), "-q")
    proctor(*args, "-o", "run", cwd=tmp_path)
    new = results(tmp_path / "run")
    assert new["tasks"]["quiz/test"]["dialect"] == "glm"
    listed = proctor("ls", "tasks/quiz.yaml", cwd=tmp_path).stdout
    cells = [[c.strip() for c in line.split("│")] for line in listed.splitlines() if "quiz/test" in line]
    assert len(cells) == 1 and "glm" in cells[0], listed

    shutil.copytree(tmp_path / "run", tmp_path / "old")
    rewritten = 0
    for path in (tmp_path / "old").rglob("*.json"):
        text = path.read_text()
        if '"dialect": "glm"' in text:
            path.write_text(text.replace('"dialect": "glm"', '"dialect": "glm130b"'))
            rewritten += 1
    assert rewritten, "the run folder records no dialect"
    proctor("report", "old", cwd=tmp_path)  # an old folder is read as it is
    assert (tmp_path / "old" / "report.html").exists()

    printed = proctor(*args, "-o", "old", cwd=tmp_path).stdout
    old = results(tmp_path / "old")
    assert old["tasks"]["quiz/test"]["dialect"] == "glm"
    assert old["tasks"]["quiz/test"]["metrics"] == new["tasks"]["quiz/test"]["metrics"]
    assert [r["logprobs"] for r in samples(tmp_path / "old")] == [r["logprobs"] for r in samples(tmp_path / "run")]
    assert "quiz/test by _source" in printed  # GLM's one-part breakdown is printed, as for a new run


USE_CASE = """\
from proctor import UseCase


class Count(UseCase):
    def validate_evaluation_data(self, data):
        pass

    def generate(self, model_or_pipeline, tokenizer, gen_kwargs=None, runtime_overrides=None, **kwargs):
        return [{"id": row["id"]} for row in self.evaluation_data]

    def evaluate(self, generations):
        return {"n": float(len(generations))}


evaluation_data = "rows.jsonl"
evaluation_metrics = []
"""


def test_use_case_runs_record_aisteer(tiny_model_dir, tmp_path):
    jsonl(tmp_path / "uc" / "rows.jsonl", [{"id": str(i)} for i in range(3)])
    write(tmp_path / "uc" / "count_case.py", USE_CASE)
    proctor("run", "uc/count_case.py", "--model", str(tiny_model_dir), "-o", "run", "-q", cwd=tmp_path)
    task = results(tmp_path / "run")["tasks"]["count_case:Count"]
    assert task["dialect"] == "aisteer" and task["evaluations"] == {"n": 3.0}


@pytest.mark.fast
def test_the_former_import_path_still_imports_and_says_where_to_go():
    code = (
        "import json, warnings\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        "    from proctor.usecases import UseCase, Benchmark\n"
        "    from proctor.usecases.analysis import pareto_front\n"
        "import proctor.dialects.aisteer as new, proctor.dialects.aisteer.analysis as analysis\n"
        "print(json.dumps({'same': UseCase is new.UseCase and Benchmark is new.Benchmark\n"
        "                  and pareto_front is analysis.pareto_front,\n"
        "                  'warnings': [(w.category.__name__, str(w.message)) for w in seen]}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["same"]
    future = [message for category, message in out["warnings"] if category == "FutureWarning"]
    assert len(future) == 1 and "proctor.dialects.aisteer" in future[0], out["warnings"]
