"""What a judge ran with is recorded in the task's settings (model, generation settings, scale, the rubric's
sha256), so ``compare`` names a changed judge; a judge that is the evaluated model itself is a run warning
(red team 14: 253, 247)."""

from __future__ import annotations

import hashlib
import re

import pytest

from proctor.runs.task_settings import run_settings, settings_differences, shown_difference
from tests.support.aisteer_fakes import ScriptedJudge
from tests.support.fakes import FakeModel

RUBRIC = "Rate the answer to {prompt}: {response}"


def _case(metric):
    from proctor.dialects.aisteer import UseCase

    class Ask(UseCase):
        _EVALUATION_REQ_KEYS = ("id", "q")

        def validate_evaluation_data(self, row):
            pass

        def generate(self, model_or_pipeline, tokenizer=None, gen_kwargs=None, runtime_overrides=None, **kwargs):
            return [{"response": f"answer {r['id']}", "q": r["q"]} for r in self.evaluation_data]

        def evaluate(self, generations):
            return {
                m.name: m(responses=[g["response"] for g in generations], prompts=[g["q"] for g in generations])
                for m in self.evaluation_metrics
            }

    return Ask([{"id": i, "q": f"question {i}"} for i in range(4)], [metric])


def _run(metric, model, out):
    from proctor.dialects.aisteer.runfile import run_use_cases

    return run_use_cases(_case(metric), model, output_dir=out).results


def _judge(prompt: str) -> str:
    return '```json\n{"score": %d}\n```' % (int(re.search(r"answer (\d)", prompt).group(1)) + 1)


def test_the_judges_settings_and_rubric_are_recorded_and_compared(tmp_path):
    from proctor.dialects.aisteer.judge import LLMJudgeMetric

    judge = ScriptedJudge(_judge)
    metric = LLMJudgeMetric(judge, RUBRIC, gen_kwargs={"temperature": 0.3, "max_new_tokens": 50})
    results = _run(metric, FakeModel("evaluated"), tmp_path / "a")
    task = results["tasks"]["Ask"]
    assert task["metrics"]["LLMJudgeMetric.mean_score"]["value"] == pytest.approx(2.5)  # 1, 2, 3, 4
    rendered = RUBRIC + "\n\n" + metric.format_instructions
    assert task["settings"]["judges"] == [
        {
            "metric": "LLMJudgeMetric",
            "model": "scripted-judge",
            "generation": {"max_new_tokens": 50, "temperature": 0.3, "num_return_sequences": 1},
            "max_retries": 5,
            "scale": [1, 5],
            "rubric": hashlib.sha256(rendered.encode()).hexdigest()[:16],
            "parser": "json",
        }
    ]
    # another temperature: compare names the judges setting
    again = LLMJudgeMetric(ScriptedJudge(_judge), RUBRIC, gen_kwargs={"temperature": 0.7, "max_new_tokens": 50})
    other = _run(again, FakeModel("evaluated"), tmp_path / "b")
    differ, unknown = settings_differences(run_settings(results), run_settings(other), ["Ask"])
    assert [
        (d["setting"], d["a"][0]["generation"]["temperature"], d["b"][0]["generation"]["temperature"]) for d in differ
    ] == [("judges", 0.3, 0.7)] and unknown == []
    # the console names the judge and the setting that changed, not the keys the two share
    assert shown_difference(differ[0]["a"], differ[0]["b"]) == "LLMJudgeMetric: generation: A " + (
        '{"max_new_tokens": 50, "num_return_sequences": 1, "temperature": 0.3}, B {"max_new_tokens": 50, '
        '"num_return_sequences": 1, "temperature": 0.7}'
    )


def test_a_truthfulqa_judge_records_its_greedy_settings_and_prompt():
    from proctor.dialects.aisteer.truthfulqa import TRUTHFULNESS_PROMPT, Truthfulness

    metric = Truthfulness(ScriptedJudge(lambda p: "yes"), max_new_tokens=5)
    assert metric.judge_settings() == {
        "metric": "Truthfulness",
        "model": "scripted-judge",
        "generation": {"do_sample": False, "max_new_tokens": 5},
        "rubric": hashlib.sha256(TRUTHFULNESS_PROMPT.encode()).hexdigest()[:16],
        "parser": "yes/no",
    }


def test_a_judge_that_is_the_evaluated_model_is_a_run_warning(tmp_path):
    from proctor.dialects.aisteer.judge import LLMJudgeMetric

    parser = lambda text: 3.0  # noqa: E731  (the fake model writes no JSON)
    model = FakeModel("evaluated")
    results = _run(LLMJudgeMetric(model, RUBRIC, structured_output=False, parser=parser), model, tmp_path / "a")
    assert [w for w in results["warnings"] if "is the evaluated model itself" in w] == [
        "the judge 'evaluated' is the evaluated model itself (the same fingerprint): a model grading its own answers "
        "tends to favour them, so the judged metrics are not an independent judgement; give another judge with "
        "--model-role judge=MODEL"
    ]
    # the control: another judge, silent
    other = FakeModel("judge", salt="j")
    results = _run(LLMJudgeMetric(other, RUBRIC, structured_output=False, parser=parser), model, tmp_path / "b")
    assert not any("evaluated model itself" in w for w in results.get("warnings") or [])
