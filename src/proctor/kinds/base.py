"""The kind-handler protocol and the built-in kinds by name."""

from __future__ import annotations

from typing import Any, Protocol, Sequence

from proctor.core.task_spec import TaskSpec
from proctor.prompts.builder import PreparedSample

# what a sample's record in samples.jsonl holds beyond its outcome (the reply, the extracted answer, ...)
SampleDetails = dict[str, Any]


class KindHandler(Protocol):
    """Turns a prepared sample into requests (given the rendered prompt) and results into an outcome."""

    request_type: str  # "loglikelihood" | "generate" | "rolling_loglikelihood"

    def requests(self, spec: TaskSpec, prepared: PreparedSample, prompt_text: str) -> list[Any]: ...

    def outcome(
        self, spec: TaskSpec, prepared: PreparedSample, results: Sequence[Any]
    ) -> tuple[Any, SampleDetails]: ...
