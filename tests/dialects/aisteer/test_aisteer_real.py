"""CommonsenseMCQA on the embedded default model over the first 40 of the first 100 real CommonsenseQA rows
(three shuffled runs each: 120 generations, enough for every metric to be recomputed independently)."""

from __future__ import annotations

import pytest

from tests.conftest import shared_path
from tests.support.aisteer_reference import independent_accuracy, independent_bias, independent_ece

pytestmark = pytest.mark.slow

DATA = ("examples", "aisteer360", "notebooks", "benchmarks", "commonsense_mcqa", "data", "evaluation_qa.first100.jsonl")


@pytest.fixture(scope="module")
def default_model():
    from proctor.models.registry import load_model

    return load_model("smollm2", batch_size=16)


def _run(model, num_samples=-1):
    from proctor.dialects.aisteer import CommonsenseMCQA, MCQAAccuracy, MCQACalibration, MCQAPositionalBias

    case = CommonsenseMCQA(
        shared_path(*DATA),
        [MCQAAccuracy(), MCQAPositionalBias(), MCQACalibration()],
        num_shuffling_runs=3,
        seed=555,
        num_samples=num_samples,
    )
    # The model answers "A. ..." first: two new tokens hold the letter and keep the run to minutes on a CPU.
    generations = case.generate(model, gen_kwargs={"max_new_tokens": 2}, max_retries=0)
    return case, generations, case.evaluate(generations)


ROWS = 40


def test_commonsense_mcqa_on_default_model(default_model):
    case, generations, scores = _run(default_model, num_samples=ROWS)
    assert len(case.evaluation_data) == ROWS and len(generations) == 3 * ROWS
    assert {g["run"] for g in generations} == {0, 1, 2}
    resp = [g["response"] for g in generations]
    ref = [g["reference_answer"] for g in generations]
    qid = [g["question_id"] for g in generations]
    assert sum(r is not None for r in resp) >= 2 * ROWS  # the instruct model answers with a letter
    acc = scores["MCQAAccuracy"]
    assert (acc["trial_mean"], acc["trial_std"], acc["question_mean"], acc["question_std"]) == pytest.approx(
        independent_accuracy(resp, ref, qid)
    )
    bias = scores["MCQAPositionalBias"]
    assert (bias["mean"], bias["std"]) == pytest.approx(independent_bias(resp, qid))
    assert 0.0 <= acc["trial_mean"] <= 1.0 and bias["mean"] > 0.0
    # Calibration out of the box: each reply's confidence is the model's probability of its letter.
    answered = [g for g in generations if g["response"] is not None]
    assert all(g["confidence"] is not None and 0.0 < g["confidence"] <= 1.0 for g in answered)
    calibration = scores["MCQACalibration"]
    assert calibration["num_valid"] == len(answered)
    assert calibration["ece"] == pytest.approx(
        independent_ece([g["confidence"] for g in answered], [g["response"] == g["reference_answer"] for g in answered])
    )

    # Same seed again: identical prompts; generating again (on the first 10 rows, in different batches)
    # gives identical replies, and the scores recomputed from them are identical.
    from proctor.dialects.aisteer import CommonsenseMCQA, MCQAAccuracy, MCQAPositionalBias

    rebuilt = CommonsenseMCQA(
        shared_path(*DATA), [MCQAAccuracy(), MCQAPositionalBias()], num_shuffling_runs=3, seed=555, num_samples=ROWS
    )
    assert [item["prompt"] for item in rebuilt.prompt_data()] == [g["prompt"] for g in generations]
    _, again, _ = _run(default_model, num_samples=10)
    assert [g["prompt"] for g in again] == [g["prompt"] for g in generations[:30]]
    assert [g["raw_response"] for g in again] == [g["raw_response"] for g in generations[:30]]
    assert case.evaluate(generations) == scores
