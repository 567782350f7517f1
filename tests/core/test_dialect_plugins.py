"""A new dialect is a plug-in: an installed package that registers itself under the ``proctor.plugins``
entry-point group runs through discovery, the CLI, overrides and ``evaluate`` with no core file changed.

The toy dialect here reads ``.quiz`` files — one question per line, ``question | right answer | wrong
answer ...`` — and turns them into multiple-choice tasks. Its own option (``--quiz-prefix``) reaches its
loader through the CLI; the expected accuracy is computed in the test from the fake model's scores.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from proctor.core.model_requests import LoglikelihoodRequest
from tests.conftest import REPO
from tests.support.fakes import FakeModel

PLUGIN = """
from pathlib import Path
from typing import Annotated, Optional

from proctor.core.dialect import BaseOptions, Dialect, cli
from proctor.core.task import Task
from proctor.core.task_spec import TaskSpec


class QuizOptions(BaseOptions):
    quiz_prefix: Annotated[Optional[str], cli("--quiz-prefix", help="quiz files: text before each question.")] = None


class QuizDialect(Dialect[QuizOptions]):
    name = "quiz"
    order = 1
    Options = QuizOptions

    def files_in_folder(self, folder):
        return sorted(folder.rglob("*.quiz"))

    def claims_path(self, path):
        return path.suffix == ".quiz"

    def load(self, path, document, explicit, options, notes):
        prefix = options.quiz_prefix or "Q:"
        rows = path.parent / (path.stem + ".jsonl")
        import json
        with rows.open("w") as out:
            for line in path.read_text().splitlines():
                question, *answers = [part.strip() for part in line.split("|")]
                out.write(json.dumps({"question": question, "choices": answers, "gold": 0}) + "\\n")
        spec = TaskSpec.model_validate({
            "name": f"quiz/{path.stem}", "kind": "multiple_choice",
            "data": {"path": str(rows)},
            "prompt": prefix + " {{ question }}\\nA:", "choices": "{{ choices }}", "target": "{{ gold }}",
            "metrics": ["acc"],
        })
        return [Task(spec=spec, file=path, base_dir=path.parent, dialect=self.name)]


def register(registry):
    registry.add_dialect(QuizDialect())
"""

QUIZ = "Capital of France? | Paris | Rome | Oslo\nTwo plus two? | four | five\nColour of grass? | green | red | blue\n"


@pytest.fixture
def quiz_plugin(tmp_path, monkeypatch):
    """The toy dialect installed as a package with a ``proctor.plugins`` entry point (a dist-info folder)."""
    site = tmp_path / "site"
    (site / "proctor_quiz").mkdir(parents=True)
    (site / "proctor_quiz" / "__init__.py").write_text(PLUGIN)
    info = site / "proctor_quiz-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: proctor-quiz\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[proctor.plugins]\nquiz = proctor_quiz:register\n")
    monkeypatch.syspath_prepend(str(site))
    import proctor.core.registry as registry_module

    monkeypatch.setattr(registry_module, "_REGISTRY", None)  # rebuilt with the new plug-in
    yield site
    registry_module._REGISTRY = None


def _expected_accuracy(prefix: str) -> float:
    """acc written out: the gold choice has the highest summed log-prob under the fake model."""
    model = FakeModel()
    right = 0
    for line in QUIZ.splitlines():
        question, *answers = [part.strip() for part in line.split("|")]
        context = f"{prefix} {question}\nA:"
        scores = [r.logprob for r in model.loglikelihood([LoglikelihoodRequest(context, " " + a) for a in answers])]
        right += scores.index(max(scores)) == 0
    return right / len(QUIZ.splitlines())


@pytest.mark.fast
def test_an_installed_dialect_runs_through_evaluate(quiz_plugin, tmp_path):
    from proctor.api import evaluate, load_tasks
    from proctor.core.registry import registry

    assert "quiz" in registry().dialects  # found through its entry point, no core file names it
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "capitals.quiz").write_text(QUIZ)
    found = load_tasks([tmp_path / "tasks"])
    assert [(t.name, t.dialect) for t in found] == [("quiz/capitals", "quiz")]
    result = evaluate(
        found, FakeModel(), output_dir=tmp_path / "run", export=False, dialect_options={"quiz_prefix": "Question:"}
    )
    assert result.metric("quiz/capitals", "acc") == pytest.approx(_expected_accuracy("Question:"))
    assert result.tasks["quiz/capitals"]["dialect"] == "quiz"


def test_an_installed_dialect_adds_its_cli_options(quiz_plugin, tmp_path):
    (tmp_path / "capitals.quiz").write_text(QUIZ)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(quiz_plugin), str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    shown = subprocess.run(
        [sys.executable, "-m", "proctor.cli", "run", "--help"], capture_output=True, text=True, env=env
    )
    assert shown.returncode == 0 and "--quiz-prefix" in shown.stdout
    listed = subprocess.run(
        [sys.executable, "-m", "proctor.cli", "ls", str(tmp_path / "capitals.quiz")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert listed.returncode == 0 and "quiz/capitals" in listed.stdout, listed.stderr
    # its option given with no quiz task among those selected is refused by name, as built-in dialects' are
    (tmp_path / "rows.jsonl").write_text('{"q": "a", "a": "b"}\n')
    (tmp_path / "native.yaml").write_text(
        "name: n\nkind: generate\ndata: {path: rows.jsonl}\nprompt: '{{ q }}'\ntarget: '{{ a }}'\n"
    )
    refused = subprocess.run(
        [sys.executable, "-m", "proctor.cli", "validate", str(tmp_path / "native.yaml")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert refused.returncode == 0, refused.stderr  # validate takes no --quiz-prefix (run only)
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "proctor.cli",
            "run",
            str(tmp_path / "native.yaml"),
            "--quiz-prefix",
            "Q",
            "--model",
            "nonexistent-folder-xyz",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert ran.returncode == 2 and "--quiz-prefix" in ran.stderr and "quiz tasks only" in ran.stderr, ran.stderr


@pytest.mark.fast
def test_a_built_in_dialects_option_without_its_tasks_is_refused_by_its_flag(tmp_path):
    """The use-case dialect's --use-case-metric with only a native task selected would be ignored: refused,
    naming it."""
    (tmp_path / "rows.jsonl").write_text('{"q": "a", "a": "b"}\n')
    (tmp_path / "native.yaml").write_text(
        "name: n\nkind: generate\ndata: {path: rows.jsonl}\nprompt: '{{ q }}'\ntarget: '{{ a }}'\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "proctor.cli",
            "run",
            str(tmp_path / "native.yaml"),
            "--use-case-metric",
            "x",
            "--model",
            "nonexistent-folder-xyz",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert ran.returncode == 2 and "--use-case-metric" in ran.stderr and "aisteer tasks only" in ran.stderr, ran.stderr
