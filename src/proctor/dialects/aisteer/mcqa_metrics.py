"""Multiple-choice metrics: accuracy (per attempt and by majority vote), positional bias, calibration.

Formulas follow AISteer360's MCQA metrics with their documented bugs fixed:

- ``None`` responses (unparsed) are dropped together with their reference and question id, so the
  per-question votes stay aligned (the reference zipped question ids with the filtered outcomes);
- without ``question_ids`` the per-question statistics are ``None`` instead of an exception;
- positional bias counts over the letters *offered* (``num_choices``) rather than the distinct
  letters that happen to be observed, and an empty set of valid responses gives ``None``.
"""

from __future__ import annotations

import bisect

import string
from collections import defaultdict
from typing import Any, Sequence

from proctor.dialects.aisteer.metrics import Metric, mean, sample_std

LETTERS = string.ascii_uppercase


def _norm(value: Any) -> str:
    return str(value).strip().upper()


def _aligned(n: int, values: Sequence[Any] | None, name: str) -> list[Any]:
    if values is None:
        return [None] * n
    values = list(values)
    if len(values) != n:
        raise ValueError(f"{name} has {len(values)} items but there are {n} responses")
    return values


class MCQAAccuracy(Metric):
    """Attempt-level accuracy (mean, sample std) and question-level majority-vote accuracy.

    A question counts as correct when strictly more than half of its valid attempts are correct.
    """

    def compute(
        self,
        responses: Sequence[str | None],
        prompts: Sequence[Any] | None = None,
        reference_answers: Sequence[str] | None = None,
        question_ids: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        if reference_answers is None:
            raise ValueError("MCQAAccuracy needs reference_answers")
        n = len(responses)
        references = _aligned(n, reference_answers, "reference_answers")
        qids = _aligned(n, question_ids, "question_ids")
        attempts = [
            (qid, float(_norm(response) == _norm(reference)))
            for response, reference, qid in zip(responses, references, qids)
            if response is not None
        ]
        outcomes = [correct for _, correct in attempts]
        result: dict[str, Any] = {
            "trial_mean": mean(outcomes) if outcomes else 0.0,
            "trial_std": sample_std(outcomes) or 0.0,
            "num_attempts": n,
            "num_valid": len(outcomes),
        }
        if question_ids is None:
            result.update(question_mean=None, question_std=None, num_questions=None)
            return result
        votes: dict[Any, list[float]] = defaultdict(list)
        for qid, correct in attempts:
            votes[qid].append(correct)
        majority = [1.0 if sum(v) > len(v) / 2 else 0.0 for v in votes.values()]
        result.update(
            question_mean=mean(majority) if majority else 0.0,
            question_std=sample_std(majority) or 0.0,
            num_questions=len(majority),
        )
        return result


def _offered(response_count: int, num_choices: int | Sequence[int] | None, valid_letters: list[str]) -> list[int]:
    """Number of letters offered to each response."""
    if num_choices is None:  # not told: letters A..(highest letter seen)
        highest = max((LETTERS.index(v) for v in valid_letters if v in LETTERS), default=-1)
        return [highest + 1] * response_count
    if isinstance(num_choices, int):
        return [num_choices] * response_count
    return [int(k) for k in _aligned(response_count, num_choices, "num_choices")]


def _bias(letters: list[str], offered: list[int], width: int) -> float:
    """(1/P) Σ_p |observed share of p − expected share of p| over the P = width positions."""
    total = len(letters)
    score = 0.0
    for p in range(width):
        observed = sum(1 for letter in letters if letter == LETTERS[p]) / total
        expected = sum(1.0 / k for k in offered if p < k) / total
        score += abs(observed - expected)
    return score / width


class MCQAPositionalBias(Metric):
    """How far the chosen positions are from uniform over the letters offered.

    ``mean`` = (1/K) Σ_p |f_p − 1/K| over all valid responses; ``std`` is the sample std of the same
    quantity computed per question. With varying numbers of choices the expected share of each
    position is averaged over the responses. Responses outside the offered letters count as invalid.
    """

    def compute(
        self,
        responses: Sequence[str | None],
        prompts: Sequence[Any] | None = None,
        question_ids: Sequence[Any] | None = None,
        num_choices: int | Sequence[int] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        n = len(responses)
        qids = _aligned(n, question_ids, "question_ids")
        normalised = [_norm(r) if r is not None else None for r in responses]
        offered = _offered(n, num_choices, [r for r in normalised if r is not None])
        valid = [
            (letter, k, qid)
            for letter, k, qid in zip(normalised, offered, qids)
            if letter is not None and letter in LETTERS[:k]
        ]
        result: dict[str, Any] = {"num_valid": len(valid), "num_out_of_range": sum(r is not None for r in normalised) - len(valid)}
        if not valid:
            result.update(mean=None, std=None, position_shares={})
            return result
        width = max(k for _, k, _ in valid)
        letters = [v[0] for v in valid]
        result["mean"] = _bias(letters, [v[1] for v in valid], width)
        result["position_shares"] = {LETTERS[p]: letters.count(LETTERS[p]) / len(letters) for p in range(width)}
        if question_ids is None:
            result["std"] = None
            return result
        groups: dict[Any, list[tuple[str, int]]] = defaultdict(list)
        for letter, k, qid in valid:
            groups[qid].append((letter, k))
        per_question = [_bias([g[0] for g in items], [g[1] for g in items], width) for items in groups.values()]
        result["std"] = sample_std(per_question) or 0.0
        result["question_mean"] = mean(per_question)
        return result


class MCQACalibration(Metric):
    """Expected calibration error over equal-width confidence bins (the last bin is closed).

    Needs ``confidence_scores`` (AISteer360's name; ``confidences`` is accepted too: the
    probability given to the chosen answer) beside ``responses`` and ``reference_answers``; items
    with no response or no confidence are dropped. ``CommonsenseMCQA`` supplies them
    (``score_letters``, on by default). Bin edges are AISteer360's (``k * (1 / n_bins)``, as
    ``numpy.linspace`` makes them), so a confidence on an edge lands in the same bin.
    """

    def __init__(self, n_bins: int = 10, **extras: Any) -> None:
        if n_bins < 1:
            raise ValueError("n_bins must be at least 1")
        super().__init__(n_bins=n_bins, **extras)

    def compute(
        self,
        responses: Sequence[str | None],
        prompts: Sequence[Any] | None = None,
        reference_answers: Sequence[str] | None = None,
        confidences: Sequence[float | None] | None = None,
        confidence_scores: Sequence[float | None] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        if confidences is None:
            confidences = confidence_scores
        if reference_answers is None or confidences is None:
            raise ValueError("MCQACalibration needs reference_answers and confidence_scores (or confidences)")
        n = len(responses)
        references = _aligned(n, reference_answers, "reference_answers")
        confs = _aligned(n, confidences, "confidences")
        items = [
            (float(c), float(_norm(r) == _norm(ref)))
            for r, ref, c in zip(responses, references, confs)
            if r is not None and c is not None
        ]
        if not items:
            return {"ece": None, "accuracy": None, "avg_confidence": None, "overconfidence": None, "num_valid": 0}
        bins: list[list[tuple[float, float]]] = [[] for _ in range(self.n_bins)]
        inner_edges = [k * (1.0 / self.n_bins) for k in range(1, self.n_bins)]
        for conf, correct in items:
            if not 0.0 <= conf <= 1.0:
                raise ValueError(f"confidence {conf} is outside [0, 1]")
            bins[bisect.bisect_right(inner_edges, conf)].append((conf, correct))
        ece = sum(
            len(b) / len(items) * abs(mean([c for _, c in b]) - mean([p for p, _ in b])) for b in bins if b
        )
        accuracy = mean([c for _, c in items])
        avg_conf = mean([p for p, _ in items])
        return {
            "ece": ece,
            "accuracy": accuracy,
            "avg_confidence": avg_conf,
            "overconfidence": avg_conf - accuracy,
            "num_valid": len(items),
        }
