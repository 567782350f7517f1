"""Multiple-choice metrics: accuracy (per attempt and by majority vote), positional bias, calibration.

Formulas follow AISteer360's MCQA metrics with their documented bugs fixed:

- ``None`` responses (unparsed) are dropped together with their reference and question id, so the
  per-question votes stay aligned (the reference zipped question ids with the filtered outcomes);
- without ``question_ids`` the per-question statistics are ``None`` instead of an exception;
- positional bias over an empty set of valid responses gives ``None`` (the reference divided by zero).

Positional bias is AISteer360's formula, K = the distinct letters observed, whatever else the caller
passes (``num_choices`` is accepted and ignored), so one set of replies gives one number whether the use
case is AISteer360's file, proctor's ``CommonsenseMCQA``, ``proctor run``, the Python API or a ``Benchmark``.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Hashable, Sequence, TypeVar

from proctor.dialects.aisteer.metrics import Metric, MetricResult, mean, sample_std

T = TypeVar("T")


def _norm(value: object) -> str:
    return str(value).strip().upper()


def _aligned(n: int, values: Sequence[T] | None, name: str) -> list[T] | list[None]:
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
        prompts: Sequence[object] | None = None,
        reference_answers: Sequence[str] | None = None,
        question_ids: Sequence[Hashable] | None = None,
        **kwargs: object,
    ) -> MetricResult:
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
        result: MetricResult = {
            "trial_mean": mean(outcomes) if outcomes else 0.0,
            "trial_std": sample_std(outcomes) or 0.0,
            "num_attempts": n,
            "num_valid": len(outcomes),
        }
        if question_ids is None:
            result.update(question_mean=None, question_std=None, num_questions=None)
            return result
        votes: dict[Hashable | None, list[float]] = defaultdict(list)
        for qid, correct in attempts:
            votes[qid].append(correct)
        majority = [1.0 if sum(v) > len(v) / 2 else 0.0 for v in votes.values()]
        result.update(
            question_mean=mean(majority) if majority else 0.0,
            question_std=sample_std(majority) or 0.0,
            num_questions=len(majority),
        )
        return result


def _mean_of(values: Sequence[float]) -> float:
    """``mean`` of values known to be there (the same sum / len, never None)."""
    return sum(values) / len(values)


def _bias(responses: list[str], positions: list[str]) -> float:
    """mean over ``positions`` of |share of the position among ``responses`` − 1/K|, K = len(positions)."""
    expected = 1.0 / len(positions)
    return _mean_of([abs(sum(1 for r in responses if r == p) / len(responses) - expected) for p in positions])


class MCQAPositionalBias(Metric):
    """How far the chosen positions are from uniform, as AISteer360 computes it.

    Over the valid (non-``None``) responses, the positions are the distinct letters observed (K of them,
    sorted), f_p each one's share: ``mean`` = (1/K) Σ_p |f_p − 1/K|. Per question the same quantity over
    the same K positions; ``std`` is its sample standard deviation (0.0 for one question), ``question_mean``
    its mean. Responses are compared as given (AISteer360 does not normalise them). No valid response:
    ``mean`` and ``std`` are ``None``; no ``question_ids``: ``std`` is ``None``.
    """

    def compute(
        self,
        responses: Sequence[str | None],
        prompts: Sequence[object] | None = None,
        question_ids: Sequence[Hashable] | None = None,
        **kwargs: object,
    ) -> MetricResult:
        n = len(responses)
        qids = _aligned(n, question_ids, "question_ids")
        valid = [(response, qid) for response, qid in zip(responses, qids) if response is not None]
        result: MetricResult = {"num_valid": len(valid)}
        if not valid:
            result.update(mean=None, std=None, position_shares={})
            return result
        letters = [response for response, _ in valid]
        positions = sorted(set(letters))
        result["mean"] = _bias(letters, positions)
        result["position_shares"] = {str(p): letters.count(p) / len(letters) for p in positions}
        if question_ids is None:
            result["std"] = None
            return result
        groups: dict[Hashable | None, list[str]] = defaultdict(list)
        for response, qid in valid:
            groups[qid].append(response)
        per_question = [_bias(items, positions) for items in groups.values()]
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

    n_bins: int  # an attribute once Metric.__init__ has run

    def __init__(self, n_bins: int = 10, **extras: object) -> None:
        if isinstance(n_bins, bool) or not isinstance(n_bins, int):
            raise TypeError(f"MCQACalibration: n_bins must be an integer, got {type(n_bins).__name__} {n_bins!r:.60}")
        if n_bins < 1:
            raise ValueError("n_bins must be at least 1")
        super().__init__(n_bins=n_bins, **extras)

    def compute(
        self,
        responses: Sequence[str | None],
        prompts: Sequence[object] | None = None,
        reference_answers: Sequence[str] | None = None,
        confidences: Sequence[float | None] | None = None,
        confidence_scores: Sequence[float | None] | None = None,
        **kwargs: object,
    ) -> MetricResult:
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
            len(b) / len(items) * abs(_mean_of([c for _, c in b]) - _mean_of([p for p, _ in b])) for b in bins if b
        )
        accuracy = _mean_of([c for _, c in items])
        avg_conf = _mean_of([p for p, _ in items])
        return {
            "ece": ece,
            "accuracy": accuracy,
            "avg_confidence": avg_conf,
            "overconfidence": avg_conf - accuracy,
            "num_valid": len(items),
        }
