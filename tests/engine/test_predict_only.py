"""``--predict-only`` (engine/predict_only.py): the answers stored and logged, no metric computed; the same folder run
again without it scores the stored answers with no model call, to the numbers of a run that scored at once."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from proctor.api import evaluate, load_tasks
from proctor.core.errors import ProctorError
from proctor.engine.predict_only import NOTE, unscored
from proctor.engine.prepare import prepare_task
from tests.support.fakes import FakeModel, write_tasks


def _samples(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]


def _scored(results: dict) -> dict:
    """What a scored run's numbers are: each task's metrics and n, the groups' metrics."""
    return {
        "tasks": {name: (t["n_samples"], t["metrics"]) for name, t in results["tasks"].items()},
        "groups": {name: g["metrics"] for name, g in results["groups"].items()},
    }


@pytest.mark.fast
def test_predict_only_keeps_the_answers_and_a_later_run_scores_them_without_a_model_call(tmp_path):
    folder = write_tasks(tmp_path / "tasks", n_mc=6, n_gen=4)
    calls = tmp_path / "calls.log"
    first = evaluate([folder], FakeModel(log_file=calls), output_dir=tmp_path / "run", predict_only=True)
    results = first.results
    assert results["predict_only"] is True
    assert all(task["metrics"] == {} for task in results["tasks"].values())  # absent, not zero
    assert results["groups"]["science"]["metrics"] == {} and "rollup" not in results
    assert NOTE in results["warnings"]
    assert [t["n_samples"] for t in results["tasks"].values()] == [6, 6, 4, 4]
    records = _samples(tmp_path / "run")
    assert len(records) == 20 and all(r["metrics"] == {} for r in records)
    by_task = {r["task"]: r for r in records}
    assert len(by_task["mc_alpha"]["logprobs"]) == 4 and isinstance(by_task["gen_gamma"]["generation"], str)
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["attempts"][-1]["predict_only"] is True and "predict_only" not in manifest["options"]
    answered = calls.read_text()
    assert answered  # the model answered every request once

    # the same folder without --predict-only: scored from the store, no request sent
    later = FakeModel(log_file=calls)
    scored = evaluate([folder], later, output_dir=tmp_path / "run")
    assert later.calls == [] and calls.read_text() == answered
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["attempts"][-1]["responses"]["computed"] == 0
    assert manifest["attempts"][-1]["responses"]["from_run_store"] > 0
    assert "predict_only" not in scored.results and "warnings" not in scored.results

    # the numbers and records of a run that scored at once
    direct = evaluate([folder], FakeModel(), output_dir=tmp_path / "direct")
    assert _scored(scored.results) == _scored(direct.results)
    assert scored.results["tasks"]["mc_alpha"]["metrics"]["acc"]["value"] is not None
    assert _samples(tmp_path / "run") == _samples(tmp_path / "direct")


class _ScoresInOwnCode:
    """A task class computing its own corpus metrics (as SEA-HELM's does), which cannot leave them out."""

    def corpus_metrics(self) -> dict:
        return {"own": {"value": 1.0}}


class _CanSkip(_ScoresInOwnCode):
    skipped = False

    def skip_scoring(self) -> None:
        self.skipped = True


@pytest.mark.fast
def test_a_task_whose_own_code_scores_is_refused_unless_it_can_skip_scoring(tmp_path):
    folder = write_tasks(tmp_path / "tasks", n_mc=2, n_gen=2)
    prepared = prepare_task(load_tasks([folder])[0], {})
    assert prepared.metrics and unscored([prepared])[0].metrics == ()
    refused = dataclasses.replace(prepared, handler=_ScoresInOwnCode())
    with pytest.raises(ProctorError, match=r"--predict-only: task\(s\) mc_alpha \(native\) score their answers"):
        unscored([refused])
    handler = _CanSkip()
    assert unscored([dataclasses.replace(prepared, handler=handler)])[0].metrics == () and handler.skipped


def test_lm_eval_tasks_keep_their_filtered_answers_without_process_results(tmp_path):
    pytest.importorskip("lm_eval")
    from tests.support.cli_runs import jsonl, write
    from tests.support.lmeval_quiz import ROWS, SHOTS, TASK_A, TEMPLATE

    write(tmp_path / "lmquiz" / "_template_yaml", TEMPLATE)
    write(tmp_path / "lmquiz" / "quiz_plain.yaml", TASK_A)
    jsonl(tmp_path / "lmdata" / "test.jsonl", ROWS)
    jsonl(tmp_path / "lmdata" / "train.jsonl", SHOTS)
    options = {"lmeval_data": {"example/quiz:small": str(tmp_path / "lmdata")}}
    kept = evaluate(
        [tmp_path / "lmquiz"], FakeModel(), output_dir=tmp_path / "run", dialect_options=options, predict_only=True
    )
    assert kept.results["tasks"]["quiz_plain"]["metrics"] == {}
    records = _samples(tmp_path / "run")
    assert len(records) == len(ROWS)
    assert all(r["lmeval_metrics"] == {} and r["metrics"] == {} and r["resps"] for r in records)
    model = FakeModel()
    scored = evaluate([tmp_path / "lmquiz"], model, output_dir=tmp_path / "run", dialect_options=options)
    direct = evaluate([tmp_path / "lmquiz"], FakeModel(), output_dir=tmp_path / "direct", dialect_options=options)
    assert model.calls == []
    assert scored.results["tasks"]["quiz_plain"]["metrics"] == direct.results["tasks"]["quiz_plain"]["metrics"]
    assert "acc,none" in direct.results["tasks"]["quiz_plain"]["metrics"]
