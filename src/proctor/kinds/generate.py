"""Generation with answer extraction, scored against one or more references."""

from __future__ import annotations

from typing import Sequence

from proctor.core.model_requests import GenerateRequest, GenerateResult
from proctor.core.task_spec import TaskSpec
from proctor.kinds.base import SampleDetails
from proctor.prompts.builder import PreparedSample
from proctor.scoring.extraction import AnswerExtractor
from proctor.scoring.outcomes import GenerationOutcome


class GenerateKind:
    request_type = "generate"

    def __init__(self) -> None:
        self._extractors: dict[int, AnswerExtractor] = {}

    def requests(self, spec: TaskSpec, prepared: PreparedSample, prompt_text: str) -> list[GenerateRequest]:
        g = spec.generation
        return [
            GenerateRequest(
                prompt_text,
                g.max_tokens,
                tuple(g.stop),
                g.temperature,
                g.top_p,
                g.seed,
                g.num_beams,
                g.length_penalty,
                g.no_repeat_ngram_size,
                g.min_tokens,
                spec.max_length,
            )
        ]

    def outcome(
        self, spec: TaskSpec, prepared: PreparedSample, results: Sequence[GenerateResult]
    ) -> tuple[GenerationOutcome, SampleDetails]:
        extractor = self._extractors.setdefault(id(spec), AnswerExtractor(spec.extraction))
        result = results[0]
        answer, parsed = extractor.extract(result.text)
        outcome = GenerationOutcome(result.text, answer, parsed, prepared.references)
        record = {
            "target": list(prepared.references),
            "generation": result.text,
            "finish_reason": result.finish_reason,
            "extracted": answer,
            "parsed": parsed,
            "completion_tokens": result.completion_tokens,
        }
        return outcome, record
