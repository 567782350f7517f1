"""Multiple choice by log-likelihood: each choice is scored as a continuation of the prompt."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from proctor.prompts.builder import PreparedSample
from proctor.requests import LoglikelihoodRequest, LoglikelihoodResult
from proctor.scoring.outcomes import ChoiceOutcome
from proctor.spec.task import TaskSpec


def softmax(logprobs: Sequence[float], temperature: float = 1.0) -> list[float]:
    scaled = np.asarray(logprobs, dtype=float) / temperature
    scaled -= scaled.max()
    weights = np.exp(scaled)
    return (weights / weights.sum()).tolist()


class MultipleChoiceKind:
    request_type = "loglikelihood"

    def requests(self, spec: TaskSpec, prepared: PreparedSample, prompt_text: str) -> list[LoglikelihoodRequest]:
        return [LoglikelihoodRequest(prompt_text, spec.target_delimiter + choice) for choice in prepared.choices]

    def outcome(
        self, spec: TaskSpec, prepared: PreparedSample, results: Sequence[LoglikelihoodResult]
    ) -> tuple[ChoiceOutcome, dict]:
        logprobs = tuple(r.logprob for r in results)
        distribution = tuple(softmax(logprobs, spec.choice_temperature))
        outcome = ChoiceOutcome(
            logprobs=logprobs,
            n_tokens=tuple(r.n_tokens for r in results),
            char_lengths=tuple(len(c) for c in prepared.choices),
            gold=prepared.gold,
            is_greedy=tuple(r.is_greedy for r in results),
            distribution=distribution,
        )
        record = {
            "choices": list(prepared.choices),
            "target": list(prepared.gold) if len(prepared.gold) > 1 else prepared.gold[0],
            "logprobs": list(logprobs),
            "n_tokens": list(outcome.n_tokens),
            "is_greedy": list(outcome.is_greedy),
            "distribution": list(distribution),
            "prediction": int(np.argmax(logprobs)),
        }
        return outcome, record
