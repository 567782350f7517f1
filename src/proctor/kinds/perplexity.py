"""Perplexity by rolling log-likelihood over whole texts."""

from __future__ import annotations

from typing import Sequence

from proctor.core.model_requests import RollingLoglikelihoodRequest, RollingLoglikelihoodResult
from proctor.core.task_spec import TaskSpec
from proctor.kinds.base import SampleDetails
from proctor.prompts.builder import PreparedSample
from proctor.scoring.outcomes import PerplexityOutcome


class PerplexityKind:
    request_type = "rolling_loglikelihood"

    def requests(self, spec: TaskSpec, prepared: PreparedSample, prompt_text: str) -> list[RollingLoglikelihoodRequest]:
        p = spec.perplexity
        return [RollingLoglikelihoodRequest(prepared.text or "", p.window, p.stride)]

    def outcome(
        self, spec: TaskSpec, prepared: PreparedSample, results: Sequence[RollingLoglikelihoodResult]
    ) -> tuple[PerplexityOutcome, SampleDetails]:
        text = prepared.text or ""
        result = results[0]
        outcome = PerplexityOutcome(
            result.logprob, result.n_tokens, len(text.split()), len(text.encode("utf-8")), len(text.strip().split(" "))
        )
        record = {
            "logprob": result.logprob,
            "n_tokens": result.n_tokens,
            "n_words": outcome.n_words,
            "n_bytes": outcome.n_bytes,
            "n_space_words": outcome.n_space_words,
        }
        return outcome, record
