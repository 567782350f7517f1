"""CommonsenseMCQA's per-reply confidence (letter probabilities) and MCQACalibration's ECE, checked
against an independent computation, on every kind of target."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from proctor.dialects.aisteer import CommonsenseMCQA, MCQAAccuracy, MCQACalibration, SteeringPipeline, TokenBias
from tests.support.aisteer_reference import independent_ece

ROWS = [
    {
        "id": f"q{i}",
        "question": f"Which word is number {i}?",
        "answer": f"w{i}",
        "choices": [f"w{i}", "apple", "river", "stone"][: 3 + i % 2],
        # A large boost per letter makes the random tiny model answer with one; its spread differs by row.
        "boost": {letter: 60.0 + 4.0 * ((k + i) % 4) for k, letter in enumerate("ABCD")},
    }
    for i in range(8)
]
FIXED_BOOST = {"A": 60.0, "B": 66.0, "C": 63.0, "D": 68.0}


def _case():
    return CommonsenseMCQA(ROWS, [MCQAAccuracy(), MCQACalibration()], num_shuffling_runs=3, seed=4)


def independent_letter_probs(model, tokenizer, prompt, n, boost):
    """Softmax over the whole vocabulary (the boost on both first tokens of a letter, as TokenBias
    does), the bare and the spaced letter added, then normalised over the offered letters."""
    ids = tokenizer(prompt, add_special_tokens=False).input_ids
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, -1].double()
    tokens = {
        letter: [tokenizer(prompt + variant + letter, add_special_tokens=False).input_ids[-1] for variant in ("", " ")]
        for letter in "ABCD"[:n]
    }
    for letter, pair in tokens.items():
        logits[pair] += boost[letter]
    probs = torch.softmax(logits, dim=0)
    mass = {letter: float(probs[pair].sum()) for letter, pair in tokens.items()}
    return {letter: value / sum(mass.values()) for letter, value in mass.items()}


def test_confidences_and_ece_match_an_independent_computation(tiny_model):
    case = _case()
    boost = {"TokenBias": {"bias": "boost"}}
    with SteeringPipeline(tiny_model, [TokenBias()]) as pipeline:
        generations = case.generate(pipeline, gen_kwargs={"max_new_tokens": 1}, runtime_overrides=boost, max_retries=0)
    answered = [g for g in generations if g["response"] is not None]
    assert len(answered) == len(generations) and len({g["response"] for g in answered}) > 1
    rows = {row["id"]: row for row in ROWS}
    for g in generations:
        expected = independent_letter_probs(
            tiny_model.model,
            tiny_model.tokenizer,
            g["adapted_prompt"],
            g["num_choices"],
            rows[g["question_id"]]["boost"],
        )
        assert g["letter_probs"] == pytest.approx(expected, abs=1e-4)
        assert g["confidence"] == pytest.approx(expected[g["response"]], abs=1e-4)
    assert len({round(g["confidence"], 3) for g in generations}) > 3

    # One fixed boost: the same letter probabilities on the pipeline and on the pipeline as a
    # proctor Model (through the engine: packed log-likelihood requests).
    with SteeringPipeline(tiny_model, [TokenBias(bias=FIXED_BOOST)]) as pipeline:
        direct = _case().generate(pipeline, gen_kwargs={"max_new_tokens": 1}, max_retries=0)
        through_engine = _case().generate(pipeline.as_model(), gen_kwargs={"max_new_tokens": 1}, max_retries=0)
    assert [g["response"] for g in through_engine] == [g["response"] for g in direct]
    for a, b in zip(through_engine, direct):
        assert a["letter_probs"] == pytest.approx(b["letter_probs"], abs=1e-4)

    scores = case.evaluate(generations)["MCQACalibration"]
    conf = [g["confidence"] for g in answered]
    correct = [g["response"] == g["reference_answer"] for g in answered]
    assert scores["ece"] == pytest.approx(independent_ece(conf, correct), abs=1e-9)
    assert scores["accuracy"] == pytest.approx(np.mean(correct)) and scores["avg_confidence"] == pytest.approx(
        np.mean(conf)
    )
    assert scores["num_valid"] == len(answered) and 0.0 < scores["ece"] < 1.0


def test_unanswered_replies_have_no_confidence_and_scoring_can_be_off(tiny_model):
    generations = _case().generate(tiny_model, gen_kwargs={"max_new_tokens": 2}, max_retries=0)
    assert all(
        g["response"] is None and g["confidence"] is None for g in generations
    )  # the bare tiny model prints no letter
    assert all(sum(g["letter_probs"].values()) == pytest.approx(1.0) for g in generations)
    assert _case().evaluate(generations)["MCQACalibration"]["ece"] is None
    off = CommonsenseMCQA(ROWS, [MCQAAccuracy()], num_shuffling_runs=1, seed=4, score_letters=False)
    assert "confidence" not in off.generate(tiny_model, gen_kwargs={"max_new_tokens": 2}, max_retries=0)[0]
