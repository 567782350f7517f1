"""results.json has a typed schema (runs/results_schema.py): every dialect's results validate against it,
the writer refuses a file that does not match (before writing anything), and docs/results.md documents
every field of the schema."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from proctor.api import evaluate, load_tasks
from proctor.runs.results import RunWriter
from proctor.runs.results_schema import (
    GroupResult,
    Results,
    ResultsSchemaError,
    RollupNode,
    check_results_json,
)
from proctor.runs.task_result import MetricEntry, TaskResult
from tests.conftest import EXAMPLES, REPO, shared_path
from tests.support.fakes import FakeModel, write_tasks


def _validated(run_dir: Path) -> Results:
    return check_results_json((run_dir / "results.json").read_text(encoding="utf-8"))


@pytest.mark.fast
def test_native_results_with_groups_validate(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=6, n_gen=4)
    result = evaluate([tasks], FakeModel(), output_dir=tmp_path / "run", export=False)
    saved = _validated(result.run_dir)
    assert saved.status == "complete" and saved.groups and saved.environment is not None
    task = saved.tasks["mc_alpha"]
    assert task.dialect == "native" and task.mc_format == "loglikelihood" and task.higher_is_better["acc"] is True
    assert isinstance(task.metrics["acc"], MetricEntry) and task.requests.type == "loglikelihood"


@pytest.mark.fast
def test_probsem_results_with_exports_and_unscored_metrics_validate(tmp_path):
    folder = tmp_path / "inputs"
    shutil.copytree(shared_path("examples", "probsem", "inputs"), folder)
    saved = _validated(evaluate([folder], FakeModel(), output_dir=tmp_path / "run", export=False).run_dir)
    assert saved.tasks["test_A"].exports and saved.tasks["test_B"].metrics["distribution_acc"].n_unscored == 1


@pytest.mark.fast
def test_glm_results_with_breakdowns_validate(tmp_path):
    yaml_path = EXAMPLES / "glm130b" / "lambada_style" / "lambada_style.yaml"
    saved = _validated(
        evaluate(
            [yaml_path],
            FakeModel(),
            output_dir=tmp_path / "run",
            export=False,
            dialect_options={"trust_task_code": True},
        ).run_dir
    )  # its module: is a task class
    task = saved.tasks["lambada_style/validation"]
    assert task.dialect == "glm" and task.breakdown_stats["_source"]["Accuracy"].n_parts == 2
    assert task.data.fallback and saved.warnings  # no --data-path: the YAML's folder, said in a warning


@pytest.mark.fast
def test_seahelm_results_with_bootstrap_and_rollup_validate(tmp_path):
    data = shared_path("data", "nusax_senti").parent  # the example's data, given as the run's data folder
    folder = EXAMPLES / "seahelm" / "seahelm_tasks" / "nlu" / "nusax_sentiment"
    result = evaluate(
        [folder],
        FakeModel(),
        select=["nusax-sentiment/id"],
        output_dir=tmp_path / "run",
        limit=4,
        variables={"PROCTOR_DATA": str(data)},
        dialect_options={"trust_task_code": True, "seahelm_runs": 2, "is_base_model": True},
        export=False,
    )
    saved = _validated(result.run_dir)
    primary = saved.tasks["nusax-sentiment/id"].metrics["normalized_accuracy"]
    assert primary.primary and primary.n_runs == 2 and len(primary.bootstrap) == 30
    assert isinstance(saved.rollup, RollupNode) and saved.rollup.levels[-2:] == ["group", "task"]
    assert saved.tasks["nusax-sentiment/id"].rollup.metric == "normalized_accuracy"


def test_lm_eval_results_validate(tmp_path):
    pytest.importorskip("lm_eval")
    import tests.support.lmeval_quiz as quiz

    folder, data = tmp_path / "quiz", tmp_path / "data"
    folder.mkdir()
    data.mkdir()
    for name, text in [
        ("_template_yaml", quiz.TEMPLATE),
        ("quiz_plain.yaml", quiz.TASK_A),
        ("_quiz.yaml", quiz.GROUP.replace("  - quiz_shouted\n", "")),
    ]:
        (folder / name).write_text(text)
    (data / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in quiz.ROWS))
    (data / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in quiz.SHOTS))
    tasks = load_tasks([folder], options={"lmeval_data": {"example/quiz:small": str(data)}})
    saved = _validated(evaluate(tasks, FakeModel(), output_dir=tmp_path / "run", export=False).run_dir)
    task = saved.tasks["quiz_plain"]
    assert task.dialect == "lm-eval" and "acc,none" in task.metrics and task.higher_is_better == {"acc,none": True}
    assert isinstance(saved.groups["quiz"], GroupResult)


def test_use_case_results_validate(tiny_model, tmp_path):
    from tests.support.aisteer_runs import run

    saved = _validated(run(tiny_model, tmp_path / "run").run_dir)
    task = saved.tasks["CommonsenseMCQA"]
    assert (
        task.dialect == "aisteer"
        and task.kind == "generate"
        and task.evaluations
        and task.requests.computed is not None
        and task.n_rows == 5
    )


@pytest.mark.fast
def test_the_writer_refuses_results_that_do_not_match_and_keeps_the_last_good_file(tmp_path):
    writer = RunWriter(tmp_path / "run")
    good = json.loads(
        json.dumps(
            {
                "proctor_version": "0",
                "created": "2025-01-01T00:00:00+00:00",
                "command": None,
                "model": {"backend": "fake"},
                "status": "running",
                "tasks": {},
                "groups": {},
            }
        )
    )
    writer.write_results(good)
    before = (tmp_path / "run" / "results.json").read_text()
    bad = {
        **good,
        "tasks": {
            "t": {
                "kind": "multiple_choice",
                "dialect": "native",
                "source": None,
                "version": "0",
                "hash": "h",
                "n_samples": "many",
                "metrics": {},
                "requests": {"unique": 1},
                "timing": {"total_seconds": 0},
            }
        },
    }
    with pytest.raises(ResultsSchemaError, match=r"tasks\.t\.n_samples"):
        writer.write_results(bad)
    with pytest.raises(ResultsSchemaError, match="surprise"):
        writer.write_results({**good, "surprise": 1})  # the top level is closed: a new field must be documented first
    assert (tmp_path / "run" / "results.json").read_text() == before
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "results.json",
        "samples.jsonl",
    ]  # no temporary file left


def _fields(model) -> list[str]:
    schema = model.model_json_schema()
    if "$ref" in schema:  # a recursive model (the roll-up) is a reference into its definitions
        schema = schema["$defs"][schema["$ref"].rsplit("/", 1)[1]]
    return list(schema["properties"])


@pytest.mark.parametrize("model", [Results, TaskResult, MetricEntry, GroupResult, RollupNode], ids=lambda m: m.__name__)
def test_docs_results_md_documents_every_field(model):
    text = (REPO / "docs" / "results.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"`([A-Za-z_]+)`", text))
    missing = [f for f in _fields(model) if f not in documented]
    assert not missing, f"docs/results.md does not document {model.__name__} fields {missing}"
