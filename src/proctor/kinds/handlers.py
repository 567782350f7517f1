"""The built-in kinds' handlers, by the kind a task spec names."""

from __future__ import annotations

from proctor.kinds.base import KindHandler
from proctor.kinds.generate import GenerateKind
from proctor.kinds.multiple_choice import MultipleChoiceKind
from proctor.kinds.perplexity import PerplexityKind

HANDLERS: dict[str, type[KindHandler]] = {
    "multiple_choice": MultipleChoiceKind,
    "generate": GenerateKind,
    "perplexity": PerplexityKind,
}


def kind_handler(kind: str) -> KindHandler:
    return HANDLERS[kind]()
