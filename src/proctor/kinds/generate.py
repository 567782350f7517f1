"""Generation with answer extraction, scored against one or more references."""

from __future__ import annotations

from typing import Sequence

from proctor.core.bounded_regex import RegexTooSlow
from proctor.core.errors import TaskDefinitionError
from proctor.core.model_requests import GenerateRequest, GenerateResult
from proctor.core.task_spec import TaskSpec
from proctor.kinds.base import SampleDetails
from proctor.prompts.builder import PreparedSample
from proctor.scoring.extraction import AnswerExtractor
from proctor.scoring.outcomes import GenerationOutcome


def check_window(spec: TaskSpec, window: int | None, model: str, file: str | None, line: int | None) -> None:
    """``max_tokens`` new tokens leave no room for the prompt in the model's window (or the task's max_length):
    the prompt would be cut to its last token and the model generate past its window. lm-evaluation-harness
    refuses the same (max_gen_toks must be less than the model's max_length)."""
    if window is None:  # a server's model: its window is the server's to enforce
        return
    limit = min(window, spec.max_length or window)
    if spec.generation.max_tokens >= limit:
        which = f"model '{model}' has a {window}-token window" if limit == window else f"max_length is {limit}"
        raise TaskDefinitionError(
            f"asks for up to {spec.generation.max_tokens} new tokens, but {which} (prompt and generation "
            f"together): at most {limit - 1} leave room for a prompt token",
            file=file,
            line=line,
            field="generation.max_tokens",
        )


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
        try:
            answer, parsed = extractor.extract(result.text)
        except RegexTooSlow as exc:  # named as the task's setting, on the row whose answer it met
            raise TaskDefinitionError(
                f"extraction: {exc}", file=prepared.sample.file, row=prepared.sample.row, field="extraction.regex"
            ) from None
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
