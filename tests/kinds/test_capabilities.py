"""Handler capabilities are typed protocols, handlers get an executor instead of importing the engine."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest

import proctor
from proctor.api import evaluate
from proctor.core.model_requests import GenerateRequest
from proctor.kinds import capabilities as C
from proctor.runs.executor import ModelExecutor
from proctor.runs.store import STORE_FILE, Lookup, ResponseStore
from tests.support.fakes import FakeModel

pytestmark = pytest.mark.fast

SRC = Path(proctor.__file__).parent


def _engine_imports(path: Path) -> list[str]:
    """Every import of proctor.engine in ``path``, at module level or inside functions."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
        found += [
            f"{path.relative_to(SRC)}:{node.lineno} {n}"
            for n in names
            if n == "proctor.engine" or n.startswith("proctor.engine.")
        ]
    return found


def test_no_handler_or_dialect_module_imports_the_engine():
    offenders = [
        hit
        for folder in ("kinds", "dialects")
        for path in sorted((SRC / folder).rglob("*.py"))
        for hit in _engine_imports(path)
    ]
    assert offenders == []


def test_no_hasattr_probing_of_handlers_in_the_engine():
    for path in [*sorted((SRC / "engine").glob("*.py")), *sorted((SRC / "api").glob("*.py"))]:
        text = path.read_text(encoding="utf-8")
        assert "hasattr(handler" not in text and "hasattr(built.handler" not in text, path
        assert "getattr(built.handler" not in text and "getattr(handler" not in text, path


def test_the_dialect_handlers_declare_what_they_provide():
    from proctor.dialects.glm.handler import GLMModuleTask
    from proctor.dialects.lmeval.handler import (
        LmEvalChoiceTask,
        LmEvalGenerateTask,
        LmEvalRollingTask,
    )
    from proctor.dialects.seahelm.task import SeaHelmTask
    from proctor.kinds.custom import GenerationTask, MultipleChoiceTask

    for cls in (SeaHelmTask, LmEvalChoiceTask, LmEvalGenerateTask, LmEvalRollingTask, GLMModuleTask):
        assert (
            issubclass(cls, C.LoadsSamples) and issubclass(cls, C.PredictsSamples) and issubclass(cls, C.CorpusMetrics)
        )
    assert issubclass(SeaHelmTask, C.ReportsJudgeUsage) and issubclass(SeaHelmTask, C.UsesChoiceFormulation)
    assert issubclass(GLMModuleTask, C.ResultExtras) and GLMModuleTask.scores_itself is True
    assert issubclass(MultipleChoiceTask, C.UsesChoiceFormulation) and not issubclass(
        GenerationTask, C.UsesChoiceFormulation
    )
    assert not issubclass(GenerationTask, C.LoadsSamples)


def test_model_executor_is_an_executor_and_stores_under_each_models_fingerprint(tmp_path):
    model, judge = FakeModel("evaluated"), FakeModel("judge", salt="j")
    requests = [GenerateRequest(f"prompt {i}", max_tokens=3) for i in range(5)]
    with ResponseStore(tmp_path / STORE_FILE) as store:
        executor = ModelExecutor(model, Lookup(store), chunk_size=2)
        assert isinstance(executor, C.Executor) and executor.stored and not ModelExecutor(model).stored
        first = executor.run("generate", requests)
        judged = executor.for_model(judge).run("generate", requests)
        assert [r.text for r in first] == [r.text for r in FakeModel("evaluated").generate(requests)]
        assert [r.text for r in judged] == [r.text for r in FakeModel("judge", salt="j").generate(requests)]
        assert [n for _, n in model.calls] == [2, 2, 1] and executor.computed == 5 and store.count() == 10
        again = ModelExecutor(FakeModel("evaluated"), Lookup(store), chunk_size=2)
        assert again.run("generate", requests) == first and again.model.calls == [] and again.computed == 0


PROBE = """
    from proctor.core.model_requests import GenerateRequest
    from proctor.kinds.custom import GenerationTask


    class Probe(GenerationTask):
        def predict_samples(self, samples, prompts, executor):
            requests = [GenerateRequest(p, max_tokens=4) for p in prompts]
            results = executor.run("generate", requests, executor.progress)
            self.count, self.stored = len(results), executor.stored
            return [self.outcome(s, r.text) for s, r in zip(samples, results)]

        def corpus_metrics(self):
            return {"probe_count": {"value": float(self.count), "stderr": None}}

        def result_extras(self):
            return {"probe_stored": self.stored}

        def judge_usage(self):
            return {"requests": 7}
"""

TASKS = """
    tasks:
      - name: probe
        kind: generate
        data:
          path: rows.jsonl
          id: id
        prompt: "Q: {{ q }}\\nA:"
        target: "{{ a }}"
        task_class: probe.py:Probe
        metrics: [exact_match]
"""


def test_a_task_class_gets_the_run_store_through_its_executor(tmp_path):
    rows = [{"id": f"r{i}", "q": f"question {i}", "a": "paris"} for i in range(3)]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "probe.py").write_text(textwrap.dedent(PROBE), encoding="utf-8")
    (tmp_path / "tasks.yaml").write_text(textwrap.dedent(TASKS), encoding="utf-8")
    model = FakeModel()
    result = evaluate(
        [tmp_path / "tasks.yaml"], model, output_dir=tmp_path / "run", dialect_options={"trust_task_code": True}
    )
    task = result.tasks["probe"]
    expected = FakeModel().generate([GenerateRequest(f"Q: question {i}\nA:", max_tokens=4) for i in range(3)])
    assert task["metrics"]["exact_match"]["value"] == sum(r.text == "paris" for r in expected) / 3
    assert task["metrics"]["probe_count"]["value"] == 3.0 and task["probe_stored"] is True
    assert task["judge_usage"] == {"requests": 7}
    assert sum(n for _, n in model.calls) == 3
    rerun = FakeModel()
    again = evaluate(
        [tmp_path / "tasks.yaml"], rerun, output_dir=tmp_path / "run", dialect_options={"trust_task_code": True}
    )
    assert rerun.calls == [] and again.tasks["probe"]["metrics"] == task["metrics"]  # answered by the run store
