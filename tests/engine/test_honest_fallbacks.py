"""Fallbacks and ignored options are visible: a warning in results.json (and on the console), or an error."""

from __future__ import annotations

import json

import pytest

from proctor import evaluate
from proctor.core.errors import ProctorError
from tests.support.fakes import FakeModel, write_tasks
from tests.support.malformed_cases import GLM, GLM_ROWS, jsonl

pytestmark = pytest.mark.fast


def test_glm_task_without_data_path_says_where_it_read(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test.jsonl").write_text(jsonl(GLM_ROWS))
    (tmp_path / "glm.yaml").write_text(GLM)
    result = evaluate([tmp_path / "glm.yaml"], FakeModel(), output_dir=tmp_path / "run", export=False)
    (warning,) = result.tasks["glmtask/test"]["warnings"]
    assert "${DATA_PATH} is not set" in warning and str(tmp_path / "data" / "test.jsonl") in warning
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert saved["warnings"] == [f"glmtask/test: {warning}"] and "--data-path" in warning
    # with --data-path (GLM's DATA_PATH) the first source is used: no warning
    again = evaluate(
        [tmp_path / "glm.yaml"], FakeModel(), output_dir=tmp_path / "run2", data_path=tmp_path, export=False
    )
    assert "warnings" not in again.tasks["glmtask/test"] and "warnings" not in again.results


def test_mc_shuffle_on_a_log_likelihood_model_is_a_recorded_warning_or_an_error(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=4, n_gen=0)
    result = evaluate(
        [tasks], FakeModel(), output_dir=tmp_path / "run", select=["mc_alpha"], mc_shuffle_seed=3, export=False
    )
    assert result.tasks["mc_alpha"]["mc_format"] == "loglikelihood"
    assert any("--mc-shuffle was ignored" in w for w in result.results["warnings"])
    with pytest.raises(ProctorError, match="--mc-shuffle"):
        evaluate(
            [tasks],
            FakeModel(),
            output_dir=tmp_path / "run2",
            select=["mc_alpha"],
            mc_format="loglikelihood",
            mc_shuffle_seed=3,
        )


def test_probsem_temperature_must_be_finite(tmp_path):
    from proctor.api import load_tasks

    (tmp_path / "p.txt").write_text("prompt\n")
    (tmp_path / "p_A.json").write_text(
        json.dumps({"pretext": "", "posttext": "", "queries": ["a", "b"], "context": [{"text": "x", "expected": 0}]})
    )
    for bad in (float("inf"), float("nan"), 0.0, -1.0):
        with pytest.raises(ProctorError, match="--temp"):
            load_tasks([tmp_path], options={"probsem_temp": bad})
    assert load_tasks([tmp_path], options={"probsem_temp": 0.5})[0].spec.choice_temperature == 0.5


def test_few_shot_count_larger_than_the_pool_is_an_error(tmp_path):
    from proctor.api import load_tasks
    from proctor.core.errors import TaskDefinitionError
    from proctor.engine.prepare import prepare_task

    tasks = write_tasks(tmp_path / "tasks", n_mc=4, n_gen=0)
    text = (
        (tasks / "tasks.yaml")
        .read_text()
        .replace(
            "metrics: [acc, acc_norm, brier_score]", "metrics: [acc, acc_norm, brier_score]\n    fewshot: {count: 3}"
        )
    )
    (tasks / "tasks.yaml").write_text(text)
    (task,) = load_tasks([tasks], select=["mc_alpha"])
    assert len(prepare_task(task, {}).samples[0].shots) == 3  # 4 rows: 3 others for each sample
    (tasks / "tasks.yaml").write_text(text.replace("count: 3", "count: 4"))
    (task,) = load_tasks([tasks], select=["mc_alpha"])
    with pytest.raises(TaskDefinitionError, match="asks for 4 few-shot examples, but the pool has only 3") as info:
        prepare_task(task, {})
    assert info.value.field == "fewshot.count"
