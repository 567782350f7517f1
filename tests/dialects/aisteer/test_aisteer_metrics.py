"""MCQA metrics against independent numpy computations: accuracy's corrected formula, AISteer360's positional
bias (K = the letters observed), calibration."""

from __future__ import annotations

import random

import numpy as np
import pytest

from proctor import Metric
from proctor.dialects.aisteer import MCQAAccuracy, MCQACalibration, MCQAPositionalBias
from tests.support.aisteer_reference import independent_accuracy, independent_bias

pytestmark = pytest.mark.fast

# The reference's toy example (seed-systems.md §3).
RESP = ["A", "B", "A", None, "C", "A"]
REF = ["A", "A", "A", "B", "C", "C"]
QID = ["q1", "q1", "q1", "q2", "q2", "q2"]


def test_toy_example_accuracy():
    out = MCQAAccuracy()(responses=RESP, reference_answers=REF, question_ids=QID)
    assert out["trial_mean"] == pytest.approx(0.6)
    assert out["trial_std"] == pytest.approx(0.5477, abs=1e-4)
    assert out["question_mean"] == pytest.approx(0.5)
    assert out["question_std"] == pytest.approx(0.7071, abs=1e-4)
    assert out["num_valid"] == 5


def test_toy_example_bias_counts_the_letters_observed():
    # The reference's toy example: 0.1778 (seed-systems.md §3) ...
    out = MCQAPositionalBias()(responses=RESP, question_ids=QID)
    assert out["mean"] == pytest.approx(0.1778, abs=1e-4)
    assert (out["mean"], out["std"]) == pytest.approx(independent_bias(RESP, QID))
    # ... and the letters offered change nothing: K is the letters observed, as AISteer360 counts them
    assert MCQAPositionalBias()(responses=RESP, question_ids=QID, num_choices=5) == out
    only_a = MCQAPositionalBias()(responses=["A", "A", "A"], question_ids=["q1", "q2", "q3"], num_choices=4)
    assert only_a["mean"] == 0.0 and only_a["std"] == 0.0 and only_a["position_shares"] == {"A": 1.0}


def test_none_responses_keep_question_ids_aligned():
    # The reference zipped question ids with the filtered outcomes: q1's None shifted q2's votes.
    resp = [None, "A", "B", "B"]
    ref = ["A", "A", "A", "A"]
    qid = ["q1", "q1", "q2", "q2"]
    out = MCQAAccuracy()(responses=resp, reference_answers=ref, question_ids=qid)
    assert out["question_mean"] == pytest.approx(0.5)  # q1 right 1/1, q2 wrong 0/2 (the reference gave 0.0)
    assert (out["trial_mean"], out["trial_std"], out["question_mean"], out["question_std"]) == pytest.approx(
        independent_accuracy(resp, ref, qid)
    )


def test_missing_question_ids_and_empty_responses():
    out = MCQAAccuracy()(responses=["A", "B"], reference_answers=["A", "A"])
    assert out["trial_mean"] == 0.5 and out["question_mean"] is None
    assert MCQAPositionalBias()(responses=[None, None], question_ids=["a", "b"], num_choices=4)["mean"] is None
    assert MCQAPositionalBias()(responses=["A", "B"], num_choices=2)["std"] is None


def test_random_cases_match_independent_computation():
    rng = random.Random(7)
    for _ in range(20):
        n_q, runs, k = rng.randint(1, 8), rng.randint(1, 5), rng.randint(2, 5)
        qid = [f"q{q}" for q in range(n_q) for _ in range(runs)]
        ref = [rng.choice("ABCDE"[:k]) for _ in qid]
        resp = [rng.choice(list("ABCDE"[:k]) + [None]) for _ in qid]
        acc = MCQAAccuracy()(responses=resp, reference_answers=ref, question_ids=qid)
        if any(r is not None for r in resp):
            assert (acc["trial_mean"], acc["trial_std"], acc["question_mean"], acc["question_std"]) == pytest.approx(
                independent_accuracy(resp, ref, qid)
            )
            bias = MCQAPositionalBias()(responses=resp, question_ids=qid, num_choices=k)
            assert (bias["mean"], bias["std"]) == pytest.approx(independent_bias(resp, qid))


def test_bias_counts_every_letter_given_as_aisteer360_does():
    out = MCQAPositionalBias()(responses=["A", "I", "B"], num_choices=2)
    assert out["mean"] == pytest.approx(independent_bias(["A", "I", "B"], [None] * 3)[0]) == pytest.approx(0.0)
    assert out["std"] is None and out["num_valid"] == 3


def test_calibration_ece():
    conf = [0.95, 0.85, 0.55, 0.15, 1.0, None]
    resp = ["A", "B", "A", "C", "A", "A"]
    ref = ["A", "A", "A", "A", "A", "A"]
    out = MCQACalibration()(responses=resp, reference_answers=ref, confidences=conf)
    # bins: [0.9,1.0] {0.95 ok, 1.0 ok}, [0.8,0.9) {0.85 wrong}, [0.5,0.6) {0.55 ok}, [0.1,0.2) {0.15 wrong}
    expected = (2 / 5) * abs(1 - 0.975) + (1 / 5) * 0.85 + (1 / 5) * abs(1 - 0.55) + (1 / 5) * 0.15
    assert out["ece"] == pytest.approx(expected)
    assert out["accuracy"] == pytest.approx(0.6)
    assert out["overconfidence"] == pytest.approx(np.mean([0.95, 0.85, 0.55, 0.15, 1.0]) - 0.6)


def test_metric_base():
    class Length(Metric):
        def compute(self, responses, prompts=None, **kwargs):
            return {"mean": sum(len(r) for r in responses) / len(responses), "unit": self.unit}

    metric = Length(unit="chars")
    assert metric.name == "Length"
    assert metric(responses=["ab", "abcd"]) == {"mean": 3.0, "unit": "chars"}
    with pytest.raises(TypeError):
        Metric()  # abstract
