"""SEA-HELM's judge is the run's ``judge`` role (api/model_roles.py): ``evaluate(model_roles={"judge": ...})``
replaces ``seahelm_judge`` (and the default, the evaluated model), and results.json's ``roles`` names it."""

from __future__ import annotations

import dataclasses

from proctor.api import evaluate, load_tasks
from tests.conftest import shared_path
from tests.support.aisteer_fakes import ScriptedJudge
from tests.support.fakes import FakeModel
from tests.support.seahelm_fixtures import mt_bench_copy

SEAHELM_MT_BENCH = "aisingapore/MultiTurn-Chat-MT-Bench"


def _mt_bench(tmp_path, **options):
    config = shared_path("examples", "seahelm", "seahelm_tasks", "multi_turn", "mt_bench", "config.yaml")
    options = {"seahelm_data": {SEAHELM_MT_BENCH: str(mt_bench_copy(tmp_path))}, **options}
    task = next(t for t in load_tasks([config], options=options) if t.name == "mt-bench/en")
    config = task.spec.handler.options.config
    short = {**config, "languages": {"en": {**config["languages"]["en"], "max_tokens": 8}}}
    return dataclasses.replace(task, spec=task.spec.with_handler_options(config=short))


def test_judge_role_replaces_the_seahelm_judge_and_the_evaluated_model(tmp_path):
    """The role's judge always answers [[A]]: in the first order the evaluated model is A and wins, in the swapped
    order the baseline is A and wins; each pair of verdicts disagrees, so every question is a tie."""
    judge = ScriptedJudge(lambda prompt: "Verdict: [[A]]")
    evaluated = FakeModel("evaluated")
    named = FakeModel("named-judge", salt="n")  # the dialect option's judge: replaced, never asked
    result = evaluate(
        [_mt_bench(tmp_path, seahelm_judge=named)],
        evaluated,
        output_dir=tmp_path / "run",
        export=False,
        model_roles={"judge": judge},
    )
    metrics = result.tasks["mt-bench/en"]["metrics"]
    assert len(judge.prompts) == 8 and named.calls == []  # 2 questions x 2 turns x 2 orders
    assert metrics["judge_requests"]["value"] == 8 and metrics["judge_errors"]["value"] == 0
    assert metrics["weighted_win_rate"]["value"] == 50.0
    assert result.results["roles"]["judge"] == {
        "model": "scripted-judge",
        "source": "--model-role",
        "fingerprint": judge.fingerprint,
    }
