"""Multiple choice by log-likelihood: each choice is scored as a continuation of the prompt."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from proctor.core.model_requests import LoglikelihoodRequest, LoglikelihoodResult
from proctor.core.task_spec import TaskSpec
from proctor.kinds.base import SampleDetails
from proctor.prompts.builder import PreparedSample
from proctor.scoring.outcomes import ChoiceOutcome


def softmax(logprobs: Sequence[float], temperature: float = 1.0) -> list[float]:
    scaled = np.asarray(logprobs, dtype=float) / temperature
    scaled -= scaled.max()
    weights = np.exp(scaled)
    probabilities: list[float] = (weights / weights.sum()).tolist()
    return probabilities


def choice_weights(spec: TaskSpec, logprobs: Sequence[float], n_tokens: Sequence[int]) -> tuple[float, ...]:
    """The softmax inputs: log-probs, per token if asked, divided by the choice temperature."""
    if spec.choice_normalization == "tokens":
        logprobs = [lp / max(n, 1) for lp, n in zip(logprobs, n_tokens)]
    elif spec.choice_normalization == "sqrt_tokens":
        logprobs = [lp / math.sqrt(max(n, 1)) for lp, n in zip(logprobs, n_tokens)]
    return tuple(float(lp) / spec.choice_temperature for lp in logprobs)


def choice_outcome(
    spec: TaskSpec,
    prepared: PreparedSample,
    logprobs: Sequence[float],
    n_tokens: Sequence[int],
    is_greedy: Sequence[bool],
) -> tuple[ChoiceOutcome, SampleDetails]:
    logprobs = tuple(float(x) for x in logprobs)
    weights = choice_weights(spec, logprobs, n_tokens)
    distribution = tuple(softmax(weights))
    outcome = ChoiceOutcome(
        logprobs=logprobs,
        n_tokens=tuple(n_tokens),
        char_lengths=tuple(len(c) for c in prepared.choices),
        gold=prepared.gold,
        is_greedy=tuple(is_greedy),
        distribution=distribution,
        weights=weights,
    )
    prediction = int(np.argmax(weights))
    if not prepared.gold:
        target = None
    else:
        target = list(prepared.gold) if len(prepared.gold) > 1 else prepared.gold[0]
    record = {
        "choices": list(prepared.choices),
        "target": target,
        "logprobs": list(logprobs),
        "n_tokens": list(outcome.n_tokens),
        "is_greedy": list(outcome.is_greedy),
        "distribution": list(distribution),
        "prediction": prediction,
        "correct": (prediction in prepared.gold) if prepared.gold else None,
    }
    if spec.choice_normalization != "none" or spec.choice_temperature != 1.0:
        record["weights"] = list(weights)
    return outcome, record


class MultipleChoiceKind:
    request_type = "loglikelihood"

    def requests(self, spec: TaskSpec, prepared: PreparedSample, prompt_text: str) -> list[LoglikelihoodRequest]:
        return [
            LoglikelihoodRequest(prompt_text, spec.target_delimiter + choice, spec.move_whitespace, spec.max_length)
            for choice in prepared.choices
        ]

    def outcome(
        self, spec: TaskSpec, prepared: PreparedSample, results: Sequence[LoglikelihoodResult]
    ) -> tuple[ChoiceOutcome, SampleDetails]:
        return choice_outcome(
            spec, prepared, [r.logprob for r in results], [r.n_tokens for r in results], [r.is_greedy for r in results]
        )
