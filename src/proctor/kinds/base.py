"""A loaded task (spec + where it came from) and the kind handlers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence

from proctor.prompts.builder import PreparedSample
from proctor.core.task_spec import TaskSpec


@dataclass(frozen=True)
class Task:
    """A validated task and its origin. ``lines`` maps field names to YAML lines for errors."""

    spec: TaskSpec
    file: Path | None
    base_dir: Path
    dialect: str = "native"
    line: int | None = None
    lines: dict[str, int] = field(default_factory=dict, compare=False, hash=False)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def where(self) -> str:
        location = str(self.file) if self.file else "<python>"
        return f"{location}:{self.line}" if self.line else location


class KindHandler(Protocol):
    """Turns a prepared sample into requests (given the rendered prompt) and results into an outcome."""

    request_type: str  # "loglikelihood" | "generate" | "rolling_loglikelihood"

    def requests(self, spec: TaskSpec, prepared: PreparedSample, prompt_text: str) -> list[Any]: ...

    def outcome(self, spec: TaskSpec, prepared: PreparedSample, results: Sequence[Any]) -> tuple[Any, dict]: ...


def kind_handler(kind: str) -> KindHandler:
    from proctor.kinds.generate import GenerateKind
    from proctor.kinds.multiple_choice import MultipleChoiceKind
    from proctor.kinds.perplexity import PerplexityKind

    return {"multiple_choice": MultipleChoiceKind, "generate": GenerateKind, "perplexity": PerplexityKind}[kind]()
